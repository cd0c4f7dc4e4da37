//! AES-GCM with VAES and VPCLMULQDQ on 512-bit vectors (AVX-512 F/BW/VL).
//!
//! # The bulk loop
//!
//! Each iteration takes 16 blocks as four 512-bit vectors of four blocks. The AES rounds
//! of the four counter vectors are interleaved with the GHASH of 16 ciphertext blocks:
//! after each of the first four rounds, one vector of ciphertext is multiplied lane by
//! lane with `H^16..H^13`, `H^12..H^9`, `H^8..H^5` or `H^4..H^1` (the key's power table is
//! laid out highest first so these are four plain loads), and the products of all 16
//! blocks are summed unreduced and reduced once per iteration. On Intel, VAES runs on the
//! vector ALU ports and VPCLMULQDQ on the shuffle port, so with the work interleaved the
//! AES units, which set the speed limit, stay busy. On AMD Zen 4 the multiplies take the
//! AES units' issue slots, so there the kernel spends fewer of them (Karatsuba products,
//! the running hash folded rather than multiplied: `Tuning::save_multiplies`); so does
//! Intel's Sapphire Rapids generation, where that measured 1-4% faster too.
//! Decryption hashes the ciphertext it is about to decrypt; encryption hashes the output of
//! the previous iteration and the last 16 blocks after the loop, and so does AES-128
//! decryption on Intel's AVX-512 cores with the ciphertext (`Tuning::open_hashes_late`).
//!
//! On AMD Zen 4 and 5 and Intel's AVX-512 cores (`Tuning::pair_reduction`), long AES-128
//! messages reduce once per two iterations: the first 16 blocks of a pair are multiplied by
//! `H^32..H^17`, the next by `H^16..H^1`, and the running hash enters only the first of the
//! two, so that the chain from one reduction to the next (reduce, sum the lanes, add to a
//! block, multiply, sum, reduce) has two iterations of AES to hide behind instead of one.
//! Measured on Zen 5 (family 0x1a model 2) with independent chains: 512-bit `VAESENC` two
//! per cycle, latency 4; `VPCLMULQDQ` of any width one every other cycle, latency 5, on a
//! pipe of its own (32 `VAESENC` and 8 `VPCLMULQDQ` take 16 cycles, the AES alone);
//! `VPSHUFB` shares the AES pipes, plain XORs do not. The 14 multiplies of an iteration
//! thus need 28 cycles against AES-128's 22: there the multiplier, and the chain through
//! it, set the pace.
//!
//! On Zen 4 (family 0x19 model 0x11), measured the same way (independent chains, `asm!`):
//! 512-bit `VAESENC` one per cycle, latency 4 (so the four chains of an iteration keep
//! it busy); a 512-bit `VPCLMULQDQ` alone one every other cycle, and in a mix with the
//! AES it takes exactly one `VAESENC` slot (40 `VAESENC` and 13 `VPCLMULQDQ`: 53
//! cycles); `VPSHUFB`, `VPSHUFD`, `VPTERNLOGD`, `VSHUFI64X2`, `VPERMQ`, `VPALIGNR`,
//! `VPUNPCKLQDQ`, 256-bit inserts and extracts, XORs, loads and stores run beside the AES
//! for free at the loop's density. So 16 blocks cost at least 40 + 13 cycles for
//! AES-128 in pairs and 56 + 14 for AES-256, against 44 and 59 measured for our CTR
//! loop (`clock-probe`): at most 0.84 and 0.85 of CTR, before any dependency. The loops
//! run at 64 and 82 cycles per 16 blocks (0.70 and 0.72 of CTR in cycles), about 11
//! cycles above that count in both.
//!
//! Those cycles are the loop's other vector uops. Beside only the AES they run free, but
//! in the loop each costs time: taken out or added one kind at a time (timing only,
//! wrong tags; AES-128 seal at 16 KiB, TSC ticks per call, fastest of 300 batches of
//! eight, alternated, turned into core cycles per 16 blocks from 62.6): the four middle
//! products -5.8, all twelve products -11.1, the pair's reduction -3.7 (per 16 blocks),
//! the running hash's fold into the next block -4.1, the four byte swaps of the hash
//! input -2.9, and eight added XORs +2.3. So about 1 cycle a multiply, 0.3 an XOR or
//! three-way XOR and 0.7 a shuffle: 40 + 13 + 0.3 x 33 (eight uops a step that CTR has
//! too, 25 for the hash) = 62.9, which is the loop. For 0.70 of the `speed` tool's CTR
//! (41.7 cycles) AES-128 would need 59.6, which this count does not reach with three
//! products a block; the cuts found are small (see [`middle_factors`] and [`KaraSum`]).
//!
//! Tried on that Zen 5 and not kept (TSC ticks per 16 KiB call, alternated in one
//! process with aws-lc-rs as a control):
//! - A pair as one pass of 32 blocks (eight AES chains, enough for two `VAESENC` a cycle
//!   at a latency of 4, rather than four chains a call), with the pair's 32 blocks of
//!   ciphertext hashed in the next pass: seal AES-128 2057-2099 -> 2138-2194, AES-256
//!   (paired too) 2347-2369 -> 2629-2659; open no faster (AES-256 slower). A first
//!   version that byte-swapped only half its hash input looked 7% faster: the
//!   `VPSHUFB`s were what it saved.
//! - Which is the cost of the byte swap of the hash input, four `VPSHUFB` an iteration on
//!   the AES pipes: replaced by `VPSHUFD` (a wrong hash, timing only), AES-128 seal 4% and
//!   AES-256 seal 7% faster. Every other full byte reversal measured there also shares
//!   those pipes (`VPERMB`, `VPERMI2B`, `VPMULTISHIFTQB`, `VGF2P8AFFINEQB`, and the
//!   rotates `VPROLD`/`VPSHLDW` that a shift-based one would take); only whole-word
//!   shuffles (`VPSHUFD`, `VPSHUFLW`/`HW`) and `VPUNPCKLBW` run beside the AES. A
//!   reversal built from those and 16-bit shifts (`VPSLLW`, `VPSRLW`, OR, `VPSHUFLW`,
//!   `VPSHUFHW`, `VPSHUFD`: six uops beside the AES for one on its pipes) was correct but
//!   no faster: AES-256 seal 3.5% slower at 16 KiB, the rest within 2% either way.
//! - Reading the previous ciphertext back from memory instead of keeping it in registers
//!   (AES-256 seal): 2141-2161 -> 2265-2291.
//! - The AES software-pipelined for eight chains at one step's size: each iteration ran
//!   the last seven rounds of its own 16 blocks beside the first seven of the next
//!   iteration's (same products, same reduction): AES-256 seal 2411 -> 2541 at 16 KiB,
//!   4 KiB 5% slower. A stand-alone model of the loop in `asm!` (round keys and powers
//!   loaded as the kernel loads them, the carry folded into the next block) agreed: no
//!   faster with eight chains than with four, with or without the loop-carried
//!   reduction; only a simpler model (every operand in registers, no loads or stores)
//!   ran a fifth faster. Loads are one limit there: a 512-bit load or store issues once
//!   a cycle (256-bit loads and 128-bit broadcasts twice), and the AES-256 loop reloads
//!   its 14 spilled round keys every iteration.
//! - So the round keys broadcast again from their 128-bit copies at each use (one
//!   broadcast load a round instead of the spilled 512-bit copy): 16 KiB seal 2-7%
//!   slower, AES-256 open up to 9%, 1350 B within 2%. Nor did freeing registers for
//!   them help: the Karatsuba factors `powers.hx` derived from `powers.h` in every
//!   iteration (two uops each beside the AES), 2-10% slower.
//! - The loop-carried chain cut (each iteration's reduced hash dropped, a wrong tag,
//!   timing only): AES-128 seal (in pairs) 2% faster, AES-256 seal no faster. The
//!   chain is not what holds AES-256 back; and AES-256 in pairs, measured again, seals
//!   1% faster and opens 1-5% slower from 2 KiB to 16 KiB.
//!
//! Reduction happens in all four lanes at once (two multiplies, two shuffles, two
//! three-way XORs, see `clmul` for the algebra), after which the four lanes are XORed into
//! one 128-bit value: linearity lets the lane sum wait until after the reduction.
//!
//! # Counters
//!
//! The 16 counter blocks of an iteration are built once, whitened with round key 0, and
//! then stepped from one iteration to the next with one XOR per vector (see `counters`):
//! no add, no byte shuffle and no whitening XOR in the loop. The last round takes
//! `round key ^ input` as its key, which yields `E(ctr) ^ input` directly.
//!
//! # Tails and associated data
//!
//! Fewer than 16 blocks at the end are loaded and stored with byte masks (no copies, no
//! byte loops): up to four vectors, the last one partial, each block multiplied by its own
//! power `H^n ... H^1` with a single reduction. Masked-off bytes load as zero, which is
//! exactly GHASH's padding; on encryption the keystream beyond the message is masked off
//! before hashing. The associated data goes through the same 16-blocks-per-reduction
//! loop (in Karatsuba form on AMD) and masked tail, without the AES.

use super::clmul::{bswap, bswap_mask};
use super::counters::Counters;
use super::{
    HPowers, HighPowers, HwKey, InOut, ShortIn256Bits, Vaes512Token, lengths_block, load_j0,
    load16, store16, tag_from, tag_mask_now, unshared, vaes256_gcm,
};
use core::arch::x86_64::*;

const VECS: usize = 4;
const CHUNK: usize = 16 * 4 * VECS;

kernel_entry_points!(
    Vaes512Token,
    "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1",
    tuned
);

/// GHASH of `data` (zero-padded) continuing from `x` (mirrored form), 16 blocks per
/// reduction.
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
pub(crate) fn ghash(h: &HPowers, t: Vaes512Token, x: __m128i, data: &[u8]) -> __m128i {
    let powers = Powers {
        h: powers16(h),
        ..Powers::unused()
    };
    ghash_with::<false>(h, &powers, t, x, data)
}

/// [`ghash()`] with the powers loaded, in Karatsuba form when `KARA` (see [`hash16_kara`]).
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
fn ghash_with<const KARA: bool>(
    h: &HPowers,
    powers: &Powers,
    _t: Vaes512Token,
    mut x: __m128i,
    data: &[u8],
) -> __m128i {
    let mut chunks = data.chunks_exact(CHUNK);
    for chunk in &mut chunks {
        let v: [__m512i; VECS] = core::array::from_fn(|i| {
            // SAFETY: `chunk` has CHUNK = 64 * VECS bytes.
            unsafe { _mm512_loadu_si512(chunk.as_ptr().add(64 * i).cast()) }
        });
        x = if KARA {
            hash16_kara(powers, x, &v)
        } else {
            hash16(&powers.h, x, &v)
        };
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return x;
    }
    let mut v = [_mm512_setzero_si512(); VECS];
    for (i, vi) in v.iter_mut().enumerate() {
        let m = byte_mask(rest.len(), i);
        if m != 0 {
            // SAFETY: the mask covers only bytes inside `rest`; masked-off bytes are not
            // accessed (AVX-512 suppresses faults on them) and the pointer is not
            // dereferenced past the slice.
            *vi = unsafe { _mm512_maskz_loadu_epi8(m, rest.as_ptr().wrapping_add(64 * i).cast()) };
        }
    }
    hash_tail(h, x, &v, rest.len().div_ceil(16), None)
}

#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn gcm<const NR: usize, const ENC: bool, const SAVE_MULS: bool>(
    key: &HwKey,
    t: Vaes512Token,
    j0: u128,
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let j0 = load_j0(j0);
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    if na <= SHORT_AAD_BLOCKS && nc <= SHORT_MSG_BLOCKS && na + nc < HPowers::COUNT {
        // SAFETY: forwarded contract; the sizes are checked above.
        return unsafe { short::<NR, ENC>(key, j0, aad, io) };
    }
    // E(J0) is independent of everything else; out-of-order execution overlaps it, if it
    // is issued first (see `tag_mask_now`).
    let tag_mask = tag_mask_now::<NR>(&key.aes.rk, j0);
    let x = ghash_with::<SAVE_MULS>(&key.h, &Powers::new(key), t, _mm_setzero_si128(), aad);
    let ctr = _mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1));
    // A message that ends in a tail of up to 15 blocks hashes the lengths block in the
    // tail's reduction rather than in one more after it (see `bulk_with`). Measured on an
    // AMD EPYC Zen 4 (family 25 model 17), TSC ticks per call, fastest of 10000 batches
    // of eight, several runs alternated, AD 13 bytes, seal / open: AES-256 240 B 182-188
    // / 191-201 -> 156-159 / 149-152, 384 B 234-237 / 214 -> 204-217 / 188-195, 1350 B
    // 464-474 / 422-425 -> 438-448 / 403-409; AES-128 240 B 139-143 / 143-149 -> 130-136
    // / 136, 384 B 185-188 / 169-185 -> 172-178 / 159-162; 16 KiB within noise.
    let lens = Some((aad.len(), io.len));
    // AES-256 opens hashed late measured no faster (see `bulk_with`).
    let open_late = NR == 10 && key.tuning.open_hashes_late;
    // SAFETY: forwarded contract.
    let (x, lens_hashed) = unsafe {
        if SAVE_MULS && NR == 10 && key.tuning.pair_reduction && io.len >= PAIR_MIN_LEN {
            bulk_with::<NR, ENC, true, true, true>(key, ctr, nonce96, x, io, lens, open_late)
        } else {
            bulk_with::<NR, ENC, true, SAVE_MULS, false>(key, ctr, nonce96, x, io, lens, open_late)
        }
    };
    tag_from(&key.h, x, lens_hashed, aad.len(), io.len, tag_mask)
}

/// Where the key's tuning says so (AMD Zen 4 and 5; Intel's AVX-512 cores, measured at
/// `backend::tuning_for_cpu`), AES-128 messages of at least this many bytes
/// reduce once per 32 blocks (see the module documentation). Measured on Zen 5 (family
/// 0x1a model 2), TSC ticks per call against one reduction per 16 blocks, the two
/// alternated in one process (AD 13 bytes), seal / open: 16 KiB 0.84 / 0.82, 8 KiB 0.87 /
/// 0.85, 4 KiB 0.92 / 0.89, 2 KiB 0.95 / 0.95; at 1350 bytes (five steps: two pairs and a
/// single one) 1.05 / 1.06, so shorter messages keep one reduction per step. AES-256
/// gains nothing there (16 KiB 0.98 / 0.99, 2 KiB 1.00 / 1.04): with 60 AES instructions
/// a step, its loop is bound by the AES units, and the chain already hides behind them.
/// AES-192 was not measured and keeps one reduction per step.
///
/// On Zen 4 (family 0x19 model 0x11, 512-bit instructions issued as two halves; same
/// method, three runs, TSC ticks per call against one reduction per step), AES-128 seal
/// gains 2-4% from 2 KiB: 2 KiB 429-442 / 416, 2304 B 468-481 / 451-461, 4 KiB
/// 780-789 / 754-763, 16 KiB 2902-2912 / 2808-2814. Open gains less: nothing at 2 to 3
/// KiB (2 KiB 432-448 / 429-442, 2560 B 520-523 / 520-546), 0-3% at 4 KiB, 1-2% at
/// 16 KiB (2983-2996 / 2928-2960). AES-256, on the same code either way, stayed within
/// 1%. The price is paid once per key, which derives `H^32..H^17` when it is made:
/// AES-128 key set-up 471 -> 520 TSC ticks there (fastest of 20000 batches of eight).
const PAIR_MIN_LEN: usize = 2048;

/// The entry point: [`seal_or_open`], except that on CPUs whose tuning says so (AMD Zen 4;
/// on Intel only the one-pass sizes, measured at `backend::tuning_for_cpu`) short
/// messages take the 256-bit kernel instead. Zen 4 issues a 512-bit instruction as
/// two 256-bit halves, so a message of a few blocks pays for vectors it leaves mostly
/// empty, and the 256-bit kernel's one-pass short path (`vaes256_gcm::short`) costs less.
/// The call goes to that kernel's own entry point, compiled without AVX-512: inlined into
/// this kernel's AVX-512 code, the same path ran slower there (94-143 against 74-104 TSC
/// ticks a call). Measured on Zen 4 (family 0x19 model 0x11), TSC ticks per call, fastest
/// of 10000 batches of eight, AD 13 bytes, this kernel (its short paths: the 128-bit
/// kernel's up to 48 bytes, its own above) against the 256-bit one, seal / open:
/// - AES-128, 16 B 78 / 74 against 61 / 61; 32 B 78 / 91 against 61 / 58; 64 B 87 / 87
///   against 71 / 65; 96 B 91 / 91 against 78 / 87; 127 B 94 / 87 against 91 / 107;
/// - AES-256, 16 B 91 / 84 against 74 / 68; 64 B 100 / 103 against 91 / 84; 96 B
///   113 / 110 against 87 / 94; 127 B 107 / 110 against 104 / 117.
///
/// Seals and opens of up to 14 blocks go there too: the 256-bit kernel does them in the
/// same one pass (`vaes256_gcm::takes_one_pass` decides, for both kernels). Same method,
/// this kernel's paths against the 256-bit one's, AES-128 / AES-256 seal: 128 B 91-94 /
/// 110-113 against 78 / 94; 160 B 107-110 / 126-130 against 91-94 / 113-117; 208 B
/// 136-139 / 178-182 against 107 / 133; 224 B 136 / 175-178 against 107 / 130 (192 B
/// AES-256 within noise). Opens of 8 to 14 blocks stayed here while the 256-bit path
/// kept its message in stack arrays (this kernel was ahead then: 176 B AES-128 100
/// against 136); with its vectors in registers, TSC ticks per call (the 20th percentile
/// of 40 runs of 50000 calls back to back in place, best of three alternated processes)
/// AES-128 / AES-256, here against there: 128 B 99 / 112 against 95 / 109, 160 B 110 /
/// 131 against 102 / 122, 224 B 193 / 203 against 127 / 148.
///
/// So do seals and opens of 15 to 29 blocks, in that kernel's two groups
/// (`vaes256_gcm::takes_two_groups`; measured against this kernel's paths there, at
/// `short_groups`), and seals of up to 42 blocks in more groups
/// (`vaes256_gcm::takes_more_groups`) unless they are whole 16-block steps here, which
/// then need no tail. Measured on Zen 4 as there, AES-128 / AES-256 seal, this kernel
/// against those groups: 480 B 251 / 286 against 227 / 262, 544 B 265 / 305 against
/// 238 / 273, 576 B 266 / 303 against 250 / 290, 608 B 277 / 319 against 258 / 296, 672
/// B 288 / 330 against 274 / 317; but 512 B 221 / 253 against 232 / 268 (a tail costs
/// this kernel about 45 ticks: 1280 B 357, 1296 B 405). Beyond them this kernel's own
/// paths run. Earlier, with those
/// paths, opens of 15 and 16 blocks ran faster on the 256-bit kernel's step with AES-256
/// (256 B 146 against 169-175). A fourth vector in this kernel's short path, as
/// one function or as a second instance beside the three-vector one, sped up 13 to 15
/// blocks by about a tenth but slowed 128 to 192 bytes by as much or more (A/B in
/// alternation, this kernel over the 256-bit one: 128 B AES-256 open 1.03-1.06 ->
/// 1.27-1.31, 224 B seal 1.28-1.31 -> 1.12-1.15); not kept.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[inline(always)]
pub(crate) unsafe fn seal_or_open_routed<const ENC: bool>(
    key: &HwKey,
    t: Vaes512Token,
    j0: u128,
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let one_pass = || vaes256_gcm::takes_one_pass(aad.len(), io.len);
    let groups = || {
        vaes256_gcm::takes_two_groups(aad.len(), io.len)
            || (ENC
                && !io.len.is_multiple_of(CHUNK)
                && vaes256_gcm::takes_more_groups(aad.len(), io.len))
    };
    let routed = match key.tuning.short_in_256_bits {
        ShortIn256Bits::None => false,
        ShortIn256Bits::OnePass => one_pass(),
        ShortIn256Bits::Groups => one_pass() || groups(),
    };
    if routed {
        // SAFETY: forwarded contract; a `Vaes512Token` proves the 256-bit kernel's
        // features, which are a subset of its own.
        unsafe { vaes256_gcm::seal_or_open::<ENC>(key, t.vaes256(), j0, nonce96, aad, io) }
    } else {
        // SAFETY: forwarded contract; the token proves the features.
        unsafe { seal_or_open::<ENC>(key, t, j0, nonce96, aad, io) }
    }
}

/// Associated data that fits one vector, and messages that fit three, take the short path.
const SHORT_AAD_BLOCKS: usize = 4;
const SHORT_MSG_BLOCKS: usize = 12;

/// A whole message whose GHASH input (associated data, ciphertext, lengths block) is at
/// most 16 blocks: every block is multiplied by its own power of `H`, from `H^n` for the
/// first to `H^1` for the lengths, and the products are reduced once. The usual path
/// reduces after the associated data, after the message and after the lengths block; for
/// a TLS record of a few blocks those three serial reductions are most of the latency.
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the associated data is at most
/// `SHORT_AAD_BLOCKS` blocks, the message at most `SHORT_MSG_BLOCKS`, and the two together
/// fewer than 16.
#[inline]
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn short<const NR: usize, const ENC: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let h = &key.h;
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    let first = HPowers::COUNT - (na + nc + 1);
    // SAFETY: used once, at `first <= 14` (at least one block of associated data), for
    // the associated data's vector: `first + 3 < HPowers::LEN` (the message's vectors
    // load their powers in `short_message`).
    let powers = |i: usize| unsafe { _mm512_loadu_si512(h.0.as_ptr().add(i).cast()) };
    let tag_mask = tag_mask_now::<NR>(&key.aes.rk, j0);

    let mut w = Wide::zero();
    if na > 0 {
        // SAFETY: the mask covers only the associated data, at most 64 bytes.
        let a = unsafe { _mm512_maskz_loadu_epi8(byte_mask(aad.len(), 0), aad.as_ptr().cast()) };
        w.mul_add(bswap512(a), powers(first));
    }
    let lens = lengths_block(aad.len(), io.len);
    w.mul_add(
        _mm512_zextsi128_si512(lens),
        _mm512_zextsi128_si512(h.0[HPowers::COUNT - 1]),
    );

    // SAFETY: forwarded contract; the message of `nc` blocks fills `nc.div_ceil(4)`
    // vectors, at most three (the caller's bounds).
    unsafe {
        match nc.div_ceil(4) {
            0 => {}
            1 => short_message::<NR, ENC, 1>(key, j0, io, &mut w, first + na),
            2 => short_message::<NR, ENC, 2>(key, j0, io, &mut w, first + na),
            _ => short_message::<NR, ENC, 3>(key, j0, io, &mut w, first + na),
        }
    }
    let mut tag = [0u8; 16];
    store16(&mut tag, _mm_xor_si128(bswap(w.reduce()), tag_mask));
    tag
}

/// The message's part of [`short`] in `N` vectors, `N` a constant so that the vectors
/// stay in registers: reads the input, hashes it (open) or the ciphertext (seal) into `w`
/// with the powers from entry `first` on, encrypts and writes the output.
///
/// With the vector count known only at run time, the keystream vectors were gathered
/// into a three-vector array, stored and reloaded on their way to the output and the
/// hash. This path is the default on AMD Zen 5, not measured here (Intel's tuning hands
/// these sizes to the 256-bit kernel, see `backend::tuning_for_cpu`); on an
/// AMD EPYC Zen 4 (family 25 model 17), with `Tuning::short_in_256_bits` turned off so
/// that it runs (TSC ticks per call, the method of `vaes256_gcm::short_message`), before
/// -> after, AES-128 / AES-256: open 1 to 64 B 100 / 119-121 -> 96 / 105-106, 65 B
/// 107 / 123 -> 100 / 119, 128 B 106 / 124 -> 99 / 112; seals within noise (121-156
/// ticks either way: there the hash of the ciphertext, after its AES, is the chain).
///
/// # Safety
/// As for [`short`], and the message fills `N` vectors (`4N - 3` to `4N` blocks).
#[inline]
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn short_message<const NR: usize, const ENC: bool, const N: usize>(
    key: &HwKey,
    j0: __m128i,
    io: InOut,
    w: &mut Wide,
    first: usize,
) {
    debug_assert_eq!(io.len.div_ceil(64), N);
    assert!(first + 4 * N <= HPowers::LEN);
    // SAFETY: vector `i < N` of the powers ends at entry `first + 4i + 3`, inside the
    // table (checked above).
    let powers =
        |i: usize| unsafe { _mm512_loadu_si512(key.h.0.as_ptr().add(first + 4 * i).cast()) };
    let mut masks = [0; N];
    let mut input = [_mm512_setzero_si512(); N];
    for i in 0..N {
        masks[i] = byte_mask(io.len, i);
        // SAFETY: the mask selects only bytes inside the input; masked-off bytes are
        // neither read nor faulted on.
        input[i] = unsafe { _mm512_maskz_loadu_epi8(masks[i], io.src.wrapping_add(64 * i).cast()) };
    }
    if !ENC {
        for (i, v) in input.iter().enumerate() {
            w.mul_add(bswap512(*v), powers(i));
        }
    }
    let rk = broadcast_keys::<NR>(&key.aes.rk);
    let ctr = _mm512_add_epi32(
        _mm512_broadcast_i32x4(_mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1))),
        _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
    );
    let z = [_mm512_setzero_si512(); VECS];
    let no_carry = Carry::<false> {
        lanes: z[0],
        h16: z[0],
    };
    let out = stitched::<NR, false, N, false>(
        &rk,
        counters(ctr, rk[0]),
        &input,
        &z,
        &Powers::unused(),
        &no_carry,
    )
    .0;
    for i in 0..N {
        // SAFETY: as for the loads, on the output.
        unsafe { _mm512_mask_storeu_epi8(io.dst.wrapping_add(64 * i).cast(), masks[i], out[i]) };
        if ENC {
            // Keystream beyond the message is not ciphertext: mask it off.
            let ct = _mm512_maskz_mov_epi8(masks[i], out[i]);
            w.mul_add(bswap512(ct), powers(i));
        }
    }
}

/// The mask of the bytes of vector `i` that lie inside the first `len` bytes.
#[inline(always)]
fn byte_mask(len: usize, i: usize) -> __mmask64 {
    let left = len.saturating_sub(64 * i);
    if left >= 64 { !0 } else { (1u64 << left) - 1 }
}

/// `a ^ b ^ c` in one instruction. Unmasked, the 32- and 64-bit forms of VPTERNLOG are
/// the same operation; the 32-bit one is the one Miri implements.
#[inline]
#[target_feature(enable = "avx512f")]
fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    // MemorySanitizer does not model VPTERNLOG (see `ct::msan`).
    #[cfg(ct_msan)]
    return crate::ct::msan::bitwise3(a, b, c, |a, b, c| {
        _mm512_ternarylogic_epi32::<0x96>(a, b, c)
    });
    #[cfg(not(ct_msan))]
    _mm512_ternarylogic_epi32::<0x96>(a, b, c)
}

/// The reduction constant (see `clmul`) in every 64-bit half of every lane.
#[repr(C, align(64))]
struct Align64(__m512i);

// SAFETY: an all-constant bit pattern; `__m512i` has no invalid values.
static REDUCTION_CONSTANT: Align64 =
    Align64(unsafe { core::mem::transmute::<[u64; 8], __m512i>([0xC200_0000_0000_0000; 8]) });

/// An unreduced sum of lane-wise products.
#[derive(Clone, Copy)]
struct Wide {
    lo: __m512i,
    mi: __m512i,
    hi: __m512i,
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> Self {
        let z = _mm512_setzero_si512();
        Self {
            lo: z,
            mi: z,
            hi: z,
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn mul_add(&mut self, a: __m512i, b: __m512i) {
        self.lo = _mm512_xor_si512(self.lo, _mm512_clmulepi64_epi128::<0x00>(a, b));
        self.hi = _mm512_xor_si512(self.hi, _mm512_clmulepi64_epi128::<0x11>(a, b));
        self.mi = xor3(
            self.mi,
            _mm512_clmulepi64_epi128::<0x01>(a, b),
            _mm512_clmulepi64_epi128::<0x10>(a, b),
        );
    }

    /// Reduces every lane, then sums the lanes.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq,avx2")]
    fn reduce(self) -> __m128i {
        fold(self.reduce_lanes())
    }

    /// Reduces every lane; the sum of the lanes is the hash value.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn reduce_lanes(self) -> __m512i {
        // A plain load of the whole constant: left to itself, LLVM re-broadcasts it from
        // 8 bytes in every iteration, a uop on the shuffle port the multiplies need.
        // SAFETY: a 64-byte-aligned static of 64 bytes.
        let c = unsafe { core::ptr::read_volatile(&REDUCTION_CONSTANT.0) };
        let mi = xor3(
            self.mi,
            _mm512_shuffle_epi32::<0x4e>(self.lo),
            _mm512_clmulepi64_epi128::<0x00>(self.lo, c),
        );
        xor3(
            self.hi,
            _mm512_shuffle_epi32::<0x4e>(mi),
            _mm512_clmulepi64_epi128::<0x00>(mi, c),
        )
    }
}

/// The sum of the four lanes.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
fn fold(r: __m512i) -> __m128i {
    let r256 = _mm256_xor_si256(_mm512_castsi512_si256(r), _mm512_extracti64x4_epi64::<1>(r));
    _mm_xor_si128(
        _mm256_castsi256_si128(r256),
        _mm256_extracti128_si256::<1>(r256),
    )
}

/// `H^16..H^13`, `H^12..H^9`, `H^8..H^5`, `H^4..H^1`.
#[inline]
#[target_feature(enable = "avx512f")]
fn powers16(h: &HPowers) -> [__m512i; VECS] {
    // SAFETY: indices 0..16 of a 19-entry table, four 64-byte loads.
    core::array::from_fn(|i| unsafe { _mm512_loadu_si512(h.0.as_ptr().add(4 * i).cast()) })
}

/// What the bulk loop multiplies by: `H^16..H^1` as `powers16` lays them out, and for
/// the Karatsuba form the same powers' `h0 ^ h1` (the low half of each lane, the only
/// half read here; see `HXor`).
struct Powers {
    h: [__m512i; VECS],
    hx: [__m512i; VECS],
}

impl Powers {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(key: &HwKey) -> Self {
        Self {
            h: powers16(&key.h),
            // SAFETY: indices 0..16 of a 19-entry table, four 64-byte loads.
            hx: core::array::from_fn(|i| unsafe {
                _mm512_loadu_si512(key.hx.0.as_ptr().add(4 * i).cast())
            }),
        }
    }

    /// `H^32..H^17` and their Karatsuba factors, for the first step of a pair.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn high(key: &HwKey) -> Self {
        let load = |t: &HighPowers| -> [__m512i; VECS] {
            // SAFETY: indices 0..16 of a 16-entry table, four 64-byte loads.
            core::array::from_fn(|i| unsafe { _mm512_loadu_si512(t.0.as_ptr().add(4 * i).cast()) })
        };
        Self {
            h: load(&key.h_high),
            hx: load(&key.hx_high),
        }
    }

    /// For the steps that only encrypt.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn unused() -> Self {
        let z = [_mm512_setzero_si512(); VECS];
        Self { h: z, hx: z }
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn bswap512(v: __m512i) -> __m512i {
    _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(bswap_mask()))
}

/// GHASH of 16 blocks in byte form continuing from `x`, one reduction.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,avx2")]
fn hash16(hp: &[__m512i; VECS], x: __m128i, v: &[__m512i; VECS]) -> __m128i {
    hash16_onto(hp, Wide::zero(), x, v)
}

/// [`hash16`] onto products already summed in `w` (unreduced); the last step of a pair
/// that ends after its first half passes a zero `x`. One body for both, where there were
/// two copies: the sum from zero and the XOR of a zero `x` fold away. The registers LLVM
/// picks differ a little; the speed measured the same within the noise (Zen 5, TSC per
/// call, ratio to aws-lc-rs in the same process, three runs each before / after: AES-128
/// 16 KiB seal, which ends on the pairs, 1.21-1.27 / 1.18-1.25; 4 KiB 1.40-1.41 /
/// 1.46-1.49).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,avx2")]
fn hash16_onto(hp: &[__m512i; VECS], mut w: Wide, x: __m128i, v: &[__m512i; VECS]) -> __m128i {
    for i in 0..VECS {
        let mut d = bswap512(v[i]);
        if i == 0 {
            d = _mm512_xor_si512(d, _mm512_zextsi128_si512(x));
        }
        w.mul_add(d, hp[i]);
    }
    w.reduce()
}

/// Fills the key's tables of powers (`h`, `hx`), and `h_high` and `hx_high` if its tuning
/// multiplies by them: on AES-128 keys only, the ones that reduce per 32 blocks (see
/// [`PAIR_MIN_LEN`]). AES-256 keys skip that work (on Zen 4, key set-up 425 -> 383 TSC
/// ticks). The high powers are made from the low ones still in registers: loaded back
/// from the table, each 512-bit load would wait for the two 256-bit stores it spans.
pub(crate) fn derive_powers(h_bytes: __m128i, t: Vaes512Token, key: &mut HwKey) {
    // SAFETY: the token proves the features (the 256-bit kernel's are a subset).
    unsafe {
        let pairs = vaes256_gcm::powers_into(h_bytes, t.vaes256(), &mut key.h);
        super::clmul::xored_halves_into(&key.h, &mut key.hx);
        if key.tuning.pair_reduction && key.aes.rounds == 10 {
            high_powers_into(join_pairs(&pairs), key, t);
        }
    }
}

/// `H^16..H^1` as [`powers16`] lays them out, from `vaes256_gcm::powers_into`'s pairs
/// (`H^2 H^1` first).
#[inline]
#[target_feature(enable = "avx512f")]
fn join_pairs(pairs: &[__m256i; 8]) -> [__m512i; VECS] {
    core::array::from_fn(|k| {
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(pairs[7 - 2 * k]), pairs[6 - 2 * k])
    })
}

/// `H^32..H^17` as `H^16` times `H^16..H^1` (`low`, as [`powers16`] lays them out): four
/// lane-wise products and reductions.
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
fn high_powers_into(low: [__m512i; VECS], key: &mut HwKey, _t: Vaes512Token) {
    let h16 = _mm512_broadcast_i32x4(_mm512_castsi512_si128(low[0]));
    for (i, p) in low.into_iter().enumerate() {
        let mut w = Wide::zero();
        w.mul_add(h16, p);
        let high = w.reduce_lanes();
        let xored = _mm512_xor_si512(high, _mm512_shuffle_epi32::<0x4e>(high));
        // SAFETY: entries 4i..4i+4 of 16-entry tables: 64 bytes in bounds.
        unsafe {
            _mm512_storeu_si512(key.h_high.0.as_mut_ptr().add(4 * i).cast(), high);
            _mm512_storeu_si512(key.hx_high.0.as_mut_ptr().add(4 * i).cast(), xored);
        }
    }
}

/// [`hash16`] in Karatsuba form: 12 multiplies instead of 16. Only a stream of
/// associated data takes it (`ghash_with`), on CPUs whose multiplier sets the pace of such
/// a stream (`Tuning::save_multiplies`). Measured on Zen 4 (family 0x19 model 0x11), an
/// empty message with associated data only (GMAC), against the schoolbook form in the
/// same process (3000 interleaved timings, three runs): +10% to +12% at 4 and 16 KiB, +6%
/// to +8% at 1 KiB, +2% to +6% at 256 B. The last 16 blocks of a seal keep [`hash16`]:
/// there the hash is all latency, the extra shuffle sits in front of the middle product,
/// and Karatsuba measured 0% to 0.5% slower at 256 B.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,avx2")]
fn hash16_kara(powers: &Powers, x: __m128i, v: &[__m512i; VECS]) -> __m128i {
    let mut d = v.map(|b| bswap512(b));
    d[0] = _mm512_xor_si512(d[0], _mm512_zextsi128_si512(x));
    let lo = core::array::from_fn(|i| _mm512_clmulepi64_epi128::<0x00>(d[i], powers.h[i]));
    let hi = core::array::from_fn(|i| _mm512_clmulepi64_epi128::<0x11>(d[i], powers.h[i]));
    let m = [middle_factors(d[0], d[1]), middle_factors(d[2], d[3])];
    let mid = core::array::from_fn(|i| middle_product(i, m[i / 2], powers.hx[i]));
    KaraSum::onto(None, lo, hi, mid).wide().reduce()
}

/// The Karatsuba middle factors of two vectors of blocks at once: in each lane, `a0 ^ a1`
/// in the low half and `b0 ^ b1` in the high half. Two unpacks and an XOR, where a
/// factor per vector (the vector XORed with itself, halves swapped) takes a shuffle and
/// an XOR each: one vector uop fewer per two vectors, as `vaes256_gcm`'s
/// `Kara::mul_add_pair` does for Zen 3. On AMD Zen 4 every 512-bit uop beside the AES
/// rounds costs the loop time, not only the multiplies: measured there (family 0x19 model
/// 0x11, TSC ticks per 16 KiB call, fastest of 300 batches of eight, alternated), eight
/// more XORs per 16 blocks made the AES-128 seal 4% slower (2850 -> 2964-2970), about 0.3
/// core cycles each (see the module documentation); this form, two uops fewer per 16
/// blocks: AES-128 seal 2840-2870 -> 2808-2857, AES-256 seal 3588-3604 -> 3549-3556
/// (five alternated runs; opens within noise).
#[inline]
#[target_feature(enable = "avx512f")]
fn middle_factors(a: __m512i, b: __m512i) -> __m512i {
    _mm512_xor_si512(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b))
}

/// The middle product of vector `v` of a group of four, from its pair's
/// [`middle_factors`] `m` (its factor in the low half of each lane if `v` is even, the
/// high half if odd) and `hx`, the powers' factors in the low half of each lane.
#[inline]
#[target_feature(enable = "avx512f,vpclmulqdq")]
fn middle_product(v: usize, m: __m512i, hx: __m512i) -> __m512i {
    if v & 1 == 0 {
        _mm512_clmulepi64_epi128::<0x00>(m, hx)
    } else {
        _mm512_clmulepi64_epi128::<0x01>(m, hx)
    }
}

/// Sums of Karatsuba products not yet combined into a [`Wide`]: `lo = Σ a0·h0`,
/// `hi = Σ a1·h1`, `mid = Σ (a0 ^ a1)·(h0 ^ h1)`. A pair of steps (`PAIR`) sums its two
/// steps' products this way and combines once: 13 XOR uops for the pair where two
/// [`Wide`]s and their sum took 17 (see `middle_factors` for what a uop costs on Zen 4).
/// Measured on Zen 4 (family 0x19 model 0x11, TSC ticks per call, fastest of 300 batches
/// of eight, six alternated runs) against two `Wide`s: AES-128 at 16 KiB seal 2814-2840
/// -> 2792-2811, open 2860-2932 -> 2821-2854.
#[derive(Clone, Copy)]
struct KaraSum {
    lo: __m512i,
    hi: __m512i,
    mid: __m512i,
}

impl KaraSum {
    /// `prior` (if any) plus four vectors of products: two three-way XORs per sum.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn onto(
        prior: Option<KaraSum>,
        lo: [__m512i; VECS],
        hi: [__m512i; VECS],
        mid: [__m512i; VECS],
    ) -> Self {
        let sum = |p: Option<__m512i>, v: [__m512i; VECS]| match p {
            Some(p) => xor3(xor3(p, v[0], v[1]), v[2], v[3]),
            None => xor3(v[0], v[1], _mm512_xor_si512(v[2], v[3])),
        };
        Self {
            lo: sum(prior.map(|k| k.lo), lo),
            hi: sum(prior.map(|k| k.hi), hi),
            mid: sum(prior.map(|k| k.mid), mid),
        }
    }

    /// The unreduced product sum: the schoolbook middle term is the Karatsuba one plus
    /// the low and high sums.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn wide(self) -> Wide {
        Wide {
            lo: self.lo,
            hi: self.hi,
            mi: xor3(self.mid, self.lo, self.hi),
        }
    }
}

/// GHASH of the first `n` (1..=16) blocks of `v` (byte form, zero beyond the data)
/// continuing from `x`: block `j` times `H^(n-j)`, one reduction. With `lens` (the
/// lengths block, in the form [`lengths_block`] gives, `n` at most 15), that block too,
/// last: the whole GHASH, the blocks by `H^(n+1-j)` and the lengths by `H`, still one
/// reduction.
///
/// `x`, the running hash, arrives last (at the end of the bulk loop's chain of
/// reductions), so it does not join the blocks' sum: it is multiplied by its power in a
/// 128-bit product of its own and added after the reductions, which shortens the chain
/// from it to the tag (a 128-bit multiply and reduction instead of a 512-bit one, and the
/// lane sum). When it was added to the first block, measured on an AMD EPYC Zen 4
/// (family 25 model 17), TSC ticks per call (20th percentile of 40 runs of 50000 calls
/// in place, best of three processes), AD 13 bytes, AES-128 / AES-256, before -> after:
/// open 1296 B 392 / 440 -> 375 / 430, 1350 B 401 / 448 -> 385 / 445, 4112 B 859 /
/// 1010 -> 833 / 1003; seals within 1%. (The same in the 256-bit kernel's tail changed
/// nothing there.)
#[inline]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,avx2,pclmulqdq")]
fn hash_tail(
    h: &HPowers,
    x: __m128i,
    v: &[__m512i; VECS],
    n: usize,
    lens: Option<__m128i>,
) -> __m128i {
    debug_assert!((1..=16 - lens.is_some() as usize).contains(&n));
    let first = HPowers::COUNT - n - lens.is_some() as usize;
    let mut w = Wide::zero();
    if let Some(lens) = lens {
        w.mul_add(
            _mm512_zextsi128_si512(lens),
            _mm512_zextsi128_si512(h.0[HPowers::COUNT - 1]),
        );
    }
    for i in 0..n.div_ceil(4) {
        // SAFETY: `first + 4i + 3 <= 18 < HPowers::LEN` for every vector that holds data
        // (`first` is one less with `lens`, and `n` then at most 15);
        // lanes past the data multiply zero blocks by the padding or spare powers.
        let hp = unsafe { _mm512_loadu_si512(h.0.as_ptr().add(first + 4 * i).cast()) };
        w.mul_add(bswap512(v[i]), hp);
    }
    _mm_xor_si128(w.reduce(), super::clmul::mont_mul(x, h.0[first]))
}

/// Round keys broadcast to all four lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast_keys<const NR: usize>(rk: &[__m128i; 15]) -> [__m512i; 15] {
    let mut k = [_mm512_setzero_si512(); 15];
    for i in 0..=NR {
        k[i] = _mm512_broadcast_i32x4(rk[i]);
    }
    k
}

/// Counter vectors `ctr + 4i` for `i < N` (`ctr` holds four consecutive counters), byte
/// order restored and whitened with round key 0.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn counters<const N: usize>(ctr: __m512i, rk0: __m512i) -> [__m512i; N] {
    core::array::from_fn(|i| {
        _mm512_xor_si512(bswap512(_mm512_add_epi32(ctr, inc(4 * i as i32))), rk0)
    })
}

/// `k` in the counter dword of every lane.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn inc(k: i32) -> __m512i {
    _mm512_set_epi32(0, 0, 0, k, 0, 0, 0, k, 0, 0, 0, k, 0, 0, 0, k)
}

/// Rounds 1 to NR of `s` (whitened counters), XORed with `input` in the last round; with
/// `HASH`, the products of `hash_in` (mirrored, `X` in block 0) and `powers.h` computed
/// between the first rounds and summed in a tree of three-way XORs (8 XORs for 16
/// products, rather than 12 accumulating one product at a time): every vector uop saved
/// here is time the AES units need not share.
///
/// The products are in schoolbook form (four multiplies per vector), or with `SAVE_MULS`
/// in Karatsuba form (three, the third by `powers.hx`, the same powers' `h0 ^ h1`), for one
/// shuffle and one XOR more per vector (see `clmul`). On Zen 4 a 512-bit `VPCLMULQDQ`
/// holds the AES pipes for as long as a 512-bit `VAESENC` does (measured there: 44
/// `VAESENC` and 16 `VPCLMULQDQ`, all independent, take 60 cycles; with 12 multiplies, 56),
/// so the 4 multiplies saved per iteration are about 4 cycles of the 70 an AES-128
/// iteration takes. Measured on Zen 4 (family 0x19 model 0x11), MB/s, medians of four
/// `speed` runs, folded carry with schoolbook then Karatsuba products: 16 KiB AES-128
/// seal 13360 -> 13732, open 13209 -> 13892, AES-256 seal 11204 -> 11344, open 11448 ->
/// 11852; 4 KiB +1.5% to +5%, 1350 B +1% to +5%. Intel keeps the schoolbook form: there
/// the multiplier has its own port, which the extra shuffles would share.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx512f,avx2")]
fn stitched<const NR: usize, const HASH: bool, const N: usize, const SAVE_MULS: bool>(
    rk: &[__m512i; 15],
    s: [__m512i; N],
    input: &[__m512i; N],
    hash_in: &[__m512i; VECS],
    powers: &Powers,
    carry: &Carry<SAVE_MULS>,
) -> ([__m512i; N], Wide) {
    let (s, p) = stitched_parts::<NR, HASH, N, SAVE_MULS>(rk, s, input, hash_in, powers, carry);
    (s, p.sum::<HASH, SAVE_MULS>())
}

/// One step's products, before they are summed: per vector `v < 4` the low, high and
/// middle products (`lo[v]`, `hi[v]`, `mid[2v]`, and in schoolbook form the second
/// middle one `mid[2v + 1]`), and in schoolbook form the running hash's at index 4 (8 and
/// 9 in `mid`).
struct Products {
    lo: [__m512i; VECS + 1],
    hi: [__m512i; VECS + 1],
    mid: [__m512i; 2 * VECS + 2],
}

impl Products {
    /// The products summed, unreduced, in a tree of three-way XORs (8 XORs for 16
    /// products, rather than 12 accumulating one product at a time).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sum<const HASH: bool, const SAVE_MULS: bool>(&self) -> Wide {
        let (lo, hi, mid) = (&self.lo, &self.hi, &self.mid);
        if HASH && SAVE_MULS {
            // The running hash was folded into `hash_in`: no fifth product.
            self.kara(None).wide()
        } else if HASH {
            Wide {
                lo: xor3(xor3(lo[0], lo[1], lo[2]), lo[3], lo[4]),
                hi: xor3(xor3(hi[0], hi[1], hi[2]), hi[3], hi[4]),
                mi: xor3(
                    xor3(mid[0], mid[1], mid[2]),
                    xor3(mid[3], mid[4], mid[5]),
                    xor3(mid[6], mid[7], _mm512_xor_si512(mid[8], mid[9])),
                ),
            }
        } else {
            Wide::zero()
        }
    }

    /// The Karatsuba form's products (`SAVE_MULS`) added to `prior`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn kara(&self, prior: Option<KaraSum>) -> KaraSum {
        let (lo, hi, mid) = (&self.lo, &self.hi, &self.mid);
        KaraSum::onto(
            prior,
            [lo[0], lo[1], lo[2], lo[3]],
            [hi[0], hi[1], hi[2], hi[3]],
            [mid[0], mid[2], mid[4], mid[6]],
        )
    }
}

/// [`stitched`] without the sum of the products (which a pair of steps makes once for
/// both, see [`KaraSum`]).
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx512f,avx2")]
fn stitched_parts<const NR: usize, const HASH: bool, const N: usize, const SAVE_MULS: bool>(
    rk: &[__m512i; 15],
    mut s: [__m512i; N],
    input: &[__m512i; N],
    hash_in: &[__m512i; VECS],
    powers: &Powers,
    carry: &Carry<SAVE_MULS>,
) -> ([__m512i; N], Products) {
    let z = _mm512_setzero_si512();
    let (mut lo, mut hi, mut mid) = ([z; VECS + 1], [z; VECS + 1], [z; 2 * VECS + 2]);
    if HASH && !SAVE_MULS {
        // The running hash, still spread over four lanes, times H^16: the start of the
        // critical path, so it is issued first.
        let (d, h) = (carry.lanes, carry.h16);
        lo[VECS] = _mm512_clmulepi64_epi128::<0x00>(d, h);
        hi[VECS] = _mm512_clmulepi64_epi128::<0x11>(d, h);
        mid[2 * VECS] = _mm512_clmulepi64_epi128::<0x01>(d, h);
        mid[2 * VECS + 1] = _mm512_clmulepi64_epi128::<0x10>(d, h);
    }
    for r in 1..NR {
        for b in s.iter_mut() {
            *b = _mm512_aesenc_epi128(*b, rk[r]);
        }
        if HASH && r <= VECS {
            let v = r - 1;
            let (d, h) = (hash_in[v], powers.h[v]);
            let mut p = [
                _mm512_clmulepi64_epi128::<0x00>(d, h),
                _mm512_clmulepi64_epi128::<0x11>(d, h),
                _mm512_setzero_si512(),
            ];
            // The fourth value the pin ties to this round: the schoolbook form's fourth
            // product, or the Karatsuba form's middle factor.
            let mut fourth = if SAVE_MULS {
                // Karatsuba: the middle term from the XOR of each factor's halves, made
                // for vectors 0 and 1 at once and again for 2 and 3 (the second time the
                // same value, which the compiler reuses).
                let m = middle_factors(hash_in[v & !1], hash_in[v | 1]);
                p[2] = middle_product(v, m, powers.hx[v]);
                m
            } else {
                p[2] = _mm512_clmulepi64_epi128::<0x01>(d, h);
                _mm512_clmulepi64_epi128::<0x10>(d, h)
            };
            if let [s0, s1, s2, s3] = &mut s[..] {
                pin(s0, s1, s2, s3, &mut p, &mut fourth);
            }
            [lo[v], hi[v], mid[2 * v]] = p;
            if !SAVE_MULS {
                mid[2 * v + 1] = fourth;
            }
        }
    }
    for (b, i) in s.iter_mut().zip(input) {
        *b = _mm512_aesenclast_epi128(*b, _mm512_xor_si512(rk[NR], *i));
    }
    (s, Products { lo, hi, mid })
}

/// An empty `asm!` that claims to read and write the AES states and this round's
/// products (with the Karatsuba form's middle factor in place of the fourth product). It
/// emits nothing; it keeps the compiler from moving the multiplies away from the round
/// they were written next to (left to itself, LLVM gathers all GHASH work at the top of
/// the loop, and the stitching is lost).
#[inline]
#[target_feature(enable = "avx512f")]
fn pin(
    s0: &mut __m512i,
    s1: &mut __m512i,
    s2: &mut __m512i,
    s3: &mut __m512i,
    p: &mut [__m512i; 3],
    fourth: &mut __m512i,
) {
    // Miri cannot run `asm!`, and MemorySanitizer would report the AES states as they go
    // in and take them as clean after; the pin only matters to the code generator.
    #[cfg(any(miri, ct_msan))]
    let _ = (s0, s1, s2, s3, p, fourth);
    #[cfg(not(any(miri, ct_msan)))]
    {
        let [a, b, c] = p;
        // SAFETY: the template is empty: no instruction runs, no memory or flags change.
        unsafe {
            core::arch::asm!(
                "/* {0} {1} {2} {3} {4} {5} {6} {7} */",
                inout(zmm_reg) * s0,
                inout(zmm_reg) * s1,
                inout(zmm_reg) * s2,
                inout(zmm_reg) * s3,
                inout(zmm_reg) * a,
                inout(zmm_reg) * b,
                inout(zmm_reg) * c,
                inout(zmm_reg) * fourth,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    }
}

/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn load4(io: InOut, off: usize) -> [__m512i; VECS] {
    // SAFETY: the caller keeps `off + CHUNK` inside the input.
    core::array::from_fn(|i| unsafe { _mm512_loadu_si512(io.src.add(off + 64 * i).cast()) })
}

/// [`load4`] again, for the last AES round of a decryption, which XORs in the same
/// ciphertext that its first rounds hashed. The address goes through [`unshared`], so
/// LLVM cannot reuse the first load's registers, and folds the load into the XOR with the
/// last round key; kept live through the AES rounds, the four vectors pushed the loop's
/// products and round keys out to the stack.
///
/// Used by the decryption pairs (AES-128 on AMD Zen 4 and 5). Measured on Zen 4 (EPYC,
/// family 0x19 model 0x11), AES-128 open, TSC ticks per call, fastest of five runs of
/// 1500 batches, this and the single load alternated: 16 KiB 3003 -> 2925, 8 KiB 1511 ->
/// 1462, 4 KiB 776 -> 760, 2 KiB 432 -> 419; in the `speed` tool, which opens the same
/// buffer in place again and again (three runs each, alternated), 4 KiB 11.3-11.7 ->
/// 12.3-12.9 GB/s and 16 KiB 13.3-13.6 -> 14.3-14.5 GB/s. The pair of steps went from 52
/// stack loads and stores to 35 (285 instructions to 266). In the one-step loop it made
/// AES-256 open no faster (16 KiB 3487-3506 against 3497-3519 over three runs), so that
/// loop keeps its single load.
///
/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn reload4(io: InOut, off: usize) -> [__m512i; VECS] {
    let src = unshared(io.src);
    // SAFETY: `src` is `io.src`; the caller keeps `off + CHUNK` inside the input.
    unsafe { load4(InOut { src, ..io }, off) }
}

/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn store4(io: InOut, off: usize, v: &[__m512i; VECS]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + CHUNK` inside the output.
        unsafe { _mm512_storeu_si512(io.dst.add(off + 64 * i).cast(), *b) };
    }
}

/// The running hash between iterations of the bulk loop, kept reduced but not summed:
/// its value is the sum of the four lanes. How it enters the next iteration's products
/// depends on the CPU (see `Tuning::save_multiplies`):
///
/// - multiplied, all four lanes by `H^16` in one more vector multiply, and added to the
///   next iteration's products: no cross-lane work on the loop-carried chain, which is
///   multiply, two XORs, reduce. Chosen for Intel, where the 512-bit multiplier takes one
///   per cycle on its own port;
/// - folded (`FOLD`): the lanes summed (two cross-lane extracts and two XORs) and added to
///   the first input block, as a plain GHASH does. On AMD Zen 4 each 512-bit `VPCLMULQDQ`
///   takes an issue slot the AES instructions need, and the four carry multiplies cost
///   more than the longer chain: measured on Zen 4 (family 0x19 model 0x11), 16 KiB, AES-128
///   seal 12.6 -> 13.4 GB/s, open 12.8 -> 13.3, AES-256 seal 10.8 -> 11.2, open 11.1 -> 11.5.
#[derive(Clone, Copy)]
struct Carry<const FOLD: bool> {
    lanes: __m512i,
    h16: __m512i,
}

impl<const FOLD: bool> Carry<FOLD> {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(x: __m128i, h: &HPowers) -> Self {
        Self {
            lanes: _mm512_zextsi128_si512(x),
            h16: _mm512_broadcast_i32x4(h.0[0]),
        }
    }

    /// Takes an iteration's reduced lanes as the new running hash; folded at once when
    /// `FOLD`, so that `lanes` then holds the hash in lane 0 (as `new` leaves it), and the
    /// first iteration, whose running hash comes from the associated data, folds nothing.
    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn set(&mut self, reduced: __m512i) {
        self.lanes = if FOLD {
            _mm512_zextsi128_si512(fold(reduced))
        } else {
            reduced
        };
    }

    /// The running hash as one block.
    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn value(&self) -> __m128i {
        if FOLD {
            _mm512_castsi512_si128(self.lanes)
        } else {
            fold(self.lanes)
        }
    }

    /// The hash input of the next iteration, with the running hash added to its first
    /// block when folded (otherwise `stitched` multiplies it separately).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn added_to(&self, mut hash_in: [__m512i; VECS]) -> [__m512i; VECS] {
        if FOLD {
            hash_in[0] = _mm512_xor_si512(hash_in[0], self.lanes);
        }
        hash_in
    }
}

/// Mirrored copies of `v`: the GHASH input of one iteration.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn hash_input(v: &[__m512i; VECS]) -> [__m512i; VECS] {
    v.map(|b| bswap512(b))
}

/// CTR over all of `io` from the byte-reversed counter `ctr`; with `HASH`, GHASH of the
/// ciphertext (output if `ENC`, input otherwise) continuing from `x`. `public` says
/// whether the counter's value may steer the counter scheme (see `Counters`).
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    x: __m128i,
    io: InOut,
) -> __m128i {
    // SAFETY: forwarded contract.
    unsafe { bulk_with::<NR, ENC, HASH, false, false>(key, ctr, public, x, io, None, false).0 }
}

/// [`bulk`], with fewer multiplies when `SAVE_MULS` (the running hash folded from one
/// iteration into the next, see [`Carry`], and Karatsuba products, see [`stitched`]),
/// and with `PAIR` (which needs `SAVE_MULS`) one reduction per two iterations (see the
/// module documentation); `gcm` picks both from the key's tuning. With `lens` (the
/// associated data's and the message's lengths in bytes), a message that ends in a tail
/// of at most 15 blocks gets the lengths block hashed in the tail's reduction: the second
/// value returned says whether it was, in which case the first is the whole GHASH, not
/// the hash to finish with `finish_tag`. With `open_late`, a decryption hashes each
/// step's ciphertext during the next step's AES rounds, as encryption hashes its output
/// (`Tuning::open_hashes_late`), rather than during its own.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn bulk_with<
    const NR: usize,
    const ENC: bool,
    const HASH: bool,
    const SAVE_MULS: bool,
    const PAIR: bool,
>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    mut x: __m128i,
    io: InOut,
    lens: Option<(usize, usize)>,
    open_late: bool,
) -> (__m128i, bool) {
    // The pairs fold the running hash into their first step: they need `SAVE_MULS`.
    const { assert!(!PAIR || SAVE_MULS) };
    let rk = broadcast_keys::<NR>(&key.aes.rk);
    let powers = Powers::new(key);
    let base = _mm512_add_epi32(
        _mm512_broadcast_i32x4(ctr),
        _mm512_set_epi32(0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0),
    );
    let mut ctrs = Counters::new(base, rk[0], public);
    let none = [_mm512_setzero_si512(); VECS];
    let mut off = 0;
    // A seal that ends in a tail makes the tail's keystream in its last whole step (in
    // program order before it) rather than after the loop: the tail's hash then waits
    // for its loads and one XOR, not for ten or more AES rounds issued after the loop.
    // Measured on an AMD EPYC Zen 4 (family 25 model 17), TSC ticks per call (the 20th
    // percentile of 40 runs of 50000 calls in place, best of three alternated
    // processes), AD 13 bytes, AES-128 / AES-256 seal: 784 B 298 / 349 -> 282 / 330,
    // 1296 B 389 / 457 -> 371 / 444, 1350 B 396 / 471 -> 385 / 459, 1552 B 435 / 515 ->
    // 418 / 499, 4112 B (AES-256) 1070 -> 1048; whole steps (1280 B, 1536 B) and opens
    // within 1%. The pairs' loop keeps it after: made in its last step, 2064 B and 4112
    // B (AES-128) were no faster (501 -> 512, 842 -> 853). (`tail_keystream` says why it
    // is not a `#[target_feature]` function.)
    let tail_blocks = if ENC && HASH {
        (io.len % CHUNK).div_ceil(16)
    } else {
        0
    };
    let mut keystream = None;

    // Hashing each step's ciphertext one step late, as encryption must, an AES-128 open
    // on Intel's AVX-512 cores ran faster than hashing the ciphertext it is decrypting.
    // Measured on a KVM guest of a Xeon with AMX and AVX512-FP16 (family 6 model 0xa7),
    // TSC ticks per call (20th percentile of 40 runs of 50000 calls in place, AD 13 B),
    // medians of 7 alternated processes, against one reduction per step hashing the
    // ciphertext it decrypts: 256 B 108 -> 102, 512 B 152 -> 148, 1350 B 298 -> 297, 2 KiB
    // 372 -> 361, 4 KiB 664 -> 647, 16 KiB 2411 -> 2286 (pairs from 2 KiB; 5 processes
    // earlier, 16 KiB 2394 -> 2216, 8 KiB 1245 -> 1145). AES-256 opens hashed late (5
    // processes): 16 KiB 2782 -> 2865, 4 KiB 759 -> 773, 1350 B 335 -> 333, so they keep
    // hashing what they decrypt. AMD Zen 4 and 5 were not measured this way and keep it
    // too.
    if HASH && (ENC || open_late) {
        if io.len >= CHUNK {
            // SAFETY: `CHUNK <= io.len`.
            let input = unsafe { load4(io, 0) };
            let mut carry = Carry::new(x, &key.h);
            let (mut pending, _) = stitched::<NR, false, VECS, SAVE_MULS>(
                &rk,
                ctrs.whitened(),
                &input,
                &none,
                &powers,
                &carry,
            );
            // SAFETY: as above.
            unsafe { store4(io, 0, &pending) };
            if !ENC {
                // What the next step hashes: a decryption's input.
                pending = input;
            }
            ctrs.step();
            off = CHUNK;
            // Pairs: the ciphertext of the step before is hashed by the high powers with the
            // running hash folded in, this step's ciphertext by the low ones in the next
            // step, and the two sums reduced together. A message can end on a pair's
            // first half, whose sum then waits, unreduced, for the last ciphertext.
            let high = if PAIR {
                Powers::high(key)
            } else {
                Powers::unused()
            };
            let mut first_half: Option<Wide> = None;
            while PAIR && off + CHUNK <= io.len {
                let hash_in = carry.added_to(hash_input(&pending));
                // SAFETY: `off + CHUNK <= io.len`.
                let input = unsafe { load4(io, off) };
                let (out, p_high) = stitched_parts::<NR, true, VECS, SAVE_MULS>(
                    &rk,
                    ctrs.whitened(),
                    &input,
                    &hash_in,
                    &high,
                    &carry,
                );
                let high_sum = p_high.kara(None);
                // SAFETY: as above.
                unsafe { store4(io, off, &out) };
                ctrs.step();
                off += CHUNK;
                pending = if ENC { out } else { input };
                if off + CHUNK > io.len {
                    first_half = Some(high_sum.wide());
                    break;
                }
                // SAFETY: `off + CHUNK <= io.len`.
                let input = unsafe { load4(io, off) };
                let (out, p_low) = stitched_parts::<NR, true, VECS, SAVE_MULS>(
                    &rk,
                    ctrs.whitened(),
                    &input,
                    &hash_input(&pending),
                    &powers,
                    &carry,
                );
                // SAFETY: as above.
                unsafe { store4(io, off, &out) };
                ctrs.step();
                off += CHUNK;
                pending = if ENC { out } else { input };
                carry.set(p_low.kara(Some(high_sum)).wide().reduce_lanes());
            }
            while !PAIR && off + CHUNK <= io.len {
                if tail_blocks != 0 && off + 2 * CHUNK > io.len {
                    // The counters after this step's.
                    let ctr = _mm512_add_epi32(ctrs.le(), inc(16));
                    // SAFETY: this function has the kernel's features.
                    keystream = Some(unsafe { tail_keystream::<NR>(&rk, ctr, tail_blocks) });
                }
                let hash_in = carry.added_to(hash_input(&pending));
                // SAFETY: `off + CHUNK <= io.len`.
                let input = unsafe { load4(io, off) };
                let (out, w) = stitched::<NR, true, VECS, SAVE_MULS>(
                    &rk,
                    ctrs.whitened(),
                    &input,
                    &hash_in,
                    &powers,
                    &carry,
                );
                // SAFETY: as above.
                unsafe { store4(io, off, &out) };
                carry.set(w.reduce_lanes());
                ctrs.step();
                off += CHUNK;
                pending = if ENC { out } else { input };
            }
            x = match first_half {
                // The pair's second half is the last ciphertext, by the low powers.
                Some(w) => hash16_onto(&powers.h, w, _mm_setzero_si128(), &pending),
                None => hash16(&powers.h, carry.value(), &pending),
            };
        }
    } else {
        let mut carry = Carry::new(x, &key.h);
        // Pairs, while two steps remain: the first step's input is hashed by the high
        // powers with the running hash folded in, the second's by the low ones, and the
        // two sums reduced together; a last odd step goes through the loop below.
        let high = if PAIR {
            Powers::high(key)
        } else {
            Powers::unused()
        };
        while PAIR && HASH && off + 2 * CHUNK <= io.len {
            // SAFETY: `off + 2 * CHUNK <= io.len`.
            let input = unsafe { load4(io, off) };
            let (out, p_high) = stitched_parts::<NR, true, VECS, SAVE_MULS>(
                &rk,
                ctrs.whitened(),
                // SAFETY: as above.
                &unsafe { reload4(io, off) },
                &carry.added_to(hash_input(&input)),
                &high,
                &carry,
            );
            let high_sum = p_high.kara(None);
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            ctrs.step();
            off += CHUNK;
            // SAFETY: as above (the second of the two chunks).
            let input = unsafe { load4(io, off) };
            let (out, p_low) = stitched_parts::<NR, true, VECS, SAVE_MULS>(
                &rk,
                ctrs.whitened(),
                // SAFETY: as above.
                &unsafe { reload4(io, off) },
                &hash_input(&input),
                &powers,
                &carry,
            );
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            ctrs.step();
            off += CHUNK;
            carry.set(p_low.kara(Some(high_sum)).wide().reduce_lanes());
        }
        if !PAIR && SAVE_MULS && HASH && off + CHUNK <= io.len {
            // The first iteration multiplies the hash of the associated data by H^16 as the
            // unfolded form does, rather than adding it to the first block: that block's
            // products then need not wait for it, which short messages (one or two
            // iterations) would feel (Zen 4, AES-128 open at 256 B: 7% slower without this).
            // SAFETY: `off + CHUNK <= io.len`.
            let input = unsafe { load4(io, off) };
            let first = Carry::<false>::new(x, &key.h);
            let hash_in = hash_input(&input);
            let (out, w) = stitched::<NR, true, VECS, false>(
                &rk,
                ctrs.whitened(),
                &input,
                &hash_in,
                &powers,
                &first,
            );
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            carry.set(w.reduce_lanes());
            ctrs.step();
            off += CHUNK;
        }
        while off + CHUNK <= io.len {
            // SAFETY: `off + CHUNK <= io.len`.
            let input = unsafe { load4(io, off) };
            let (out, w) = if HASH {
                let hash_in = carry.added_to(hash_input(&input));
                stitched::<NR, true, VECS, SAVE_MULS>(
                    &rk,
                    ctrs.whitened(),
                    &input,
                    &hash_in,
                    &powers,
                    &carry,
                )
            } else {
                stitched::<NR, false, VECS, SAVE_MULS>(
                    &rk,
                    ctrs.whitened(),
                    &input,
                    &none,
                    &powers,
                    &carry,
                )
            };
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            if HASH {
                carry.set(w.reduce_lanes());
            }
            ctrs.step();
            off += CHUNK;
        }
        x = carry.value();
    }
    let ctr = ctrs.le();

    let rem = io.len - off;
    if rem == 0 {
        return (x, false);
    }
    // The lengths block joins the tail's reduction if the powers reach: one of the table's
    // powers is the lengths block's, so 15 blocks at most. Made here, not before the bulk
    // loop, where it would hold a register through it.
    let lens = lens
        .filter(|_| HASH && rem <= 16 * (HPowers::COUNT - 1))
        .map(|(aad_len, len)| lengths_block(aad_len, len));
    // SAFETY: `off + rem == io.len`.
    let x = unsafe { tail::<NR, ENC, HASH>(&key.h, &rk, ctr, x, io.skip(off), lens, keystream) };
    (x, lens.is_some())
}

/// The last `io.len` (1..256) bytes, with byte-masked loads and stores; with `lens` (the
/// associated data's and the message's lengths; `io.len` at most 15 blocks), their block
/// hashed in the same reduction, so that what is returned is the whole GHASH (see
/// [`hash_tail`]). `keystream` is the tail's, if the caller made it already (see
/// [`tail_keystream`]); otherwise it is made here from the little-endian counters `ctr`,
/// after an open's hash is issued: with its AES issued first (made by the caller), opens
/// were 2-3% slower (Zen 4, 784 B to 1350 B, measured as in `bulk_with`).
///
/// # Safety
/// `io.len` is 1 to 255, and `io` satisfies the contract of [`InOut::new`].
#[inline]
#[target_feature(
    enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
)]
unsafe fn tail<const NR: usize, const ENC: bool, const HASH: bool>(
    h: &HPowers,
    rk: &[__m512i; 15],
    ctr: __m512i,
    mut x: __m128i,
    io: InOut,
    lens: Option<__m128i>,
    keystream: Option<[__m512i; VECS]>,
) -> __m128i {
    let rem = io.len;
    let masks: [__mmask64; VECS] = core::array::from_fn(|i| byte_mask(rem, i));
    let input: [__m512i; VECS] = core::array::from_fn(|i| {
        if masks[i] == 0 {
            return _mm512_setzero_si512();
        }
        // SAFETY: the mask selects only bytes below `rem`, inside the input; masked-off
        // bytes are neither read nor faulted on.
        unsafe { _mm512_maskz_loadu_epi8(masks[i], io.src.wrapping_add(64 * i).cast()) }
    });
    let n = rem.div_ceil(16);
    if HASH && !ENC {
        x = hash_tail(h, x, &input, n, lens);
    }
    let keystream = keystream.unwrap_or_else(|| {
        // SAFETY: this function has the kernel's features.
        unsafe { tail_keystream::<NR>(rk, ctr, n) }
    });
    let out: [__m512i; VECS] = core::array::from_fn(|i| _mm512_xor_si512(keystream[i], input[i]));
    for i in 0..VECS {
        if masks[i] != 0 {
            // SAFETY: as for the loads, on the output.
            unsafe {
                _mm512_mask_storeu_epi8(io.dst.wrapping_add(64 * i).cast(), masks[i], out[i])
            };
        }
    }
    if HASH && ENC {
        // Keystream beyond the message is not ciphertext: mask it off before hashing.
        let ct: [__m512i; VECS] = core::array::from_fn(|i| _mm512_maskz_mov_epi8(masks[i], out[i]));
        x = hash_tail(h, x, &ct, n, lens);
    }
    x
}

/// The keystream of a tail of `n` (1..=16) blocks from the little-endian counters `ctr`:
/// only as many vectors as hold data go through AES, so short tails pay for one.
///
/// Always inlined, so that a seal can make it inside its last whole step (see
/// `bulk_with`); as a `#[target_feature]` function LLVM called it out of line there, with
/// the loop's vectors spilled around the call, and the seal was no faster for it.
///
/// # Safety
/// The CPU has this kernel's features (the caller is one of its `#[target_feature]`
/// functions).
#[inline(always)]
unsafe fn tail_keystream<const NR: usize>(
    rk: &[__m512i; 15],
    ctr: __m512i,
    n: usize,
) -> [__m512i; VECS] {
    // SAFETY: the caller's contract: the CPU has the features.
    unsafe {
        match n.div_ceil(4) {
            1 => widen(keystream::<NR, 1>(rk, ctr)),
            2 => widen(keystream::<NR, 2>(rk, ctr)),
            3 => widen(keystream::<NR, 3>(rk, ctr)),
            _ => keystream::<NR, 4>(rk, ctr),
        }
    }
}

/// The keystream of `N` vectors of counters from the little-endian `ctr`.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx2")]
fn keystream<const NR: usize, const N: usize>(rk: &[__m512i; 15], ctr: __m512i) -> [__m512i; N] {
    let zero = _mm512_setzero_si512();
    let no_carry = Carry::<false> {
        lanes: zero,
        h16: zero,
    };
    let none = [zero; VECS];
    let counters = counters(ctr, rk[0]);
    stitched::<NR, false, N, false>(
        rk,
        counters,
        &[zero; N],
        &none,
        &Powers::unused(),
        &no_carry,
    )
    .0
}

#[inline(always)]
fn widen<const N: usize>(v: [__m512i; N]) -> [__m512i; VECS] {
    // SAFETY: an all-zero bit pattern is a valid __m512i.
    let mut out = [unsafe { core::mem::zeroed::<__m512i>() }; VECS];
    out[..N].copy_from_slice(&v);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x86_64::{Tuning, aes_ni};

    fn bytes(v: __m128i) -> [u8; 16] {
        // SAFETY: 16 bytes to 16 bytes; every bit pattern is a valid `[u8; 16]`.
        unsafe { core::mem::transmute(v) }
    }

    /// Seals (or opens) `buf` in place with the key's tuning forced to `tuning`.
    #[target_feature(
        enable = "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,aes,pclmulqdq,ssse3,sse4.1"
    )]
    fn run<const ENC: bool>(
        hk: &HwKey,
        t: Vaes512Token,
        tuning: Tuning,
        aad: &[u8],
        buf: &mut [u8],
    ) -> [u8; 16] {
        let mut hk = hk.clone();
        hk.tuning = tuning;
        let j0 = u128::from_le_bytes([7u8; 16]);
        let p = buf.as_mut_ptr();
        // SAFETY: in place on the whole of `buf`, one pointer for both sides.
        unsafe {
            let io = InOut::new(p.cast_const(), p, buf.len());
            seal_or_open_routed::<ENC>(&hk, t, j0, true, aad, io)
        }
    }

    /// Seals `data` with every one of `tunings` and checks the tag and ciphertext against
    /// `reference`'s, then opens and checks the tag and the plaintext.
    fn agree(
        hk: &HwKey,
        t: Vaes512Token,
        reference: Tuning,
        tunings: &[Tuning],
        aad: &[u8],
        data: &[u8],
    ) {
        let (len, aad_len, rounds) = (data.len(), aad.len(), hk.aes.rounds);
        let mut expected = [0u8; 4200];
        expected[..len].copy_from_slice(data);
        // SAFETY: the token proves the features.
        let tag = unsafe { run::<true>(hk, t, reference, aad, &mut expected[..len]) };
        for &tuning in tunings {
            let what = (tuning, rounds, len, aad_len);
            let mut buf = [0u8; 4200];
            buf[..len].copy_from_slice(data);
            // SAFETY: as above.
            let seal = unsafe { run::<true>(hk, t, tuning, aad, &mut buf[..len]) };
            assert_eq!(
                seal, tag,
                "seal tag; tuning, rounds, bytes, AD bytes: {what:?}"
            );
            assert!(buf[..len] == expected[..len], "ciphertext; {what:?}");
            // SAFETY: as above.
            let open = unsafe { run::<false>(hk, t, tuning, aad, &mut buf[..len]) };
            assert_eq!(open, tag, "open's tag; {what:?}");
            assert!(buf[..len] == *data, "plaintext back; {what:?}");
        }
    }

    /// Every tuning (see `Tuning`: Karatsuba or schoolbook products and the carry folded
    /// or multiplied, short messages on the 256-bit kernel's one-pass paths or this
    /// one's, at their bounds and the associated data's) gives the
    /// same tag and ciphertext on every length class of message and associated data,
    /// whichever this CPU's keys use.
    #[test]
    fn every_tuning_agrees() {
        let Some(t) = Vaes512Token::new() else { return };
        let data: [u8; 1400] = core::array::from_fn(|i| (i * 29 % 253) as u8);
        let lens: &[usize] = if cfg!(miri) {
            &[17, 513, 1100]
        } else {
            &[
                0, 1, 15, 16, 17, 47, 48, 49, 127, 128, 224, 225, 255, 256, 257, 464, 465, 480,
                511, 512, 513, 528, 672, 673, 767, 768, 1024, 1100, 1400,
            ]
        };
        let routes = [
            ShortIn256Bits::None,
            ShortIn256Bits::OnePass,
            ShortIn256Bits::Groups,
        ];
        // Every route with fewer multiplies or not, and opens hashing late or not.
        let tunings =
            [(false, false), (true, false), (false, true), (true, true)].map(|(f, late)| {
                routes.map(move |s| Tuning {
                    save_multiplies: f,
                    short_in_256_bits: s,
                    pair_reduction: false,
                    open_hashes_late: late,
                })
            });
        // Associated data of one block, at and just past the 256-bit kernel's bound (see
        // `seal_or_open_routed`), and of one and of two 16-block steps with a tail.
        let aad: [u8; 700] = core::array::from_fn(|i| (i * 7 % 251) as u8);
        let aad_lens: &[usize] = if cfg!(miri) {
            &[15, 300]
        } else {
            &[15, 64, 65, 300, 700]
        };
        for key_len in [16, 24, 32] {
            let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 3 + key_len as u8);
            let hk = HwKey::new(&key[..key_len], t.aesni());
            for (&len, &aad_len) in lens
                .iter()
                .flat_map(|l| aad_lens.iter().map(move |a| (l, a)))
            {
                let tunings = tunings.as_flattened();
                agree(
                    &hk,
                    t,
                    Tuning::default(),
                    tunings,
                    &aad[..aad_len],
                    &data[..len],
                );
            }
        }
    }

    /// The high powers, derived as a key with the pair tuning derives them (from the low
    /// ones in registers), are `H^16` times the low ones, as the scalar code multiplies;
    /// and the low ones are those of the 128-bit derivation.
    #[test]
    fn high_powers_are_h16_times_low() {
        let Some(t) = Vaes512Token::new() else { return };
        let reference = HwKey::new(&[0x5au8; 16], t.aesni());
        let mut hk = HwKey::ZERO;
        hk.aes = reference.aes.clone();
        hk.tuning.pair_reduction = true;
        // SAFETY: the token proves AES-NI.
        let h = unsafe { aes_ni::encrypt_block(&hk.aes, _mm_setzero_si128()) };
        derive_powers(h, t, &mut hk);
        assert!(
            (0..HPowers::LEN).all(|k| bytes(hk.h.0[k]) == bytes(reference.h.0[k])
                && bytes(hk.hx.0[k]) == bytes(reference.hx.0[k])),
            "low powers or their factors"
        );
        // SAFETY: the token proves PCLMULQDQ and SSE2.
        let mul = |a, b| unsafe { crate::x86_64::clmul::mont_mul(a, b) };
        for k in 0..16 {
            let expected = mul(hk.h.0[0], hk.h.0[k]);
            assert_eq!(bytes(hk.h_high.0[k]), bytes(expected), "H^{}", 32 - k);
            let x = bytes(expected);
            let halves: [u8; 8] = core::array::from_fn(|i| x[i] ^ x[i + 8]);
            assert_eq!(
                bytes(hk.hx_high.0[k])[..8],
                halves,
                "factor of H^{}",
                32 - k
            );
        }
    }

    /// One reduction per 32 blocks (`Tuning::pair_reduction`) gives the tag and ciphertext
    /// of one per 16, sealing and opening, on message lengths whose step count ends a pair
    /// on either half, with and without a tail, just below its threshold and above it.
    #[test]
    fn pair_reduction_agrees() {
        let Some(t) = Vaes512Token::new() else { return };
        let data: [u8; 4200] = core::array::from_fn(|i| (i * 31 % 251) as u8);
        let aad: [u8; 300] = core::array::from_fn(|i| (i * 7 % 251) as u8);
        let (lens, aad_lens): (&[usize], &[usize]) = if cfg!(miri) {
            (&[2320], &[15])
        } else {
            (
                &[2047, 2048, 2049, 2303, 2304, 2320, 2600, 4096, 4111, 4200],
                &[0, 15, 300],
            )
        };
        let pair = Tuning {
            save_multiplies: true,
            short_in_256_bits: ShortIn256Bits::Groups,
            pair_reduction: true,
            open_hashes_late: false,
        };
        let pair_late = Tuning {
            open_hashes_late: true,
            ..pair
        };
        let single = Tuning {
            pair_reduction: false,
            ..pair
        };
        for key_len in [16, 32] {
            let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 5 + key_len as u8);
            let mut hk = HwKey::new(&key[..key_len], t.aesni());
            // SAFETY: the token proves the features.
            unsafe { high_powers_into(powers16(&hk.h), &mut hk, t) };
            for &len in lens {
                for &aad_len in aad_lens {
                    agree(
                        &hk,
                        t,
                        single,
                        &[pair, pair_late],
                        &aad[..aad_len],
                        &data[..len],
                    );
                }
            }
        }
    }
}

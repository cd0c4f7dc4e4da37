//! AES-GCM with AES-NI and PCLMULQDQ on 128-bit vectors.
//!
//! The bulk loop takes 8 blocks per iteration and runs the AES rounds of those blocks
//! with the GHASH multiplications of 8 ciphertext blocks woven between them (see
//! [`batches`]). Decryption hashes the ciphertext it is about to decrypt (it is input);
//! encryption hashes its output two batches behind, read back from the output buffer,
//! and hashes the last two batches after the loop.
//!
//! The loop is bound by throughput, not latency: on the core it was tuned on (two AES
//! units and one carry-less multiplier on three vector ports, which every XOR, shuffle
//! and add shares) by the vector ports; on cores with one AES unit (Skylake and older)
//! mostly by the AES rounds, with the rest competing for the same ports. Either way what
//! pays is fewer vector operations per block:
//! counters are made with one XOR per block where the nonce allows (see [`Counters`]),
//! and the final round XORs the input into the last round key
//! (`AESENCLAST(s, k ^ in) = AESENCLAST(s, k) ^ in`).
//!
//! On AMD (`Tuning::save_multiplies`) the products are in Karatsuba form, three
//! `PCLMULQDQ` per block instead of four, for a shuffle and an XOR more: AMD cores issue
//! one carry-less multiply every other cycle, so four a block (8 cycles) outlast even
//! AES-256's 14 rounds on two AES units (7). Measured on AMD Zen 5 (family 0x1a model 2,
//! this back end forced; its 128-bit `PCLMULQDQ` also one every other cycle), TSC per
//! call alternated in one process, three runs, Karatsuba against schoolbook: AES-128
//! seal / open 0.84-0.85 / 0.82-0.83 at 16 KiB, 0.84-0.90 / 0.84-0.90 at 4 KiB,
//! 0.89-0.91 / 0.86-0.92 at 1350 bytes, 0.94-0.99 / 0.91-0.94 at 256 bytes; AES-256
//! 0.88-0.91 / 0.83-0.84 at 16 KiB, 0.89-0.94 / 0.86-0.89 at 1350 bytes. Intel keeps
//! the schoolbook form: there the multiplier takes one a cycle on a port of its own, and
//! the extra shuffles would share the ports the AES rounds and the XORs use.
//!
//! On CPUs with AVX the bulk loop is compiled a second time in VEX encoding
//! ([`batches_vex`], reached through the entry points in [`vex`]): the AES-NI back end
//! also serves CPUs without AVX (Westmere, the Goldmont Atoms), which need the SSE one.
//!
//! Against aws-lc-rs held to its AES-NI + AVX code (`OPENSSL_ia32cap` masking VAES,
//! VPCLMULQDQ and AVX-512) on that Zen 5, AES-128 / AES-256 seal at 16 KiB: schoolbook
//! SSE 0.94x / 0.90x; Karatsuba SSE 1.12-1.13x / 1.03x; Karatsuba VEX 1.21-1.22x /
//! 1.10x (1350 bytes: 1.27-1.34x / 1.21x). A proxy for the AMD cores without VAES that
//! take this back end by default (Zen 1 and 2), which were not measured. On an AMD EPYC
//! Zen 4 (family 25 model 17), same comparison (benches/RESULTS.md, `make-results.sh`, 11
//! rounds, best of aws-lc-rs and OpenSSL), after the rounds were written out and pinned
//! (see `batches_body`), 1350 B / 4 KiB / 16 KiB: AES-128 seal 1.15 / 1.26 / 1.22, open
//! 1.33 / 1.12 / 1.26; AES-256 seal 1.20 / 1.11 / 1.06, open 1.19 / 1.14 / 1.20 (another
//! 11-round run the same day: 1.13-1.29 in every cell). The table before: AES-256 seal
//! 1.05 / 0.97 / 0.98, open 1.14 / 1.12 / 1.02.
//!
//! Fewer than 8 blocks at the end go through a stack buffer, and are hashed with one
//! aggregated multiplication by `H^n ... H^1`. The VAES kernels read and write their
//! tails in place and hash the lengths block in the tail's reduction; here the same
//! (`partial`'s block loads and stores, the keystream blocks side by side, the lengths
//! block folded in) measured slower on an AMD EPYC Zen 4 (family 25 model 17, this back
//! end forced, TSC ticks per call, fastest of 10000 batches of eight, three runs
//! alternated): open 200 B 250-266 -> 240-334, AES-256 open 136 B 204-214 -> 237-247,
//! 464 B 396-403 -> 458-471, 1350 B 913-929 -> 955-968; seal mixed (AES-128 232 B 276-282
//! -> 247-325). Not kept. A seal makes its tail's keystream before the batches, so that
//! its latency hides behind them (see `tail_keystream`).

use super::clmul::{self, Wide, bswap};
use super::counters::DeltaCursor;
use super::partial;
use super::{
    AesNiToken, FIRST_PART, HPowers, HwKey, InOut, LAST_PART, MIDDLE_PART, WHOLE, aes_ni,
    finish_tag, lengths_block, load_j0, load16, read_tail, store16, tag_mask_now, unshared,
    write_tail,
};
use core::arch::x86_64::*;

const BLOCKS: usize = 8;
const CHUNK: usize = 16 * BLOCKS;

kernel_entry_points!(AesNiToken, "aes,pclmulqdq,ssse3,sse4.1", tuned);

/// The entry points with the bulk loop in VEX encoding ([`batches_vex`]), for CPUs with
/// AVX (`AesNiAvxToken`); everything else is the same kernel.
pub(crate) mod vex {
    use super::*;
    use crate::x86_64::AesNiAvxToken;

    kernel_entry_points!(AesNiAvxToken, "aes,pclmulqdq,ssse3,sse4.1,avx", tuned);

    /// [`super::gcm`] with the VEX bulk loop.
    ///
    /// # Safety
    /// `io` must satisfy the contract of [`InOut::new`](super::super::InOut::new).
    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx")]
    unsafe fn gcm<const NR: usize, const ENC: bool, const KARATSUBA: bool>(
        key: &HwKey,
        t: AesNiAvxToken,
        j0: u128,
        nonce96: bool,
        aad: &[u8],
        io: InOut,
    ) -> [u8; 16] {
        // SAFETY: forwarded contract; the token proves AVX.
        unsafe { gcm_with::<NR, ENC, KARATSUBA, true>(key, t.aesni(), j0, nonce96, aad, io) }
    }

    /// [`super::bulk`] with the VEX bulk loop (for the CTR entry point).
    ///
    /// # Safety
    /// `io` must satisfy the contract of [`InOut::new`](super::super::InOut::new).
    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx")]
    unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
        key: &HwKey,
        ctr: __m128i,
        public: bool,
        x: __m128i,
        io: InOut,
    ) -> __m128i {
        // SAFETY: forwarded contract; this function has AVX.
        unsafe { bulk_with::<NR, ENC, HASH, false, true>(key, ctr, public, x, io) }
    }
}

/// The whole of a seal or open (see `kernel_entry_points!`); also the `Vaes256` kernel's
/// path for messages shorter than its 8-block step.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`](super::InOut::new).
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
pub(super) unsafe fn gcm<const NR: usize, const ENC: bool, const KARATSUBA: bool>(
    key: &HwKey,
    t: AesNiToken,
    j0: u128,
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    // SAFETY: forwarded contract; no VEX.
    unsafe { gcm_with::<NR, ENC, KARATSUBA, false>(key, t, j0, nonce96, aad, io) }
}

/// [`gcm`], with the bulk loop in VEX encoding when `VEX`.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`](super::InOut::new), and with `VEX`
/// the CPU must have AVX.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn gcm_with<const NR: usize, const ENC: bool, const KARATSUBA: bool, const VEX: bool>(
    key: &HwKey,
    _t: AesNiToken,
    j0: u128,
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let j0 = load_j0(j0);
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    if na <= SHORT_AAD_BLOCKS && nc <= SHORT_MSG_BLOCKS {
        // With AMD's tuning, messages of one or two blocks multiply in Karatsuba form
        // (and an open hashes its input before the AES, see `short_message`). Measured
        // as in `short_groups`, AES-128 / AES-256, schoolbook -> Karatsuba: open 1 B 70 /
        // 75 -> 63 / 66, 16 B 66 / 75 -> 61 / 63, 32 B 72 / 78 -> 69 / 76; seals within
        // 2 ticks. From three blocks on opens were no faster, some slower (48 B AES-256
        // 89 -> 102, 112 B 137 -> 147).
        // SAFETY: forwarded contract; the sizes are checked above.
        return unsafe {
            if KARATSUBA && nc <= 2 {
                short::<NR, ENC, true>(key, j0, aad, io)
            } else {
                short::<NR, ENC, false>(key, j0, aad, io)
            }
        };
    }
    if na <= SHORT_AAD_BLOCKS && nc <= 2 * SHORT_MSG_BLOCKS && na + nc < HPowers::COUNT {
        // With AMD's tuning, opens multiply in Karatsuba form (measured as in
        // `short_groups`, AES-128 / AES-256, schoolbook -> Karatsuba: 128 B 143 / 164 ->
        // 138 / 157, 192 B 185 / 220 -> 177 / 208, 224 B 212 / 264 -> 189 / 228); seals
        // were slower so (128 B 142 / 164 -> 162 / 186, 192 B 175 / 216 -> 208 / 243).
        // SAFETY: forwarded contract; the sizes are checked above.
        return unsafe {
            if KARATSUBA && !ENC {
                short_two_batches::<NR, ENC, true>(key, j0, aad, io)
            } else {
                short_two_batches::<NR, ENC, false>(key, j0, aad, io)
            }
        };
    }
    if KARATSUBA && na <= SHORT_AAD_BLOCKS {
        let m = first_group_blocks(na);
        let most = if ENC {
            m + HPowers::COUNT - 1
        } else {
            OPEN_GROUPS_MAX_BLOCKS
        };
        // AES-128 opens of two whole batches stay on the bulk loop, which has no tail
        // then (Zen 4, as in `short_groups`: 221 TSC ticks there against 233 here).
        let whole_pair = !ENC && NR == 10 && io.len == 2 * CHUNK;
        if m < nc && nc <= most && !whole_pair {
            // SAFETY: forwarded contract; the sizes are checked above and the two short
            // paths' checks failed.
            return unsafe { short_groups::<NR, ENC>(key, j0, aad, io) };
        }
    }
    // Seal encrypts E(J0) here (see `tag_mask_now`); open measured no better so, some
    // sizes slower (AES-128 200 B 263 -> 312 TSC ticks on Zen 4), and leaves it to LLVM.
    let tag_mask = if ENC {
        tag_mask_now::<NR>(&key.aes.rk, j0)
    } else {
        aes_ni::encrypt1::<NR>(&key.aes.rk, j0)
    };
    let x = clmul::update(&key.h, _mm_setzero_si128(), aad);
    let ctr = _mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1));
    // SAFETY: forwarded contract.
    let x = unsafe { bulk_with::<NR, ENC, true, KARATSUBA, VEX>(key, ctr, nonce96, x, io) };
    finish_tag(&key.h, x, aad.len(), io.len, tag_mask)
}

/// Associated data of up to 4 blocks and messages of up to 7 take the short path: with
/// `J0`, at most 8 AES blocks, and at most 12 blocks to hash, within the 16 powers. So
/// do seals and opens of up to 14 blocks whose blocks to hash fit the 16 powers, their
/// AES in two batches of at most 8 ([`short_two_batches`]), and with AMD's tuning,
/// longer ones of up to 29 blocks in two groups ([`short_groups`]).
pub(super) const SHORT_AAD_BLOCKS: usize = 4;
const SHORT_MSG_BLOCKS: usize = 7;
/// [`short_groups`] takes opens of up to this many blocks (304 bytes); longer ones, from
/// 20 blocks on, ran as fast or faster in the bulk loop, which hashes as it decrypts
/// (measured as in [`short_groups`], AES-128 / AES-256, bulk -> groups: 320 B 281 / 313
/// -> 279 / 311, 336 B 287 / 323 -> 287 / 320, 384 B 279 / 378 -> 320 / 386, 464 B
/// 340 / 386 -> 344 / 383).
const OPEN_GROUPS_MAX_BLOCKS: usize = 19;

/// A whole message of a few blocks (see the bounds above): the AES of `J0` (for the tag)
/// and of the message's counter blocks run side by side, and every GHASH input block
/// (associated data, ciphertext, lengths) is multiplied by its own power of `H`, from
/// `H^n` for the first to `H^1` for the lengths, with a single reduction. The general
/// path reduces after the associated data, after the message and after the lengths
/// block: for a record of one or two blocks, those three serial reductions and the copies
/// through the tail buffer are most of the time. The blocks are read and written in
/// place (see `partial`), not through a stack buffer.
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the associated data is at most
/// `SHORT_AAD_BLOCKS` blocks and the message at most `SHORT_MSG_BLOCKS`.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short<const NR: usize, const ENC: bool, const KARATSUBA: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    let first = HPowers::COUNT - (na + nc + 1);
    let mut w = Wide::zero();
    // SAFETY: this function has the kernel's features.
    unsafe { hash_aad::<KARATSUBA>(key, aad, first, &mut w) };
    macro_rules! message {
        ($($n:literal)*) => {
            match nc {
                0 => aes_ni::encrypt1::<NR>(&key.aes.rk, j0),
                $($n => short_message::<NR, ENC, $n, WHOLE, KARATSUBA>(key, j0, io, &mut w, first + na),)*
                _ => short_message::<NR, ENC, SHORT_MSG_BLOCKS, WHOLE, KARATSUBA>(key, j0, io, &mut w, first + na),
            }
        };
    }
    // SAFETY: forwarded contract; the message is `nc` blocks long.
    let tag_mask = unsafe { message!(1 2 3 4 5 6) };
    // SAFETY: this function has the kernel's features.
    unsafe { finish::<KARATSUBA>(key, w, aad.len(), io.len, tag_mask) }
}

/// A seal or open of 8 to 14 blocks whose blocks to hash (with the associated data and
/// the lengths block) fit the 16 powers: as [`short`], one sum and one reduction, with
/// the AES in two batches of side-by-side chains, `J0` and the first 7 blocks, then the
/// rest, the second independent of the first. Before, these seals ran the bulk loop:
/// three reductions one after the other and its tail buffer. TSC ticks per call on an
/// AMD EPYC Zen 4 (family 25 model 17), this back end forced, measured as in
/// `vaes256_gcm::short_groups`, AD 13 bytes, AES-128 / AES-256, bulk -> here: 128 B
/// 199 / 196 -> 169 / 197, 144 B 279 / 316 -> 174 / 205, 160 B 280 / 323 -> 184 / 217,
/// 192 B 281 / 327 -> 200 / 242, 224 B 267 / 339 -> 226 / 280.
///
/// Opens first stayed on the bulk loop, which hashes as it decrypts: through here they
/// then ran 1-20% faster with AES-128 but up to 9% slower with AES-256 (224 B 261 ->
/// 285), depending on how the compiler laid out the two batches' registers (16 of them,
/// 15 round keys). Measured again after the bulk loop's tail changed (its keystream made
/// before the batches, the partial block masked in a register), same method, bulk ->
/// here: AES-128 / AES-256 open 128 B 163 / 231 -> 141 / 164, 144 B 193 / 259 -> 151 /
/// 174, 160 B 206 / 260 -> 161 / 188, 192 B 221 / 250 -> 189 / 222, 224 B 239 / 273 ->
/// 215 / 262; so opens come here too. Inside [`short`], the seals were as fast, but
/// `short`'s own AES-256 messages of 16 bytes took 2 ticks more. The associated data's
/// loop and the end are [`hash_aad`] and [`finish`], always inlined (as
/// `#[target_feature]` helpers, which may be called out of line, the two cost
/// `vaes256_gcm`'s short path 7 ticks). Against the loop written out in each path they
/// measured the same, within a tick or two, 1 to 464 bytes (this back end forced, Zen 4).
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the associated data is at most
/// `SHORT_AAD_BLOCKS` blocks, the message more than `SHORT_MSG_BLOCKS` and at most twice
/// that, and the two together fewer than `HPowers::COUNT`.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short_two_batches<const NR: usize, const ENC: bool, const KARATSUBA: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    let first = HPowers::COUNT - (na + nc + 1);
    let mut w = Wide::zero();
    // SAFETY: this function has the kernel's features.
    unsafe { hash_aad::<KARATSUBA>(key, aad, first, &mut w) };
    let (head, rest) = (
        io.take(16 * SHORT_MSG_BLOCKS),
        io.skip(16 * SHORT_MSG_BLOCKS),
    );
    // SAFETY: forwarded contract (a prefix of `io`); 7 blocks.
    let tag_mask = unsafe {
        short_message::<NR, ENC, SHORT_MSG_BLOCKS, FIRST_PART, KARATSUBA>(
            key,
            j0,
            head,
            &mut w,
            first + na,
        )
    };
    // The rest's counters start 7 blocks on.
    let j0_on = counter_at(j0, 16 * SHORT_MSG_BLOCKS);
    let first = first + na + SHORT_MSG_BLOCKS;
    // SAFETY: forwarded contract (the rest of `io`); 1 to 7 blocks.
    unsafe { last_part::<NR, ENC, KARATSUBA>(key, j0_on, rest, &mut w, first) };
    // SAFETY: this function has the kernel's features.
    unsafe { finish::<KARATSUBA>(key, w, aad.len(), io.len, tag_mask) }
}

/// The associated data's part of the short paths: each of its blocks (the last
/// zero-padded) multiplied by its own power, from table index `first` on, into `w`.
/// Inlined into each, as [`finish`] is.
///
/// # Safety
/// The CPU has this kernel's features.
#[inline(always)]
unsafe fn hash_aad<const KARATSUBA: bool>(key: &HwKey, aad: &[u8], first: usize, w: &mut Wide) {
    for j in 0..aad.len().div_ceil(16) {
        // SAFETY: the caller guarantees the kernel's features; `aad` is readable, and `j`
        // is one of its blocks.
        unsafe {
            let b = partial::load_block(aad.as_ptr(), aad.len(), j);
            mul_add_power::<KARATSUBA>(w, key, bswap(b), first + j);
        }
    }
}

/// The end of the short paths: the lengths block by `H`, one reduction, the tag.
/// Inlined into each (as a `#[target_feature]` function shared by them it could be
/// called out of line, which cost `vaes256_gcm`'s short path; see `short_two_batches`).
///
/// # Safety
/// The CPU has this kernel's features.
#[inline(always)]
unsafe fn finish<const KARATSUBA: bool>(
    key: &HwKey,
    mut w: Wide,
    aad_len: usize,
    len: usize,
    tag_mask: __m128i,
) -> [u8; 16] {
    // SAFETY: the caller guarantees the kernel's features.
    unsafe {
        let lengths = lengths_block(aad_len, len);
        mul_add_power::<KARATSUBA>(&mut w, key, lengths, HPowers::COUNT - 1);
        let w = if KARATSUBA { w.into_schoolbook() } else { w };
        let mut tag = [0u8; 16];
        store16(&mut tag, _mm_xor_si128(bswap(w.reduce()), tag_mask));
        tag
    }
}

/// The message blocks of [`short_groups`]'s first group: as many as fit beside `na`
/// blocks of associated data within `HPowers::COUNT` powers, at most two batches of
/// [`SHORT_MSG_BLOCKS`] (14 with up to 2 blocks of associated data, 13 with 3, 12 with
/// 4).
const fn first_group_blocks(na: usize) -> usize {
    let fit = HPowers::COUNT.saturating_sub(na);
    if fit < 2 * SHORT_MSG_BLOCKS {
        fit
    } else {
        2 * SHORT_MSG_BLOCKS
    }
}

/// A seal or open too long for [`short_two_batches`] whose blocks after the first group
/// ([`first_group_blocks`]) fit with the lengths block in `HPowers::COUNT` (up to 29
/// blocks, 464 bytes, beside 1 or 2 blocks of associated data), in one pass as
/// `vaes256_gcm::short_groups` takes them: the associated data and the first group
/// multiplied by `H^(na + m)` down to `H^1` and reduced, the rest of the message and the
/// lengths block by `H^(n + 1)` down to `H^1`, with the first group's sum joining as one
/// more product by `H^(n + 1)` (GHASH's value just before the rest's first block). The
/// AES runs in batches of at most [`SHORT_MSG_BLOCKS`] side-by-side chains, `J0` beside
/// the first; the first group's reduction comes after the rest's AES in program order.
/// Opens hash each batch's input before its AES (`short_message`).
///
/// Taken only with AMD's tuning (`KARATSUBA`), with the products in Karatsuba form,
/// and opens only up to [`OPEN_GROUPS_MAX_BLOCKS`]; these messages ran the bulk loop and
/// its tail before, and still do on Intel, where this path was not measured. Measured
/// on an AMD EPYC Zen 4 (family 25 model 17), this back end forced, TSC ticks per call
/// (the 20th percentile of 40 runs of 50000 calls back to back in place, best of three
/// alternated processes), AD 13 bytes, AES-128 / AES-256, bulk -> here: seal 240 B 246 /
/// 302 -> 210 / 235, 256 B 234 / 293 -> 215 / 244, 272 B 271 / 323 -> 225 / 257, 320 B
/// 292 / 359 -> 251 / 296, 384 B 294 / 379 -> 300 / 345, 464 B 364 / 437 -> 360 / 405;
/// open 240 B 249 / 333 -> 220 / 256, 256 B (AES-256) 317 -> 278, 272 B 252 / 343 ->
/// 244 / 287, 304 B 271 / 349 -> 263 / 308. With schoolbook products the seals were
/// slower than the bulk loop at most sizes (256 B 234 / 313 -> 371 / 331, 384 B 307 /
/// 467 -> 484 / 526), and hashing an open's batches after their AES cost it 2-5% (240 B
/// 232 / 272 against 222 / 261). Groups of 14 between the first and the last, for seals
/// of up to 42 blocks as `vaes256_gcm::short_groups` has, were no faster than the bulk
/// loop (480 B 372 / 453 -> 376 / 417, 512 B 364 / 434 -> 395 / 445, 672 B 460 / 525 ->
/// 493 / 567).
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the associated data is at most
/// `SHORT_AAD_BLOCKS` blocks, the message longer than [`first_group_blocks`] and shorter
/// than that plus `HPowers::COUNT`.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short_groups<const NR: usize, const ENC: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    let m = first_group_blocks(na);
    debug_assert!(m < nc && nc < m + HPowers::COUNT);
    let first = HPowers::COUNT - (na + m);
    // Products in Karatsuba form (`true` below): only AMD's tuning takes this path.
    let mut first_group = Wide::zero();
    // SAFETY: this function has the kernel's features.
    unsafe { hash_aad::<true>(key, aad, first, &mut first_group) };
    let w = &mut first_group;
    let first = first + na;
    // SAFETY: forwarded contract; the first group is `m` whole blocks of `io` (the
    // message is longer), 7 here and `m - 7` below.
    let tag_mask = unsafe {
        short_message::<NR, ENC, SHORT_MSG_BLOCKS, FIRST_PART, true>(
            key,
            j0,
            io.take(16 * SHORT_MSG_BLOCKS),
            w,
            first,
        )
    };
    let second = io
        .skip(16 * SHORT_MSG_BLOCKS)
        .take(16 * (m - SHORT_MSG_BLOCKS));
    let (j0_on, first_second) = (
        counter_at(j0, 16 * SHORT_MSG_BLOCKS),
        first + SHORT_MSG_BLOCKS,
    );
    // SAFETY: as above; `m - 7` is 7, 6 or 5.
    unsafe {
        match m {
            14 => {
                short_message::<NR, ENC, 7, MIDDLE_PART, true>(key, j0_on, second, w, first_second)
            }
            13 => {
                short_message::<NR, ENC, 6, MIDDLE_PART, true>(key, j0_on, second, w, first_second)
            }
            _ => {
                short_message::<NR, ENC, 5, MIDDLE_PART, true>(key, j0_on, second, w, first_second)
            }
        }
    };

    // The rest, 1 to 15 blocks: batches of 7, the last of 1 to 7.
    let rest = io.skip(16 * m);
    let n = rest.len.div_ceil(16);
    let first = HPowers::COUNT - (n + 1);
    let mut w = Wide::zero();
    let mut done = 0;
    while rest.len - done > 16 * SHORT_MSG_BLOCKS {
        let batch = rest.skip(done).take(16 * SHORT_MSG_BLOCKS);
        // SAFETY: forwarded contract (7 whole blocks of the rest).
        unsafe {
            short_message::<NR, ENC, SHORT_MSG_BLOCKS, MIDDLE_PART, true>(
                key,
                counter_at(j0, 16 * m + done),
                batch,
                &mut w,
                first + done / 16,
            )
        };
        done += 16 * SHORT_MSG_BLOCKS;
    }
    let (last, j0_on, first_last) = (
        rest.skip(done),
        counter_at(j0, 16 * m + done),
        first + done / 16,
    );
    // SAFETY: forwarded contract (the end of `io`); 1 to 7 blocks.
    unsafe { last_part::<NR, ENC, true>(key, j0_on, last, &mut w, first_last) };
    let x = first_group.into_schoolbook().reduce();
    mul_add_power::<true>(&mut w, key, x, first);
    // SAFETY: this function has the kernel's features.
    unsafe { finish::<true>(key, w, aad.len(), io.len, tag_mask) }
}

/// The last part of a message taken in parts ([`short_two_batches`], [`short_groups`]):
/// the 1 to 7 blocks of `io` from counter block `j0` on (as [`short_message`] takes it),
/// hashed into `w` with the powers from entry `first` on. Inlined into each caller, so
/// that each has its own `short_message` instances (see `super::LAST_PART`).
///
/// # Safety
/// The CPU has this kernel's features; `io` satisfies the contract of [`InOut::new`]
/// and is 1 to 7 blocks long.
#[inline(always)]
unsafe fn last_part<const NR: usize, const ENC: bool, const KARATSUBA: bool>(
    key: &HwKey,
    j0: __m128i,
    io: InOut,
    w: &mut Wide,
    first: usize,
) {
    macro_rules! last {
        ($($n:literal)*) => {
            match io.len.div_ceil(16) {
                $($n => short_message::<NR, ENC, $n, LAST_PART, KARATSUBA>(key, j0, io, w, first),)*
                _ => short_message::<NR, ENC, SHORT_MSG_BLOCKS, LAST_PART, KARATSUBA>(key, j0, io, w, first),
            }
        };
    }
    // SAFETY: forwarded contract; `io` is 1 to 7 blocks long.
    unsafe { last!(1 2 3 4 5 6) };
}

/// `J0` as [`short_message`] takes it, moved on by the `done` bytes (whole blocks)
/// before a batch: GCM's 32-bit counter word plus `done / 16`, wrapping as GCM's does.
#[inline]
#[target_feature(enable = "ssse3")]
pub(super) fn counter_at(j0: __m128i, done: usize) -> __m128i {
    bswap(_mm_add_epi32(
        bswap(j0),
        _mm_set_epi32(0, 0, 0, (done / 16) as i32),
    ))
}

/// The message's part of [`short`], `N` blocks, `N` a constant so that the blocks stay in
/// registers: `E(J0)` (returned, for the tag; zero for a later part, `PART`) and the
/// keystream as side-by-side AES chains, the output written, and the ciphertext hashed
/// into `w` with the powers from entry `first` on, in Karatsuba form with `KARATSUBA`.
///
/// With the block count known only at run time, the blocks went through stack arrays
/// (and `J0` with up to three counters more than the message needed, the chains rounded
/// up to 2, 4 or 8), and a seal's ciphertext was stored and reloaded on its way to the
/// hash. Measured on an AMD EPYC Zen 4 (family 25 model 17), this back end forced, TSC
/// ticks per call (see `vaes256_gcm::short_message` for the method), before -> after,
/// AES-128 / AES-256: seal 1 B 69 / 74 -> 67 / 73, 16 B 65 / 73 -> 64 / 70, 17 B 79 /
/// 84 -> 69 / 80, 32 B 77 / 84 -> 68 / 80, 64 B 101 / 116 -> 87 / 104, 112 B 130 / 142
/// -> 121 / 133; open 1 B 80 / 80 -> 72 / 77, 16 B 74 / 79 -> 67 / 74, 32 B 88 / 89 ->
/// 74 / 78, 64 B 111 / 120 -> 96 / 114, 112 B 138 / 145 -> 129 / 138.
///
/// The Karatsuba instances that [`short_two_batches`] and [`short_groups`] call are
/// compiled out of line, their sum passed through memory. Written out in every caller
/// (`inline(always)`, the body in one `unsafe` block), AES-256 opens and seals ran
/// slower (open 128 B 158 -> 179, 224 B 228 -> 247, 304 B 307 -> 335, seal 464 B 406 ->
/// 432; AES-128 within 2%, opens of 192 and 224 bytes 4-7% slower): with 15 round keys
/// in 16 registers, the calls are where the compiler spills least.
///
/// # Safety
/// As for [`short`], and the message is `N` blocks long (its last possibly partial).
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short_message<
    const NR: usize,
    const ENC: bool,
    const N: usize,
    const PART: u8,
    const KARATSUBA: bool,
>(
    key: &HwKey,
    j0: __m128i,
    io: InOut,
    w: &mut Wide,
    first: usize,
) -> __m128i {
    debug_assert_eq!(io.len.div_ceil(16), N);
    let mut input = [_mm_setzero_si128(); N];
    for (j, b) in input.iter_mut().enumerate() {
        // SAFETY: the input is readable for `io.len` bytes (the caller's contract), and
        // block `j < N` starts inside it.
        *b = unsafe { partial::load_block(io.src, io.len, j) };
    }
    // An open in Karatsuba form hashes its input before the AES: its products then
    // run while the AES units work (see `short_groups`). The schoolbook instances were
    // measured the other way and are left so.
    let hash_first = !ENC && KARATSUBA;
    if hash_first {
        for (j, &input) in input.iter().enumerate() {
            mul_add_power::<KARATSUBA>(w, key, bswap(input), first + j);
        }
    }
    // A later part has no use for `E(J0)`: its counters only.
    let (tag_mask, keystream) = if PART == WHOLE || PART == FIRST_PART {
        encrypt_j0_and::<NR, N, true>(&key.aes.rk, j0)
    } else {
        encrypt_j0_and::<NR, N, false>(&key.aes.rk, j0)
    };
    for (j, (&input, &k)) in input.iter().zip(&keystream).enumerate() {
        let mut output = _mm_xor_si128(input, k);
        if j + 1 == N {
            // The bytes past the message: zero in the ciphertext that is hashed.
            output = _mm_and_si128(output, partial::keep_first16(io.len - 16 * j));
        }
        // SAFETY: the output is writable for `io.len` bytes (the caller's contract), and
        // all of the input was read above.
        unsafe { partial::store_block(io.dst, io.len, j, output) };
        if !hash_first {
            let ct = if ENC { output } else { input };
            mul_add_power::<KARATSUBA>(w, key, bswap(ct), first + j);
        }
    }
    tag_mask
}

/// Adds `a` times `H` to power entry `k` to `w`, in Karatsuba form with `KARATSUBA`.
#[inline]
#[target_feature(enable = "pclmulqdq")]
fn mul_add_power<const KARATSUBA: bool>(w: &mut Wide, key: &HwKey, a: __m128i, k: usize) {
    if KARATSUBA {
        w.mul_add_karatsuba(a, key.h.0[k], key.hx.0[k]);
    } else {
        w.mul_add(a, key.h.0[k]);
    }
}

/// `E(J0)` (with `J0`, else zero) and the keystream blocks `E(J0 + 1) ... E(J0 + N)`, as
/// side-by-side chains.
#[inline]
#[target_feature(enable = "aes,ssse3,sse4.1")]
fn encrypt_j0_and<const NR: usize, const N: usize, const J0: bool>(
    rk: &[__m128i; 15],
    j0: __m128i,
) -> (__m128i, [__m128i; N]) {
    let native = bswap(j0);
    let mut t = _mm_xor_si128(j0, rk[0]);
    let mut s = [_mm_setzero_si128(); N];
    for (i, b) in s.iter_mut().enumerate() {
        let ctr = _mm_add_epi32(native, _mm_set_epi32(0, 0, 0, i as i32 + 1));
        *b = _mm_xor_si128(bswap(ctr), rk[0]);
    }
    for k in &rk[1..NR] {
        if J0 {
            t = _mm_aesenc_si128(t, *k);
        }
        for b in s.iter_mut() {
            *b = _mm_aesenc_si128(*b, *k);
        }
    }
    t = if J0 {
        _mm_aesenclast_si128(t, rk[NR])
    } else {
        _mm_setzero_si128()
    };
    for b in s.iter_mut() {
        *b = _mm_aesenclast_si128(*b, rk[NR]);
    }
    (t, s)
}

/// The whitened counter blocks of successive 8-block batches, taken in pairs (the bulk
/// loop's two batches per reduction).
///
/// The general form is `bswap(ctr + i) ^ rk0`: three operations per block. When the
/// loop starts at a counter that is `2 mod 16` (always so with a 96-bit nonce, whose
/// first data counter is 2), each pair of batches holds the counters `16p + 2 ...
/// 16p + 17`. Writing `W(m) = rk0 ^ bytes(m)` for the byte form of a multiple of 16 `m`,
/// whose low four bits are zero, `16p + r` for `r < 16` is `bytes(16p) ^ r` in byte 15,
/// so the pair is `W(16p) ^ 2 ... W(16p) ^ 15, W(16p + 16), W(16p + 16) ^ 1`, and
/// `W(16p + 16) = W(16p) ^ (16p ^ (16p + 16))`, a delta read from the table the VAES
/// kernels step with (see `counters`): one XOR per block and one per pair, where
/// building `W(16p + 16)` from the counter takes an add, a byte shuffle and an XOR. In
/// the two steps out of 64 where the table has no row (a carry out of the low ten bits)
/// `W(16p + 16)` is built the plain way. `FAST` may look at the counter's value only when
/// the counter is public (a 96-bit nonce, or the CTR entry point); for other nonce
/// lengths it is derived from the hash key, and the general form runs without looking
/// (see `bulk`). Additions stay in the native (byte-reversed) form, so the 32-bit wrap of
/// GCM's counter is kept.
#[derive(Clone, Copy)]
struct Counters<const FAST: bool> {
    /// The native-order counter of the loop's first block.
    base: __m128i,
    /// Blocks handed out so far.
    done: u32,
    /// `W(16p)` for the current pair (fast only).
    w: __m128i,
    /// Which delta row the next pair's step reads (fast only).
    cursor: DeltaCursor,
    rk0: __m128i,
}

impl<const FAST: bool> Counters<FAST> {
    /// Starts at the native-order counter `ctr` (whose low lane is `2 mod 16` if `FAST`).
    #[inline]
    #[target_feature(enable = "ssse3")]
    fn new(ctr: __m128i, rk0: __m128i) -> Self {
        let w = if FAST {
            _mm_xor_si128(bswap(_mm_sub_epi32(ctr, _mm_set_epi32(0, 0, 0, 2))), rk0)
        } else {
            rk0
        };
        Self {
            base: ctr,
            done: 0,
            w,
            cursor: DeltaCursor::new(_mm_cvtsi128_si32(ctr) as u32, FAST),
            rk0,
        }
    }

    /// The native-order counter of the first block not handed out yet.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn next_counter(&self) -> __m128i {
        _mm_add_epi32(self.base, _mm_set_epi32(0, 0, 0, self.done as i32))
    }

    /// `bswap(ctr + i) ^ rk0` for the 8 blocks from the next one.
    #[inline]
    #[target_feature(enable = "ssse3")]
    fn plain(&self) -> [__m128i; BLOCKS] {
        let c = self.next_counter();
        core::array::from_fn(|i| {
            _mm_xor_si128(
                bswap(_mm_add_epi32(c, _mm_set_epi32(0, 0, 0, i as i32))),
                self.rk0,
            )
        })
    }

    /// The first batch of a pair.
    #[inline]
    #[target_feature(enable = "ssse3")]
    fn first(&mut self) -> [__m128i; BLOCKS] {
        let out = if FAST {
            core::array::from_fn(|i| _mm_xor_si128(self.w, low(i as i32 + 2)))
        } else {
            self.plain()
        };
        self.done = self.done.wrapping_add(BLOCKS as u32);
        out
    }

    /// The second batch of a pair (after [`Self::first`]); steps to the next pair.
    #[inline]
    #[target_feature(enable = "ssse3")]
    fn second(&mut self) -> [__m128i; BLOCKS] {
        let out = if FAST {
            let w0 = self.w;
            let w1 = match self.cursor.next_row() {
                // SAFETY: 16 bytes of a 32-byte-aligned table row (see `next_row`).
                Some(row) => _mm_xor_si128(w0, unsafe { _mm_load_si128(row.cast()) }),
                // Block 6 of this batch is `16p + 16`.
                None => _mm_xor_si128(
                    bswap(_mm_add_epi32(
                        self.next_counter(),
                        _mm_set_epi32(0, 0, 0, 6),
                    )),
                    self.rk0,
                ),
            };
            self.w = w1;
            [
                _mm_xor_si128(w0, low(10)),
                _mm_xor_si128(w0, low(11)),
                _mm_xor_si128(w0, low(12)),
                _mm_xor_si128(w0, low(13)),
                _mm_xor_si128(w0, low(14)),
                _mm_xor_si128(w0, low(15)),
                w1,
                _mm_xor_si128(w1, low(1)),
            ]
        } else {
            self.plain()
        };
        self.done = self.done.wrapping_add(BLOCKS as u32);
        out
    }
}

/// `r` in byte 15 (the top byte of lane 3): the low bits of a big-endian counter.
#[inline]
#[target_feature(enable = "sse2")]
fn low(r: i32) -> __m128i {
    _mm_set_epi32(r << 24, 0, 0, 0)
}

/// Rounds 1 to NR of 8 whitened counter blocks, XORed with `input` (no hashing: the
/// first batch of an encryption, whose ciphertext is hashed in the next iteration).
#[inline]
#[target_feature(enable = "aes,sse2")]
fn aes8<const NR: usize>(
    rk: &[__m128i; 15],
    mut s: [__m128i; BLOCKS],
    input: &[__m128i; BLOCKS],
) -> [__m128i; BLOCKS] {
    for k in &rk[1..NR] {
        for b in s.iter_mut() {
            *b = _mm_aesenc_si128(*b, *k);
        }
    }
    for (b, i) in s.iter_mut().zip(input) {
        *b = _mm_aesenclast_si128(*b, _mm_xor_si128(rk[NR], *i));
    }
    s
}

/// Loads 8 blocks of input at `off`.
///
/// # Safety
/// `off + 128 <= io.len`.
#[inline(always)]
unsafe fn load8(io: InOut, off: usize) -> [__m128i; BLOCKS] {
    // SAFETY: the caller keeps `off + 128` inside the input.
    core::array::from_fn(|i| unsafe { _mm_loadu_si128(io.src.add(off + 16 * i).cast()) })
}

/// Stores 8 blocks of output at `off`.
///
/// # Safety
/// `off + 128 <= io.len`.
#[inline(always)]
unsafe fn store8(io: InOut, off: usize, v: &[__m128i; BLOCKS]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + 128` inside the output.
        unsafe { _mm_storeu_si128(io.dst.add(off + 16 * i).cast(), *b) };
    }
}

/// CTR over all of `io` starting at the (byte-reversed) counter `ctr`; when `HASH`,
/// GHASH of the ciphertext (output if `ENC`, input otherwise) continuing from `x`.
/// When the counter is `public`, and only then, its value may pick the XOR-stepped
/// counters (it must be 2 mod 16, as a 96-bit nonce's first data counter is).
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    x: __m128i,
    io: InOut,
) -> __m128i {
    // SAFETY: forwarded contract; no VEX.
    unsafe { bulk_with::<NR, ENC, HASH, false, false>(key, ctr, public, x, io) }
}

/// [`bulk`], hashing in Karatsuba form when `KARATSUBA` (see [`batches`]), with the bulk
/// loop in VEX encoding when `VEX` (see [`vex`]).
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`], and with `VEX` the CPU must have AVX.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk_with<
    const NR: usize,
    const ENC: bool,
    const HASH: bool,
    const KARATSUBA: bool,
    const VEX: bool,
>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    x: __m128i,
    io: InOut,
) -> __m128i {
    let fast = public && _mm_cvtsi128_si32(ctr) & 15 == 2;
    let rk = &key.aes.rk;
    // A seal's tail keystream, made before the batches (see `tail_keystream`).
    let early = (ENC && HASH && !io.len.is_multiple_of(CHUNK)).then(|| {
        let done = (io.len / CHUNK * BLOCKS) as i32;
        tail_keystream::<NR>(
            rk,
            _mm_add_epi32(ctr, _mm_set_epi32(0, 0, 0, done)),
            io.len % CHUNK,
        )
    });
    // SAFETY: forwarded contract, AVX with `VEX` among it.
    let (mut x, ctr, off) = unsafe {
        match (VEX, fast) {
            (true, true) => batches_vex::<NR, ENC, HASH, true, KARATSUBA>(key, ctr, x, io),
            (true, false) => batches_vex::<NR, ENC, HASH, false, KARATSUBA>(key, ctr, x, io),
            (false, true) => batches::<NR, ENC, HASH, true, KARATSUBA>(key, ctr, x, io),
            (false, false) => batches::<NR, ENC, HASH, false, KARATSUBA>(key, ctr, x, io),
        }
    };

    let rem = io.len - off;
    if rem == 0 {
        return x;
    }
    let mut buf = [[0u8; 16]; BLOCKS];
    // SAFETY: `off + rem == io.len` and `rem < CHUNK`, the size of `buf`.
    unsafe { read_tail(io, off, rem, buf.as_flattened_mut()) };
    let n = rem.div_ceil(16);
    if HASH && !ENC {
        x = hash_blocks::<KARATSUBA>(key, x, &buf[..n]);
    }
    let keystream = early.unwrap_or_else(|| tail_keystream::<NR>(rk, ctr, rem));
    for (i, b) in buf[..n].iter_mut().enumerate() {
        let mut out = _mm_xor_si128(load16(b), keystream[i]);
        if ENC && HASH && i + 1 == n {
            // The keystream beyond the message is not ciphertext: GHASH pads with zeros
            // (only the message's bytes are written out). Masked here rather than zeroed
            // in `buf` after the copy out: the block's load for the hash then spanned
            // that smaller store, which the store buffer does not forward (seals with a
            // partial last block, measured as in `tail_keystream`, AES-128 / AES-256:
            // 1350 B 848 / 958 -> 756 / 904, 1500 B 844 / 992 -> 822 / 941).
            out = _mm_and_si128(out, partial::keep_first16(rem - 16 * (n - 1)));
        }
        store16(b, out);
    }
    // SAFETY: as above.
    unsafe { write_tail(io, off, rem, buf.as_flattened()) };
    if HASH && ENC {
        x = hash_blocks::<KARATSUBA>(key, x, &buf[..n]);
    }
    x
}

/// The keystream of a tail of `rem` bytes (under 8 blocks) from the counter `ctr`
/// (native order).
///
/// A seal makes it before the batches: made after them, its AES (a chain of rounds per
/// block) entered the out-of-order window only behind the batches and the products of
/// the last two, and its latency showed in full before the tail's ciphertext could be
/// hashed. Measured on an AMD EPYC Zen 4 (family 25 model 17), this back end forced,
/// TSC ticks per call (the 20th percentile of 40 runs of 50000 calls back to back in
/// place, best of three processes), AD 13 bytes, AES-128 / AES-256, after -> before
/// the batches (tails of whole blocks): seal 240 B 273 / 326 -> 243 / 292, 272 B 349 /
/// 408 -> 261 / 362, 288 B 348 / 414 -> 273 / 367, 400 B 412 / 478 -> 328 / 422, 1040
/// B 697 / 788 -> 615 / 734, 1296 B 806 / 906 -> 721 / 861; with a partial last block
/// (and its mask in a register, see `bulk_with`) 1350 B 756 / 904 -> 763 / 868, 1500 B
/// 822 / 941 -> 830 / 943. Opens unchanged (272 B, 1350 B within 2%): an open's tag
/// does not wait for its tail's keystream, and opens make it after the batches.
#[inline]
#[target_feature(enable = "aes,sse2,ssse3")]
fn tail_keystream<const NR: usize>(
    rk: &[__m128i; 15],
    ctr: __m128i,
    rem: usize,
) -> [__m128i; BLOCKS] {
    debug_assert!(rem < CHUNK);
    let mut keystream = [_mm_setzero_si128(); BLOCKS];
    for (i, k) in keystream[..rem.div_ceil(16)].iter_mut().enumerate() {
        let c = bswap(_mm_add_epi32(ctr, _mm_set_epi32(0, 0, 0, i as i32)));
        *k = aes_ni::encrypt1::<NR>(rk, c);
    }
    keystream
}

/// Defines `$name`, [`batches_body`] compiled with `$features`.
macro_rules! batches_with_features {
    ($(#[$doc:meta])* $name:ident, $features:literal) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $name<
            const NR: usize,
            const ENC: bool,
            const HASH: bool,
            const FAST: bool,
            const KARATSUBA: bool,
        >(
            key: &HwKey,
            ctr: __m128i,
            x: __m128i,
            io: InOut,
        ) -> (__m128i, __m128i, usize) {
            // SAFETY: forwarded contract; this function has the features the body needs.
            unsafe { batches_body::<NR, ENC, HASH, FAST, KARATSUBA>(key, ctr, x, io) }
        }
    };
}

batches_with_features!(
    /// The whole 8-block batches of `io`: returns `X`, the native-order counter of the
    /// first block left over, and the number of bytes done.
    ///
    /// Each batch runs the AES rounds of 8 blocks with one block's four `PCLMULQDQ`s (three
    /// when `KARATSUBA`, see the module documentation) after eight of its middle rounds
    /// (see [`hash_slot`]), and two batches share one reduction: AES and carry-less
    /// multiplication use different execution ports, so the hash rides along in the shadow
    /// of the cipher. The block that carries `X` is multiplied last in its batch, after the
    /// seven that do not depend on the previous reduction. Each batch is a macro expanded in
    /// the loop (not a helper the optimiser may decline to inline, as it did for some key
    /// sizes), so that the 8 states and the 3 accumulators stay in registers.
    ///
    /// # Safety
    /// `io` must satisfy the contract of [`InOut::new`].
    batches,
    "aes,pclmulqdq,ssse3,sse4.1"
);

batches_with_features!(
    /// [`batches`] in VEX encoding: the same body, compiled with AVX, where three-operand
    /// instructions spare the register copies the two-operand SSE forms need (`PCLMULQDQ`
    /// and `AESENC` overwrite an input). Measured on AMD Zen 5 (family 0x1a model 2, this
    /// back end forced, Karatsuba products), TSC per call, VEX and SSE keys alternated in
    /// one process, two runs: VEX/SSE 0.92-0.95 from 1350 bytes to 16 KiB, AES-128 and
    /// AES-256, seal and open; 0.94-1.00 at 256 bytes. The rest of the kernel (set-up,
    /// associated data, tail, tag) stays in SSE encoding.
    ///
    /// # Safety
    /// As [`batches`], and the CPU must have AVX.
    batches_vex,
    "aes,pclmulqdq,ssse3,sse4.1,avx"
);

/// The body of [`batches`] and [`batches_vex`], inlined into each so that each compiles
/// it with its own features.
///
/// # Safety
/// As [`batches`]; only called from functions that have its features.
// The inner `unsafe` blocks stay, each with what makes its memory access sound, inside
// the one the intrinsics need here (this function has no target features of its own).
#[allow(unused_unsafe)]
#[inline(always)]
unsafe fn batches_body<
    const NR: usize,
    const ENC: bool,
    const HASH: bool,
    const FAST: bool,
    const KARATSUBA: bool,
>(
    key: &HwKey,
    ctr: __m128i,
    mut x: __m128i,
    io: InOut,
) -> (__m128i, __m128i, usize) {
    // SAFETY: the callers have AES-NI, PCLMULQDQ, SSSE3 and SSE4.1 (the intrinsics'
    // features), and the caller's contract covers the memory accesses.
    unsafe {
        // AES has at least 10 rounds, so all 8 blocks are hashed between rounds.
        const { assert!(NR > BLOCKS) };
        let rk = &key.aes.rk;
        let h = &key.h;
        let mut counters = Counters::<FAST>::new(ctr, rk[0]);
        let mut off = 0;
        if io.len < CHUNK {
            return (x, ctr, 0);
        }
        // Encryption hashes its output two batches late, reading it back from the output:
        // hashing the batch before would make its multiplies wait for that batch's last
        // rounds, and keeping it in registers would take 8 of the 16.
        let mut hashed = 0;
        if ENC && HASH {
            while off + CHUNK <= io.len && off < 2 * CHUNK {
                // SAFETY: `off + CHUNK <= io.len`.
                let input = unsafe { load8(io, off) };
                let s = if off == 0 {
                    counters.first()
                } else {
                    counters.second()
                };
                let out = aes8::<NR>(rk, s, &input);
                // SAFETY: as above.
                unsafe { store8(io, off, &out) };
                off += CHUNK;
            }
        }
        // One batch, with the counters of the `$half` (first or second) batch of a pair: the
        // products of the hash input by the 8 powers from index `$pw` go into `$w`;
        // `$with_x` adds `X` to the first block, `$reduce` reduces `$w` into `X`.
        // A macro rather than a function, so that the body is always inlined. Input blocks
        // are loaded where they are used: the hash input through `unshared`, so that on
        // decryption the two loads of a block are not merged into one value held across
        // the rounds.
        macro_rules! batch {
            ($half:ident, $w:ident, $pw:expr, $with_x:expr, $reduce:expr) => {{
                let hash_src = if ENC {
                    io.dst.cast_const().wrapping_add(hashed)
                } else {
                    io.src.wrapping_add(off)
                };
                let mut s = counters.$half();
                // The rounds written out (`each_middle_round!`), each block's products
                // pinned after the round they ride with (`pin_with`). As a `for` loop,
                // LLVM kept the rounds of most instances rolled, working out the block,
                // the powers' offsets and the reduction's test in every round; written
                // out but not pinned, it gathered the hash work and spilled. Measured on
                // an AMD EPYC Zen 4 (family 25 model 17, this back end forced, VEX), TSC
                // ticks per call, fastest of 2000 batches of eight, three runs alternated,
                // before -> after, seal / open: AES-128 1350 B 822 / 780 -> 793-809 /
                // 711-734, 4 KiB 2031 / 2011 -> 1878 / 1833, 16 KiB 7764 / 7806 -> 7081 /
                // 7042; AES-256 1350 B 975 / 923 -> 906-919 / 812-819, 4 KiB 2450 / 2405
                // -> 2083-2099 / 1976-1979, 16 KiB 9366 / 9321 -> 7754 / 7585-7631 (the
                // bulk loop alone in the SSE build, 16 KiB seal: AES-128 8865 -> 7566,
                // AES-256 9880 -> 8398). Written out without the pins: 8-17% slower than
                // the loop.
                each_middle_round!(R < NR, {
                    for b in s.iter_mut() {
                        *b = _mm_aesenc_si128(*b, rk[R]);
                    }
                    let k = hash_slot(R, NR);
                    if HASH && k < BLOCKS {
                        // Slots 0..6 take blocks 1..7, slot 7 block 0 (the one with `X`).
                        let j = (k + 1) % BLOCKS;
                        // SAFETY: block `j` of a whole batch: of the input at `off` (the
                        // caller checked `off + CHUNK <= io.len`), or of output written two
                        // batches ago (`hashed + 2 * CHUNK == off`).
                        let mut a = bswap(unsafe {
                            _mm_loadu_si128(unshared(hash_src.wrapping_add(16 * j)).cast())
                        });
                        if $with_x && j == 0 {
                            a = _mm_xor_si128(a, x);
                        }
                        if KARATSUBA {
                            $w.mul_add_karatsuba(a, h.0[$pw + j], key.hx.0[$pw + j]);
                        } else {
                            $w.mul_add(a, h.0[$pw + j]);
                        }
                        $w.pin_with(&mut s);
                        if $reduce && j == 0 {
                            let sum = core::mem::replace(&mut $w, Wide::zero());
                            x = if KARATSUBA {
                                sum.into_schoolbook()
                            } else {
                                sum
                            }
                            .reduce();
                        }
                    }
                });
                for (i, b) in s.iter_mut().enumerate() {
                    // SAFETY: as above.
                    let input = unsafe { _mm_loadu_si128(io.src.add(off + 16 * i).cast()) };
                    *b = _mm_aesenclast_si128(*b, _mm_xor_si128(rk[NR], input));
                }
                // SAFETY: as above.
                unsafe { store8(io, off, &s) };
                off += CHUNK;
                if ENC {
                    hashed += CHUNK;
                }
            }};
        }
        // Two batches per iteration share one reduction: the first is multiplied by
        // `H^16 ... H^9`, the second by `H^8 ... H^1`. Half the reductions, and `X` is
        // needed only once per 16 blocks, a whole batch after it was produced.
        let mut w = Wide::zero();
        while off + 2 * CHUNK <= io.len {
            batch!(first, w, HPowers::COUNT - 2 * BLOCKS, true, false);
            batch!(second, w, HPowers::COUNT - BLOCKS, false, true);
        }
        if off + CHUNK <= io.len {
            batch!(first, w, HPowers::COUNT - BLOCKS, true, true);
        }
        if ENC && HASH {
            // The last one or two batches, by `H^n ... H^1` with one reduction, in the
            // loop's product form. Through `clmul::update` (schoolbook products, one
            // reduction per 8 blocks) seals took longer, measured on Zen 4 (this back end
            // forced, TSC ticks per call, fastest of 2000 batches of eight, three runs):
            // AES-128 256 B 234 -> 211, 384 B 295 -> 276, 1350 B 789 -> 776, 2 KiB
            // 1020 -> 997; AES-256 256 B 276 -> 260, 1350 B 910 -> 880, 8 KiB 3961 ->
            // 3909.
            // SAFETY: output written above, not written again while the slice lives.
            let unhashed = unsafe { core::slice::from_raw_parts(io.dst.add(hashed), off - hashed) };
            x = hash_blocks::<KARATSUBA>(key, x, unhashed.as_chunks().0);
        }
        (x, counters.next_counter(), off)
    }
}

/// Which of a batch's 8 hash slots middle round `r` of an `nr`-round AES carries, or
/// `usize::MAX` for none: slot `k` rides with round `1 + k (nr - 1) / 8`, spread evenly
/// over the middle rounds. AES-128 hashes in rounds 1 to 8 (its ninth has none), AES-256
/// in rounds 1, 2, 4, 5, 7, 9, 10 and 12, so that the products (one multiplier, one
/// `PCLMULQDQ` every other cycle on AMD) are not bunched into the first rounds while
/// the last ones have none. Measured on Zen 4 against rounds 1 to 8 for every key size
/// (method as in `batches_body`): AES-256 open 1-3% faster from 1350 bytes (16 KiB 7764
/// -> 7585 TSC ticks), seal within 1%.
const fn hash_slot(r: usize, nr: usize) -> usize {
    let mut k = 0;
    while k < BLOCKS {
        if 1 + k * (nr - 1) / BLOCKS == r {
            return k;
        }
        k += 1;
    }
    usize::MAX
}

/// GHASH of up to 16 blocks in byte form continuing from `x`, by `H^n ... H^1` with one
/// reduction, in the bulk loop's product form (Karatsuba when `KARATSUBA`): the tail, and
/// the batches a seal's loop leaves unhashed.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn hash_blocks<const KARATSUBA: bool>(key: &HwKey, x: __m128i, blocks: &[[u8; 16]]) -> __m128i {
    let n = blocks.len();
    let mut w = Wide::zero();
    for (j, b) in blocks.iter().enumerate() {
        let mut v = bswap(load16(b));
        if j == 0 {
            v = _mm_xor_si128(v, x);
        }
        let k = HPowers::COUNT - n + j;
        if KARATSUBA {
            w.mul_add_karatsuba(v, key.h.0[k], key.hx.0[k]);
        } else {
            w.mul_add(v, key.h.0[k]);
        }
    }
    if KARATSUBA { w.into_schoolbook() } else { w }.reduce()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x86_64::AesNiAvxToken;

    /// Decrypts (AES-128, AES-192) or encrypts (AES-256) `buf` in place from the block
    /// counter `start`, returning the hash, with the fast counters if `public` and the
    /// start is 2 mod 16, or the general ones.
    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
    fn run(hk: &HwKey, start: u32, public: bool, buf: &mut [u8]) -> [u8; 16] {
        // Native order: the block counter in the lowest lane, a nonce above it.
        let ctr = _mm_set_epi32(0x5a5a_5a5a, 0x5a5a_5a5a, 0x5a5a_5a5a, start as i32);
        let x = _mm_setzero_si128();
        // SAFETY: in place on the whole of `buf`.
        let x = unsafe {
            // One pointer for both sides: a shared one taken first would be invalidated
            // by taking the mutable one.
            let p = buf.as_mut_ptr();
            let io = InOut::new(p.cast_const(), p, buf.len());
            match hk.aes.rounds {
                10 => bulk::<10, false, true>(hk, ctr, public, x, io),
                12 => bulk::<12, false, true>(hk, ctr, public, x, io),
                _ => bulk::<14, true, true>(hk, ctr, public, x, io),
            }
        };
        let mut out = [0u8; 16];
        store16(&mut out, x);
        out
    }

    /// The XOR-stepped counters agree with the general ones from `2 mod 16` starts,
    /// including the steps the delta table has no row for (`0x3c2`: the pairs at
    /// `q = 62, 63` are rebuilt), a 32-bit wrap inside a batch, at a batch boundary and
    /// at a pair boundary (which a 96-bit nonce, starting at 2, reaches only after
    /// 64 GiB); `0xfa` and `0xffff_fffa` (10 mod 16) take the general path either way.
    #[test]
    fn fast_counters_match_the_general_ones() {
        let Some(t) = AesNiToken::new() else { return };
        let data: [u8; 2200] = core::array::from_fn(|i| (i * 31 % 251) as u8);
        for key_len in [16, 24, 32] {
            let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 7 + key_len as u8);
            let hk = HwKey::new(&key[..key_len], t);
            let starts = [
                2u32,
                0x3c2,
                0xfa,
                0x1_0002,
                0xffff_fffa,
                0xffff_fff2,
                0xffff_ffe2,
                0xffff_ffc2,
                0xffff_ff82,
            ];
            for start in starts {
                // Under Miri, which is slow, the lengths around one and two batches.
                let lens: &[usize] = if cfg!(miri) {
                    &[0, 129, 257]
                } else {
                    &[0, 1, 127, 128, 129, 255, 256, 257, 1000, 2048 + 77]
                };
                for &len in lens {
                    let (mut fast, mut general) = (data, data);
                    // SAFETY: the token proves the features.
                    let (a, b) = unsafe {
                        (
                            run(&hk, start, true, &mut fast[..len]),
                            run(&hk, start, false, &mut general[..len]),
                        )
                    };
                    assert_eq!(a, b, "hash, key {key_len} start {start:#x} len {len}");
                    assert!(fast == general, "key {key_len} start {start:#x} len {len}");
                }
            }
        }
    }

    /// Seals (`ENC`) or opens `buf` in place with the key's products in Karatsuba form or
    /// not (`Tuning::save_multiplies`), through the VEX entry point if given its token,
    /// returning the tag.
    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
    fn run_tuned<const ENC: bool>(
        hk: &HwKey,
        t: AesNiToken,
        (karatsuba, vex_token): (bool, Option<AesNiAvxToken>),
        aad: &[u8],
        buf: &mut [u8],
    ) -> [u8; 16] {
        let mut hk = hk.clone();
        hk.tuning.save_multiplies = karatsuba;
        let j0 = u128::from_le_bytes([9u8; 16]);
        let p = buf.as_mut_ptr();
        // SAFETY: in place on the whole of `buf`, one pointer for both sides; the tokens
        // prove the features.
        unsafe {
            let io = InOut::new(p.cast_const(), p, buf.len());
            match vex_token {
                Some(v) => vex::seal_or_open::<ENC>(&hk, v, j0, true, aad, io),
                None => seal_or_open::<ENC>(&hk, t, j0, true, aad, io),
            }
        }
    }

    /// The bulk loop's two forms of product (Karatsuba, as AMD keys take it, and
    /// schoolbook, as Intel keys do), each in SSE and (where the CPU has AVX) VEX
    /// encoding, give the same tag and ciphertext for every key size, on lengths around
    /// one and two batches and with the tail, and on the short paths each form takes
    /// (AMD's groups up to 304 bytes for opens and 464 for seals), with associated data
    /// from none to more than the powers of `H` cover, whichever this CPU's keys use;
    /// and each opens what it sealed.
    #[test]
    fn every_form_agrees() {
        let Some(t) = AesNiToken::new() else { return };
        let vex = AesNiAvxToken::new();
        let all = [(false, None), (true, None), (false, vex), (true, vex)];
        let forms = if vex.is_some() { &all[..] } else { &all[..2] };
        let data: [u8; 1200] = core::array::from_fn(|i| (i * 37 % 249) as u8);
        let lens: &[usize] = if cfg!(miri) {
            &[17, 129, 300]
        } else {
            &[
                0, 1, 16, 17, 33, 111, 112, 113, 127, 128, 129, 224, 255, 256, 257, 304, 305, 383,
                384, 385, 464, 465, 1200,
            ]
        };
        for key_len in [16, 24, 32] {
            let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 5 + key_len as u8);
            let hk = HwKey::new(&key[..key_len], t);
            // 300 bytes: more blocks of associated data than the key has powers.
            for aad_len in [0, 13, 80, 300] {
                let aad = &data[data.len() - aad_len..];
                for &len in lens {
                    let mut expected = data;
                    // SAFETY: the token proves the features.
                    let tag =
                        unsafe { run_tuned::<true>(&hk, t, forms[0], aad, &mut expected[..len]) };
                    for &form in &forms[1..] {
                        let what = (form.0, form.1.is_some(), key_len, aad_len, len);
                        let mut buf = data;
                        // SAFETY: as above.
                        let seal = unsafe { run_tuned::<true>(&hk, t, form, aad, &mut buf[..len]) };
                        assert_eq!(
                            seal, tag,
                            "tag; Karatsuba, VEX, key, AD, message bytes: {what:?}"
                        );
                        assert!(buf[..len] == expected[..len], "ciphertext; {what:?}");
                    }
                    for &form in forms {
                        let what = (form.0, form.1.is_some(), key_len, aad_len, len);
                        let mut buf = expected;
                        // SAFETY: as above.
                        let open =
                            unsafe { run_tuned::<false>(&hk, t, form, aad, &mut buf[..len]) };
                        assert_eq!(open, tag, "open's tag; {what:?}");
                        assert!(buf[..len] == data[..len], "plaintext; {what:?}");
                    }
                }
            }
        }
    }
}

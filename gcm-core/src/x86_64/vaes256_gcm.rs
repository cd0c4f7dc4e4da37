//! AES-GCM with VAES and VPCLMULQDQ on 256-bit vectors (AVX2), for CPUs that have the
//! vector AES and carry-less multiply instructions but not AVX-512 (AMD Zen 3, Intel
//! Alder Lake and later client parts), or whose OS does not enable AVX-512 state.
//!
//! # The bulk loop
//!
//! Each step takes 16 blocks as eight 256-bit vectors of two blocks: a 256-bit `VAESENC`
//! has a latency of three (Intel) or four (AMD) cycles and two units take one each per
//! cycle, so six to eight independent AES chains are needed to keep them busy (with four,
//! A/B on Sapphire Rapids: AES-128 seal -10%). The AES rounds of the eight counter vectors
//! are interleaved with the GHASH of 16 blocks by `H^16..H^1`, two vectors (four blocks)
//! after some of the rounds, and one reduction per step (`stitched_kara!`). A last chunk
//! of 8 blocks takes the four-vector form of the same step.
//!
//! The multiplication is Karatsuba's: three carry-less multiplies per block (`a0·h0`,
//! `a1·h1`, `(a0 ^ a1)·(h0 ^ h1)`, the last factor precomputed in the key's `HXor`
//! table) rather than four. On AMD Zen 3 and Zen 4, the CPUs this back end is chosen
//! for, one 256-bit `VPCLMULQDQ` issues every two cycles and shares its issue ports with
//! the AES instructions, so the multiplies, not the AES rounds, bound AES-128-GCM: 26 per
//! 16 blocks here (24 products and a two-multiply reduction) against 34 in schoolbook
//! form. Measured on Zen 4 with this back end forced, at 16 KiB: AES-128 seal from 8.8 to
//! 10.7 GB/s, AES-256 from 7.5 to 10.2 GB/s (the extra shuffles and XORs go to the other
//! two vector pipes).
//!
//! On AMD Zen 3 (EPYC, family 25 model 1) a 256-bit `VPCLMULQDQ` costs the AES pipes
//! more than on Zen 4: about 1.7 issue slots, not one. Cycles per 16 blocks, measured there
//! for this loop's instruction mix alone (straight-line assembly, registers only; before
//! the pair form below): AES-128's 80 `VAESENC` 40; with the 26 multiplies 62; with the
//! 54 XORs and 19 shuffles as well, 73-79 depending on their order; the loop itself, with
//! its loads and stores, 85-95. For AES-256 (112 rounds): 54, 72, 90-98, and the loop
//! 98-110. So on Zen 3, AES-128-GCM in this form stays above 1.5x the time of AES-CTR (62
//! against 40 cycles before anything but rounds and multiplies), and each multiply saved
//! is worth more than an AES round.
//! There, XORs and shuffles cost time only beside both the AES rounds and the
//! multiplies: 32 `VAESENC` of eight chains take 16 cycles with or without 16 XORs
//! beside them, but with 8 multiplies as well, 21.7 cycles without the XORs and 25.7
//! with them. So the step forms the Karatsuba middle inputs of two vectors in one
//! (`Kara::mul_add_pair`): four XORs and eight shuffles fewer per 16 blocks, for
//! eight unpacks. Measured there (fastest of 90 runs, TSC cycles, against the one-vector
//! form): at 16 KiB, AES-128 seal 4312 -> 4018 and open 4361 -> 4067, AES-256 seal
//! 5218 -> 4851 and open 5047 -> 4728; at 1350 bytes, open 490 -> 465 (AES-128) and
//! 563 -> 539 (AES-256).
//!
//! Without AVX-512 there are no byte masks and no three-way XOR: the final partial chunk
//! is read and written in place a block at a time (`partial`), and XORs come in pairs. A
//! short message (up to 14 blocks) takes a pass of its own with one reduction, its
//! partial blocks read and written in place (`short`); up to 29 blocks the same pass in
//! two groups, two reductions, and seals up to 42 blocks with groups of 14 between
//! those two (`short_groups`).
//!
//! Encryption hashes the ciphertext of two steps back, read again from the output
//! buffer, rather than the previous step's output still in registers: that would tie
//! each step's multiplies to the last AES rounds of the one before, and take eight
//! of the sixteen vector registers. What is left unhashed after the loop would then be
//! hashed after all the AES work, the multiplies alone; so the 8-block step and the
//! final partial chunk, when they follow, each hash the oldest 16 blocks still unhashed
//! in their own AES rounds (see `bulk`).

use super::clmul::{self, bswap, bswap_mask};
use super::counters::DeltaCursor;
use super::partial;
use super::{
    FIRST_PART, HPowers, HwKey, InOut, LAST_PART, MIDDLE_PART, Vaes256Token, WHOLE, aesni_gcm,
    lengths_block, load_j0, load16, store16, tag_from, tag_mask_now,
};
use core::arch::x86_64::*;

const VECS: usize = 4;
/// The most 256-bit vectors of message [`short`] takes.
const SHORT_VECS: usize = 7;
/// [`short`] takes messages of up to this many blocks (with the associated data and the
/// lengths block, at most `HPowers::COUNT` to hash), sealed or opened.
const SHORT_MAX_BLOCKS: usize = 2 * SHORT_VECS;
const CHUNK: usize = 16 * 2 * VECS;
/// [`short_groups`] takes seals of up to this many blocks (672 bytes); beyond it the
/// step's stitched schedule wins (see [`takes_more_groups`]).
const SEAL_GROUPS_MAX_BLOCKS: usize = 42;

/// Whether a seal or open of `len` bytes with `aad_len` bytes of associated data takes
/// the one-pass [`short`] path: at most `aesni_gcm::SHORT_AAD_BLOCKS` blocks of
/// associated data and [`SHORT_MAX_BLOCKS`] of message, all of it with the lengths block
/// at most `HPowers::COUNT` blocks to hash.
#[inline(always)]
pub(super) fn takes_one_pass(aad_len: usize, len: usize) -> bool {
    let (na, nc) = (aad_len.div_ceil(16), len.div_ceil(16));
    na <= aesni_gcm::SHORT_AAD_BLOCKS && nc <= SHORT_MAX_BLOCKS && na + nc < HPowers::COUNT
}

/// Whether a seal or open too long for [`takes_one_pass`] takes [`short_groups`] in two
/// groups: at most `aesni_gcm::SHORT_AAD_BLOCKS` blocks of associated data, and a
/// message whose blocks after the first group ([`first_group_blocks`]) fit, with the
/// lengths block, in `HPowers::COUNT`: up to 29 blocks (464 bytes) beside 1 or 2 blocks
/// of associated data.
#[inline(always)]
pub(super) fn takes_two_groups(aad_len: usize, len: usize) -> bool {
    let (na, nc) = (aad_len.div_ceil(16), len.div_ceil(16));
    na <= aesni_gcm::SHORT_AAD_BLOCKS
        && nc < first_group_blocks(na) + HPowers::COUNT
        && !takes_one_pass(aad_len, len)
}

/// Whether a seal too long for [`takes_two_groups`] takes [`short_groups`] with groups of
/// [`MIDDLE_GROUP_BLOCKS`] between the first and the last: the same associated data, up
/// to [`SEAL_GROUPS_MAX_BLOCKS`] blocks of message.
///
/// Seals only, and only so far, because a middle group does not overlap its AES with
/// the hashing of earlier blocks as the step does: it costs about 4.7 TSC ticks a block
/// against the step's 3.3. What it saves is the step's fixed cost: measured on an AMD
/// EPYC Zen 4 (family 25 model 17), this back end forced, TSC ticks per call (the 20th
/// percentile of 40 runs of 50000 calls back to back in place, best of three
/// processes), AD 13 bytes, AES-128 / AES-256, step -> here: seal 480 B 251 / 278 -> 227
/// / 262, 512 B 248 / 263 -> 232 / 268, 544 B 274 / 296 -> 238 / 273, 608 B 280 / 310 ->
/// 258 / 296, 672 B 294 / 324 -> 274 / 317, 704 B 295 / 332 -> 292 / 337, 768 B 306 /
/// 336 -> 302 / 348, 1024 B (AES-128) 359 -> 379. Opens, which the step hashes as it
/// decrypts, lost from 32 blocks on (512 B 227 -> 253, 640 B 256 -> 291).
#[inline(always)]
pub(super) fn takes_more_groups(aad_len: usize, len: usize) -> bool {
    let (na, nc) = (aad_len.div_ceil(16), len.div_ceil(16));
    na <= aesni_gcm::SHORT_AAD_BLOCKS
        && nc <= SEAL_GROUPS_MAX_BLOCKS
        && nc >= first_group_blocks(na) + HPowers::COUNT
}

/// The blocks of each group between [`short_groups`]'s first and last: seven whole
/// vectors, as [`short`]'s largest, of a length the compiler sees. A first version with
/// groups of 16 blocks (eight vectors, beside the counters more than the sixteen vector
/// registers) and their length known only at run time took 465 TSC ticks to seal 1024
/// bytes against 379 for this form (measured as in [`takes_more_groups`]).
const MIDDLE_GROUP_BLOCKS: usize = 2 * SHORT_VECS;

/// The message blocks of [`short_groups`]'s first group: as many whole vectors
/// as fit beside `na` blocks of associated data within `HPowers::COUNT` powers, at most
/// [`SHORT_VECS`] (14 blocks with up to 2 blocks of associated data, 12 with 3 or 4).
const fn first_group_blocks(na: usize) -> usize {
    let vectors = (HPowers::COUNT - na) / 2;
    2 * if vectors < SHORT_VECS {
        vectors
    } else {
        SHORT_VECS
    }
}

kernel_entry_points!(
    Vaes256Token,
    "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1"
);

/// GHASH of `data` (zero-padded) continuing from `x` (mirrored), 8 blocks per reduction.
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
pub(crate) fn ghash(h: &HPowers, _t: Vaes256Token, x: __m128i, data: &[u8]) -> __m128i {
    hash_bytes(h, x, data)
}

/// [`ghash()`], for callers that already run with the features.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
fn hash_bytes(h: &HPowers, mut x: __m128i, data: &[u8]) -> __m128i {
    let hp = powers8(h);
    let mut chunks = data.chunks_exact(CHUNK);
    for chunk in &mut chunks {
        let v: [__m256i; VECS] = core::array::from_fn(|i| {
            // SAFETY: `chunk` has CHUNK = 32 * VECS bytes.
            unsafe { _mm256_loadu_si256(chunk.as_ptr().add(32 * i).cast()) }
        });
        x = hash8(&hp, x, &v);
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return x;
    }
    hash_tail(h, x, &load_rest(rest), rest.len().div_ceil(16))
}

/// The fewer than [`CHUNK`] bytes of `rest` as vectors, zero-padded, read in place (see
/// `bulk`'s tail for why not through a stack buffer).
#[inline]
#[target_feature(enable = "avx2,ssse3,sse4.1")]
fn load_rest(rest: &[u8]) -> [__m256i; VECS] {
    debug_assert!(rest.len() < CHUNK);
    let mut v = [_mm256_setzero_si256(); VECS];
    for (i, d) in v[..rest.len().div_ceil(32)].iter_mut().enumerate() {
        // SAFETY: `rest` is readable for its length, and vector `i` starts inside it.
        *d = unsafe { load_pair(rest.as_ptr(), rest.len(), i) };
    }
    v
}

#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn gcm<const NR: usize, const ENC: bool>(
    key: &HwKey,
    t: Vaes256Token,
    j0: u128,
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    if takes_one_pass(aad.len(), io.len) {
        // SAFETY: forwarded contract; the sizes are checked above.
        return unsafe { short::<NR, ENC>(key, load_j0(j0), aad, io) };
    }
    if takes_two_groups(aad.len(), io.len) || (ENC && takes_more_groups(aad.len(), io.len)) {
        // SAFETY: forwarded contract; the sizes are checked above.
        return unsafe { short_groups::<NR, ENC>(key, load_j0(j0), aad, io) };
    }
    if io.len < CHUNK {
        // Longer associated data: below one 8-block step this kernel would run only its
        // tail, after broadcasting the round keys and building sixteen counter blocks;
        // the 128-bit kernel's path does less.
        // SAFETY: forwarded contract; the VAES features include the AES-NI ones.
        return unsafe { aesni_gcm::gcm::<NR, ENC, false>(key, t.aesni(), j0, nonce96, aad, io) };
    }
    let j0 = load_j0(j0);
    let tag_mask = tag_mask_now::<NR>(&key.aes.rk, j0);
    let x = hash_bytes_kara(key, _mm_setzero_si128(), aad);
    let ctr = _mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1));
    // A message that ends in a partial step hashes the lengths block in the tail's
    // reduction rather than in one more after it (see `bulk_with`).
    let lens = Some((aad.len(), io.len));
    // SAFETY: forwarded contract.
    let (x, lens_hashed) = unsafe { bulk_with::<NR, ENC, true>(key, ctr, nonce96, x, io, lens) };
    tag_from(&key.h, x, lens_hashed, aad.len(), io.len, tag_mask)
}

/// A whole short message (see [`SHORT_MAX_BLOCKS`]), with associated data of at most
/// `aesni_gcm::SHORT_AAD_BLOCKS` blocks: the message's counter blocks in as few 256-bit
/// vectors as hold them (see [`short_message`]), `E(J0)` beside them in a 128-bit chain
/// (or, for a seal of one block, in the high lane of the message's vector), and every
/// GHASH input block (associated data, ciphertext, lengths) multiplied by its own power
/// of `H`, from `H^n` for the first to `H^1` for the lengths, two blocks a multiply in
/// Karatsuba form, with a single reduction. The blocks are read and written in place
/// (`partial`).
///
/// Before, messages below one 8-block step went to the 128-bit kernel's short path (one
/// block a multiply, schoolbook), and seals of 8 to 14 blocks through this kernel's step
/// and tail (three reductions one after the other). Measured on an AMD EPYC Zen 4
/// (family 25 model 17, this back end forced), TSC ticks per call, fastest of 10000
/// batches of eight, two runs, AD 13 bytes, before -> after, AES-128 seal / open: 16 B
/// 78 / 68 -> 65 / 58, 64 B 107 / 117-120 -> 65 / 65-74, 112 B 130 / 139-143 -> 81-84 /
/// 97, 127 B 182 / 234-253 -> 84-87 / 104; AES-256 16 B 87 / 78 -> 65 / 65, 64 B 117-120
/// / 130-133 -> 74-78 / 81-84, 127 B 230-266 / 214-217 -> 100-104 / 113-117. Seal from
/// 8 blocks: 128 B 113-116 -> 84-87, 160 B 159 -> 90-91, 192 B 162-165 -> 107-110, 224
/// B 175 -> 120 (AES-256 128 B 130-133 -> 103-107, 224 B 198 -> 133-146). Open from 8
/// blocks stayed on the step, which hashes as it decrypts, while this path kept the
/// message in stack arrays (it opened 128, 192 and 224 bytes 0-10% slower then); with
/// the vectors in registers (`short_message`) it takes them too: same machine, TSC ticks
/// per call as measured there, AES-128 / AES-256 open, step -> this path: 128 B 143 /
/// 158 -> 95 / 110, 160 B 205 / 185 -> 101 / 121, 192 B 181 / 195 -> 110 / 130, 224 B
/// 191 / 207 -> 128 / 149.
///
/// Two first versions were slower: with the data copied into stack buffers and loaded
/// from them in 32-byte vectors (loads that span several smaller stores, which the store
/// buffer cannot forward), open at 16 B took 81 ticks against the 128-bit path's 68; and
/// with the round keys broadcast into a table first (spilled), AES-256 seal at 48 and 64
/// bytes took 165 against 100-117.
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the message is at most
/// [`SHORT_MAX_BLOCKS`] blocks, the associated data at most
/// `aesni_gcm::SHORT_AAD_BLOCKS`, and the two together fewer than `HPowers::COUNT`.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short<const NR: usize, const ENC: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let (na, nc) = (aad.len().div_ceil(16), io.len.div_ceil(16));
    let nv = nc.div_ceil(2);
    // A seal of one block encrypts `J0` beside it, in the same vector (see
    // `short_message`); the rest in a 128-bit chain of its own, started here.
    let one_block = ENC && nc == 1;
    let early_mask = if one_block {
        _mm_setzero_si128()
    } else {
        tag_mask_now::<NR>(&key.aes.rk, j0)
    };
    // The powers from `H^(na + nc + 1)` down, each vector taking the next two.
    let first = HPowers::COUNT - (na + nc + 1);
    let mut acc = Kara::zero();
    // SAFETY: this function has the kernel's features.
    unsafe { hash_aad(key, aad, first, &mut acc) };

    macro_rules! message {
        ($($n:literal)*) => {
            match nv {
                0 => _mm_setzero_si128(),
                $($n => short_message::<NR, ENC, $n, WHOLE>(key, j0, one_block, io, &mut acc, first + na),)*
                _ => short_message::<NR, ENC, SHORT_VECS, WHOLE>(key, j0, false, io, &mut acc, first + na),
            }
        };
    }
    // SAFETY: forwarded contract; the message is `nv` vectors long.
    let high_lane = unsafe { message!(1 2 3 4 5 6) };
    let tag_mask = if one_block { high_lane } else { early_mask };
    // SAFETY: this function has the kernel's features.
    unsafe { finish(key, acc, aad.len(), io.len, tag_mask) }
}

/// The associated data's part of the short paths: its blocks (zero-padded) multiplied by
/// the powers from table index `first` on, two a vector, summed unreduced.
///
/// Inlined into each path, as the end is ([`finish`]): shared as `#[target_feature]`
/// functions, which the code generator may call out of line, the two took [`short`]'s
/// opens of 16 and 32 bytes from 60 to 67 TSC ticks (AMD Zen 4). The trip count is
/// written as the callers' block count halved, the expression they computed, as it was
/// when the loop was written out in each: counting `ceil(len / 32)` instead measured
/// slower on those opens (AES-256 32 B 68 -> 71, 64 B 83 -> 88 ticks).
///
/// # Safety
/// The CPU has this kernel's features.
#[inline(always)]
unsafe fn hash_aad(key: &HwKey, aad: &[u8], first: usize, acc: &mut Kara) {
    for i in 0..aad.len().div_ceil(16).div_ceil(2) {
        // SAFETY: the caller guarantees the kernel's features; `aad` is readable, and
        // `i` is one of its vectors.
        unsafe {
            let v = load_pair(aad.as_ptr(), aad.len(), i);
            // A lane past the data is zero: its product is too, whatever the power.
            let (h, hx) = power_pair(key, first + 2 * i);
            acc.mul_add(bswap256(v), h, hx);
        }
    }
}

/// The end of the short paths: the lengths block by `H`, one reduction, the tag (see
/// [`hash_aad`] for why it is inlined).
///
/// # Safety
/// The CPU has this kernel's features.
#[inline(always)]
unsafe fn finish(
    key: &HwKey,
    mut acc: Kara,
    aad_len: usize,
    len: usize,
    tag_mask: __m128i,
) -> [u8; 16] {
    // SAFETY: the caller guarantees the kernel's features.
    unsafe {
        let (h, hx) = power_pair(key, HPowers::COUNT - 1);
        acc.mul_add(_mm256_zextsi128_si256(lengths_block(aad_len, len)), h, hx);
        let mut tag = [0u8; 16];
        store16(&mut tag, _mm_xor_si128(bswap(acc.reduce()), tag_mask));
        tag
    }
}

/// A seal or open of up to 29 blocks (see [`takes_two_groups`]) in one pass as [`short`]
/// does up to 14, in two groups since the key holds 16 powers of `H`: the associated
/// data and the first [`first_group_blocks`] blocks multiplied by `H^(na + m)` down to
/// `H^1`, the rest of the message and the lengths block by `H^(n + 1)` down to `H^1`,
/// and the first group's sum, reduced, joins the second as one more product with the
/// power of the second's first block (GHASH's value just before that block). The first
/// group's reduction comes after the second group's AES in program order, so that the
/// AES of both groups is under way before it. A seal of up to 42 blocks (see
/// [`takes_more_groups`]) has groups of [`MIDDLE_GROUP_BLOCKS`] between the two, each
/// joined the same way.
///
/// Before, these messages ran this kernel's step and tail. Measured on an AMD EPYC Zen 4
/// (family 25 model 17), TSC ticks per call (the 20th percentile of 40 runs of 50000
/// calls back to back in place, best of three alternated processes), AD 13 bytes,
/// AES-128 / AES-256, step -> this path, Vaes256 forced: seal 240 B 192 / 213 -> 156 /
/// 180, 256 B 186 / 203 -> 157 / 180, 384 B 213 / 233 -> 187 / 214, 464 B 254 / 278 ->
/// 205 / 234; open 240 B 200 / 218 -> 161 / 183, 256 B 172 / 191 -> 159 / 181, 384 B
/// 202 / 226 -> 196 / 224, 464 B 251 / 274 -> 224 / 253. Zen 4's default (Vaes512 with
/// `short_in_256_bits`, whose own paths ran these before): seal 240 B 203 / 226 -> 156 /
/// 179, 384 B 230 / 258 -> 187 / 215; open 240 B 190 / 205 -> 161 / 184, 384 B 221 /
/// 239 -> 196 / 226.
///
/// Slower and not kept: the first group reduced before the second group's AES (240 B
/// AES-128 seal 184); both groups folded into `short` (its `short_message` instances
/// then shared, see `super::WHOLE`), which made its seals and opens of 1 to 14 blocks 2-10
/// ticks slower. The associated data's loop and the end are shared with `short`
/// ([`hash_aad`], [`finish`]).
///
/// # Safety
/// `io` satisfies the contract of [`InOut::new`]; the sizes pass [`takes_two_groups`],
/// or for a seal [`takes_more_groups`].
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short_groups<const NR: usize, const ENC: bool>(
    key: &HwKey,
    j0: __m128i,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let na = aad.len().div_ceil(16);
    let tag_mask = tag_mask_now::<NR>(&key.aes.rk, j0);
    let m = first_group_blocks(na);
    // With 3 or 4 blocks of associated data the message may end in the first group.
    let split = io.len.min(16 * m);

    let first = HPowers::COUNT - (na + m);
    let mut first_group = Kara::zero();
    // SAFETY: this function has the kernel's features.
    unsafe { hash_aad(key, aad, first, &mut first_group) };
    let (group, acc) = (io.take(split), &mut first_group);
    // The group is `m / 2` vectors, its last perhaps partial.
    match m {
        // SAFETY: forwarded contract (a prefix of `io`); 7 vectors.
        14 => unsafe {
            short_message::<NR, ENC, 7, FIRST_PART>(key, j0, false, group, acc, first + na)
        },
        // SAFETY: forwarded contract (a prefix of `io`); 6 vectors (`m` is 12).
        _ => unsafe {
            short_message::<NR, ENC, 6, FIRST_PART>(key, j0, false, group, acc, first + na)
        },
    };

    // The blocks after the first group: groups of `MIDDLE_GROUP_BLOCKS` (a seal's, by
    // `H^14..H^1`, with GHASH's value before them by `H^14` as one more product), then
    // the last group, of at most 15 blocks and the lengths block.
    let mut x_acc = first_group;
    let mut done = split;
    while ENC && io.len - done > 16 * (HPowers::COUNT - 1) {
        // Whole vectors, of a length the compiler sees.
        let group = InOut {
            src: io.src.wrapping_add(done),
            dst: io.dst.wrapping_add(done),
            len: 16 * MIDDLE_GROUP_BLOCKS,
        };
        let first = HPowers::COUNT - MIDDLE_GROUP_BLOCKS;
        let mut acc = Kara::zero();
        // SAFETY: forwarded contract (more than 15 blocks of `io` are left from `done`
        // on); 7 vectors.
        unsafe {
            short_message::<NR, ENC, SHORT_VECS, MIDDLE_PART>(
                key,
                aesni_gcm::counter_at(j0, done),
                false,
                group,
                &mut acc,
                first,
            )
        };
        let (h, hx) = power_pair(key, first);
        acc.mul_add(_mm256_zextsi128_si256(x_acc.reduce()), h, hx);
        x_acc = acc;
        done += 16 * MIDDLE_GROUP_BLOCKS;
    }
    debug_assert!(io.len - done <= 16 * (HPowers::COUNT - 1));

    let rest = io.skip(done);
    let j0_on = aesni_gcm::counter_at(j0, done);
    let first = HPowers::COUNT - (rest.len.div_ceil(16) + 1);
    let mut acc = Kara::zero();
    macro_rules! rest {
        ($($n:literal)*) => {
            match rest.len.div_ceil(32) {
                0 => _mm_setzero_si128(),
                $($n => short_message::<NR, ENC, $n, LAST_PART>(key, j0_on, false, rest, &mut acc, first),)*
                _ => short_message::<NR, ENC, { SHORT_VECS + 1 }, LAST_PART>(key, j0_on, false, rest, &mut acc, first),
            }
        };
    }
    // SAFETY: forwarded contract (the rest of `io`); it is at most 15 blocks, 8 vectors.
    unsafe { rest!(1 2 3 4 5 6 7) };
    let (h, hx) = power_pair(key, first);
    acc.mul_add(_mm256_zextsi128_si256(x_acc.reduce()), h, hx);
    // SAFETY: this function has the kernel's features.
    unsafe { finish(key, acc, aad.len(), io.len, tag_mask) }
}

/// The message's part of [`short`] in `N` vectors, `N` a constant so that the counters,
/// the keystream and the ciphertext stay in registers: reads the input, hashes it (open)
/// or the ciphertext (seal) into `acc` with the powers from entry `first` on, and writes
/// the output.
///
/// With `j0_beside` (a message of one block, whose vector's high lane would hold a
/// counter nobody needs), that lane's counter is `J0` itself, and since the input's high
/// lane is zero, the high lane of the output is `E(J0)`, returned for the tag: one AES
/// chain where there were two, the 256-bit one half idle.
///
/// With the vector count known only at run time (one body for every count, the vectors
/// in stack arrays), a seal's ciphertext made three trips through memory on its way to
/// the tag: stored after the last AES round, reloaded to be written out and masked,
/// stored again, reloaded to be hashed. Each trip is a store forwarded to a load, several
/// cycles on the critical path. Measured on an AMD EPYC Zen 4 (family 25 model 17), this
/// back end forced, TSC ticks (2.6 GHz) per call, calls back to back on one buffer in
/// place, the 20th percentile of 40 runs of 50000 calls, the best of three alternated
/// processes, AD 13 bytes, before -> after, AES-128 / AES-256: seal 1 B 89 / 92 -> 67 /
/// 72, 16 B 88 / 90 -> 65 / 71, 17 B 91 / 93 -> 68 / 74, 32 B 87 / 95 -> 66 / 72, 64 B
/// 89 / 97 -> 71 / 80; open 1 B 74 / 84 -> 66 / 70, 16 B 72 / 79 -> 62 / 66, 32 B 72 /
/// 78 -> 61 / 66, 64 B 83 / 90 -> 69 / 74. `J0` beside the block took AES-256 seals of
/// 1 to 16 bytes from 78-79 to 71-72 of those (AES-128 within a tick); open keeps its
/// own chain for `E(J0)`, which measured 2-6 ticks faster than beside the block, there
/// waiting for the message's input (in place, the previous call's output).
///
/// # Safety
/// As for [`short`], and the message is `2N - 1` or `2N` blocks long (at most one block
/// with `j0_beside`).
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn short_message<const NR: usize, const ENC: bool, const N: usize, const PART: u8>(
    key: &HwKey,
    j0: __m128i,
    j0_beside: bool,
    io: InOut,
    acc: &mut Kara,
    first: usize,
) -> __m128i {
    debug_assert_eq!(io.len.div_ceil(32), N);
    debug_assert!(!j0_beside || io.len <= 16);
    let mut input = [_mm256_setzero_si256(); N];
    for (i, v) in input.iter_mut().enumerate() {
        // SAFETY: the input is readable for `io.len` bytes, and vector `i < N` starts
        // inside it.
        *v = unsafe { load_pair(io.src, io.len, i) };
    }
    if !ENC {
        for (i, v) in input.iter().enumerate() {
            let (h, hx) = power_pair(key, first + 2 * i);
            acc.mul_add(bswap256(*v), h, hx);
        }
    }
    let rk = |r: usize| _mm256_broadcastsi128_si256(key.aes.rk[r]);
    // Counters `J0 + 1, J0 + 2` (or `J0` itself in the high lane), in native order.
    let high = if j0_beside { 0 } else { 2 };
    let ctr = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(bswap(j0)),
        _mm256_set_epi32(0, 0, 0, high, 0, 0, 0, 1),
    );
    let mut out = encrypt_xor::<NR, N>(rk, counters(ctr, rk(0)), &input);
    // With `J0` beside a message of one block, whose input's high lane is zero: `E(J0)`.
    let high_lane = _mm256_extracti128_si256::<1>(out[N - 1]);
    for (i, v) in out.iter().enumerate() {
        // SAFETY: the output is writable for `io.len` bytes (the caller's contract), and
        // all of the input was read above.
        unsafe { store_pair(io.dst, io.len, i, *v) };
    }
    if ENC {
        // The keystream past the message is not ciphertext: zero, as GHASH pads.
        out[N - 1] = _mm256_and_si256(out[N - 1], partial::keep_first32(io.len - 32 * (N - 1)));
        for (i, v) in out.iter().enumerate() {
            let (h, hx) = power_pair(key, first + 2 * i);
            acc.mul_add(bswap256(*v), h, hx);
        }
    }
    high_lane
}

/// `HPowers` entries `k, k + 1` and the matching `HXor` entries, for [`Kara::mul_add`].
#[inline]
#[target_feature(enable = "avx")]
fn power_pair(key: &HwKey, k: usize) -> (__m256i, __m256i) {
    assert!(k + 1 < HPowers::LEN);
    // SAFETY: entries `k` and `k + 1` are inside both tables (checked above); unaligned
    // loads.
    unsafe {
        (
            _mm256_loadu_si256(key.h.0.as_ptr().add(k).cast()),
            _mm256_loadu_si256(key.hx.0.as_ptr().add(k).cast()),
        )
    }
}

/// Vector `i` (blocks `2i` and `2i + 1`) of the `len` bytes at `p`, zero past `len`
/// (`32 i < len`).
///
/// # Safety
/// `p` readable for `len` bytes.
#[inline]
#[target_feature(enable = "avx2,ssse3,sse4.1")]
unsafe fn load_pair(p: *const u8, len: usize, i: usize) -> __m256i {
    // SAFETY: reads inside the `len` bytes at `p` (see `partial`).
    unsafe {
        if 32 * i + 32 <= len {
            return _mm256_loadu_si256(p.add(32 * i).cast());
        }
        let lo = partial::load_block(p, len, 2 * i);
        let hi = if 32 * i + 16 < len {
            partial::load_block(p, len, 2 * i + 1)
        } else {
            _mm_setzero_si128()
        };
        _mm256_set_m128i(hi, lo)
    }
}

/// Stores vector `i` of `v` as blocks `2i` and `2i + 1` of the `len` bytes at `p`, none
/// of its bytes past `len` (`32 i < len`).
///
/// Always inlined, and so without features of its own (the callers have them): as an
/// `#[inline]` function with them, LLVM left it out of line, a call per vector stored.
///
/// # Safety
/// `p` writable for `len` bytes; the CPU has AVX2 and SSE4.1.
#[inline(always)]
unsafe fn store_pair(p: *mut u8, len: usize, i: usize, v: __m256i) {
    // SAFETY: writes inside the `len` bytes at `p` (see `partial`).
    unsafe {
        if 32 * i + 32 <= len {
            _mm256_storeu_si256(p.add(32 * i).cast(), v);
            return;
        }
        partial::store_block(p, len, 2 * i, _mm256_castsi256_si128(v));
        if 32 * i + 16 < len {
            partial::store_block(p, len, 2 * i + 1, _mm256_extracti128_si256::<1>(v));
        }
    }
}

/// An unreduced sum of lane-wise products.
#[derive(Clone, Copy)]
struct Wide {
    lo: __m256i,
    mi: __m256i,
    hi: __m256i,
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn zero() -> Self {
        let z = _mm256_setzero_si256();
        Self {
            lo: z,
            mi: z,
            hi: z,
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn mul_add(&mut self, a: __m256i, b: __m256i) {
        self.lo = _mm256_xor_si256(self.lo, _mm256_clmulepi64_epi128::<0x00>(a, b));
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(a, b));
        let m = _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x01>(a, b),
            _mm256_clmulepi64_epi128::<0x10>(a, b),
        );
        self.mi = _mm256_xor_si256(self.mi, m);
    }

    /// Reduces both lanes, then sums them.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn reduce(self) -> __m128i {
        let r = self.reduce_lanes();
        _mm_xor_si128(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r))
    }

    /// Reduces each lane on its own (see `clmul` for the two folds).
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn reduce_lanes(self) -> __m256i {
        let c = _mm256_set1_epi64x(0xC200_0000_0000_0000_u64 as i64);
        let mi = _mm256_xor_si256(
            _mm256_xor_si256(self.mi, _mm256_shuffle_epi32::<0x4e>(self.lo)),
            _mm256_clmulepi64_epi128::<0x00>(self.lo, c),
        );
        _mm256_xor_si256(
            _mm256_xor_si256(self.hi, _mm256_shuffle_epi32::<0x4e>(mi)),
            _mm256_clmulepi64_epi128::<0x00>(mi, c),
        )
    }
}

/// The table of `H^16·y ... H^1·y` (then zeros) from `H = E_K(0)` in byte form, as
/// `clmul::powers_into` computes it, two powers to a vector: `H^2` alone, then `H^4 H^3`
/// as `H^2 H^1` times `H^2` in both lanes, `H^8 ... H^5` as those two vectors times
/// `H^4`, and `H^16 ... H^9` as those four times `H^8`. Eight multiplies and reductions
/// where the 128-bit form takes fifteen, in the same four rounds of latency: key set-up
/// is bound by the multiplier's throughput (one 256-bit product every two cycles on AMD
/// Zen 3 and 4, the same as a 128-bit one).
///
/// Returns the eight vectors as well (`H^2 H^1` first), for a caller that derives more
/// from them without reading back what was just stored.
#[target_feature(enable = "vpclmulqdq,avx2,pclmulqdq,ssse3")]
pub(crate) fn powers_into(h_bytes: __m128i, _t: Vaes256Token, out: &mut HPowers) -> [__m256i; 8] {
    let times = |a: __m256i, b: __m256i| {
        let mut w = Wide::zero();
        w.mul_add(a, b);
        w.reduce_lanes()
    };
    let h1 = clmul::times_y(bswap(h_bytes));
    let h2 = clmul::mont_mul(h1, h1);
    // `v[i]` holds `H^(2i + 2)` in its low lane and `H^(2i + 1)` in its high one, as the
    // table (highest first) wants them.
    let mut v = [_mm256_setzero_si256(); 8];
    v[0] = _mm256_set_m128i(h1, h2);
    let mut known = 1;
    while known < v.len() {
        // The highest power known so far, in both lanes.
        let top = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(v[known - 1]));
        for i in known..2 * known {
            v[i] = times(v[i - known], top);
        }
        known *= 2;
    }
    for (i, pair) in v.iter().enumerate() {
        // SAFETY: entries `14 - 2i` and `15 - 2i` of a 19-entry table: 32 bytes in bounds.
        unsafe { _mm256_storeu_si256(out.0.as_mut_ptr().add(14 - 2 * i).cast(), *pair) };
    }
    out.0[HPowers::COUNT..].fill(_mm_setzero_si128());
    v
}

/// `H^8 H^7`, `H^6 H^5`, `H^4 H^3`, `H^2 H^1`.
#[inline]
#[target_feature(enable = "avx")]
fn powers8(h: &HPowers) -> [__m256i; VECS] {
    // SAFETY: indices 8..16 of a 19-entry table, four 32-byte loads.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(h.0.as_ptr().add(8 + 2 * i).cast()) })
}

#[inline]
#[target_feature(enable = "avx2")]
fn bswap256(v: __m256i) -> __m256i {
    _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(bswap_mask()))
}

#[inline]
#[target_feature(enable = "avx2")]
fn with_x(d: __m256i, x: __m128i) -> __m256i {
    _mm256_xor_si256(d, _mm256_zextsi128_si256(x))
}

/// GHASH of 8 blocks in byte form continuing from `x`, one reduction.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn hash8(hp: &[__m256i; VECS], x: __m128i, v: &[__m256i; VECS]) -> __m128i {
    let mut w = Wide::zero();
    for i in 0..VECS {
        let mut d = bswap256(v[i]);
        if i == 0 {
            d = with_x(d, x);
        }
        w.mul_add(d, hp[i]);
    }
    w.reduce()
}

/// GHASH of the first `n` (1..=8) blocks of `v` (byte form, zero beyond the data).
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn hash_tail(h: &HPowers, x: __m128i, v: &[__m256i; VECS], n: usize) -> __m128i {
    debug_assert!((1..=8).contains(&n));
    let first = HPowers::COUNT - n;
    let mut w = Wide::zero();
    for i in 0..n.div_ceil(2) {
        // SAFETY: `first + 2i + 1 <= 16 < HPowers::LEN` for every vector that holds data.
        let hp = unsafe { _mm256_loadu_si256(h.0.as_ptr().add(first + 2 * i).cast()) };
        let mut d = bswap256(v[i]);
        if i == 0 {
            d = with_x(d, x);
        }
        w.mul_add(d, hp);
    }
    w.reduce()
}

/// GHASH of `data` (zero-padded) continuing from `x`, in Karatsuba form by the key's
/// powers and their `HXor` halves: 16 blocks per reduction, then 8, then the rest. For the
/// AAD and for the encryption's last two steps, hashed after the loop (see `bulk`).
///
/// Against [`hash_bytes`] (schoolbook, 8 blocks per reduction, the standalone GHASH's):
/// 26 multiplies per 16 blocks instead of 36, and half as many reductions one after the
/// other; on AMD Zen 3 a 256-bit `VPCLMULQDQ` takes about 1.7 of the AES pipes' issue
/// slots (see the module documentation). Inlined into the kernel, where the AAD went
/// through the out-of-line [`ghash()`] before. Measured on an AMD EPYC Zen 3 (family 25
/// model 1), cycles per call, fastest of 20-24 runs of each build alternated, AES-128:
/// seal / open 256 B 253 / 236 -> 182 / 176, 512 B 378 / 323 -> 296 / 272, 4096 B
/// 1755 / 1646 -> 1364 / 1519 (AES-256: 256 B 282 / 254 -> 240 / 222). Most of the
/// 256-byte gain is the AAD's: with only the tail in this form, 255 against 253.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
fn hash_bytes_kara(key: &HwKey, mut x: __m128i, data: &[u8]) -> __m128i {
    let mut chunks = data.chunks_exact(WIDE);
    for chunk in &mut chunks {
        // SAFETY: `chunk` holds 2 * VECS vectors.
        x = unsafe { hash_kara::<{ 2 * VECS }>(key, x, chunk.as_ptr()) };
    }
    let mut rest = chunks.remainder();
    if rest.len() >= CHUNK {
        // SAFETY: `rest` holds at least VECS vectors.
        x = unsafe { hash_kara::<VECS>(key, x, rest.as_ptr()) };
        rest = &rest[CHUNK..];
    }
    if rest.is_empty() {
        return x;
    }
    hash_tail_kara(key, x, &load_rest(rest), rest.len().div_ceil(16), None)
}

/// GHASH of the `M` vectors (byte form) at `p` continuing from `x`, in Karatsuba form by
/// `H^2M .. H^1`, one reduction.
///
/// # Safety
/// `M` vectors (32 bytes each) readable at `p`.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
unsafe fn hash_kara<const M: usize>(key: &HwKey, x: __m128i, p: *const u8) -> __m128i {
    // SAFETY: vector `i < M` at `p` (the caller's contract).
    let v: [__m256i; M] =
        core::array::from_fn(|i| unsafe { _mm256_loadu_si256(p.add(32 * i).cast()) });
    kara_sum(key, x, &v, HPowers::COUNT - 2 * M, None)
}

/// [`hash_tail`] in Karatsuba form, for callers holding the key; with `lens` (the lengths
/// block as [`lengths_block`] gives it), that block too, last, by `H` (see [`kara_sum`]).
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn hash_tail_kara(
    key: &HwKey,
    x: __m128i,
    v: &[__m256i; VECS],
    n: usize,
    lens: Option<__m128i>,
) -> __m128i {
    debug_assert!((1..=8).contains(&n));
    let first = HPowers::COUNT - n - lens.is_some() as usize;
    kara_sum(key, x, &v[..n.div_ceil(2)], first, lens)
}

/// GHASH of the vectors `v` (byte form, two blocks each) continuing from `x`, by the
/// powers from table index `first` on, in Karatsuba form, one reduction; with `lens`, the
/// lengths block (in the form [`lengths_block`] gives) by `H` in the same sum, which then
/// is the whole GHASH if the caller's `first` left `H` for it.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn kara_sum(
    key: &HwKey,
    x: __m128i,
    v: &[__m256i],
    first: usize,
    lens: Option<__m128i>,
) -> __m128i {
    debug_assert!(first + 2 * v.len() <= HPowers::COUNT + 1);
    let mut acc = Kara::zero();
    if let Some(lens) = lens {
        // SAFETY: entries `COUNT - 1` and `COUNT` of the 19-entry tables; unaligned loads.
        // The second lane of the block is zero: the spare power's product is too.
        let (h, hx) = unsafe {
            (
                _mm256_loadu_si256(key.h.0.as_ptr().add(HPowers::COUNT - 1).cast()),
                _mm256_loadu_si256(key.hx.0.as_ptr().add(HPowers::COUNT - 1).cast()),
            )
        };
        acc.mul_add(_mm256_zextsi128_si256(lens), h, hx);
    }
    for (i, &d) in v.iter().enumerate() {
        // SAFETY: `first + 2i + 1 <= 16 < HPowers::LEN` for every vector (the callers'
        // `first` leaves room for `v`), in both tables; unaligned loads.
        let (h, hx) = unsafe {
            (
                _mm256_loadu_si256(key.h.0.as_ptr().add(first + 2 * i).cast()),
                _mm256_loadu_si256(key.hx.0.as_ptr().add(first + 2 * i).cast()),
            )
        };
        let mut d = bswap256(d);
        if i == 0 {
            d = with_x(d, x);
        }
        acc.mul_add(d, h, hx);
    }
    acc.reduce()
}

#[inline]
#[target_feature(enable = "avx2")]
fn inc(k: i32) -> __m256i {
    _mm256_set_epi32(0, 0, 0, k, 0, 0, 0, k)
}

/// Counter vectors `ctr + 2i` (`ctr` holds two consecutive counters), byte order
/// restored and whitened with round key 0.
#[inline]
#[target_feature(enable = "avx2")]
fn counters<const N: usize>(ctr: __m256i, rk0: __m256i) -> [__m256i; N] {
    core::array::from_fn(|i| {
        _mm256_xor_si256(bswap256(_mm256_add_epi32(ctr, inc(2 * i as i32))), rk0)
    })
}

/// The counter blocks of the bulk loop: eight vectors of two big-endian counter blocks,
/// whitened with round key 0.
///
/// When the loop starts at a counter `2 mod 16` (a 96-bit nonce's first data block; see
/// `counters`), the 16 blocks of a step are `16p + 2 ... 16p + 17`, and with
/// `W(m) = rk0 ^ bytes(m)` for a multiple of 16 `m` (whose last byte has a zero low
/// nibble), block `16p + r` is `W(16p) ^ r` in its last byte for `r < 16`, and the last two
/// are `W(16p + 16) ^ 0` and `^ 1`, where `W(16p + 16) = W(16p) ^ (16p ^ (16p + 16))`, a row
/// of the delta table the other kernels step with. So one register, `W`, carries the
/// counters from one step to the next, and each vector is one XOR of it with a constant:
/// the sixteen whitened blocks need not be kept (with sixteen registers, they were spilled
/// to the stack and reloaded every step; Zen 4, 16 KiB: AES-128 seal +5%, AES-256 +3%).
/// In the two steps out of 64 where the table has no row, and for counters that are not
/// public (other nonce lengths, whose counter is not looked at), the blocks are built the
/// plain way: add, byte swap, whiten.
struct Counters {
    /// Little-endian counters `c0, c0+1` (lowest dword counts).
    base: __m256i,
    /// Round key 0 in both lanes.
    rk0: __m256i,
    /// Blocks since `base`.
    done: u32,
    /// Which delta row the next step reads.
    cursor: DeltaCursor,
    /// `W(16p)` in both lanes, where `c0 + done = 16p + 2` (meaningful on the XOR path).
    w: __m256i,
}

/// The last bytes that turn `W(16p)` (or `W(16p + 16)`) into the step's vectors: `2 3`,
/// `4 5`, ... `14 15`, then `0 1` (applied to `W(16p + 16)`).
#[repr(C, align(32))]
struct LowBytes([[u8; 32]; 8]);

static LOW_BYTES: LowBytes = {
    let mut t = [[0u8; 32]; 8];
    let mut i = 0;
    while i < 8 {
        t[i][15] = ((2 + 2 * i) % 16) as u8;
        t[i][31] = ((3 + 2 * i) % 16) as u8;
        i += 1;
    }
    LowBytes(t)
};

impl Counters {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(base: __m256i, rk0: __m256i, public: bool) -> Self {
        Self {
            base,
            rk0,
            done: 0,
            cursor: DeltaCursor::new(_mm256_cvtsi256_si32(base) as u32, public),
            w: Self::w_at(base, 0, rk0),
        }
    }

    /// `W` for the step whose first block is `c0 + done`: the whitened block two below it.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn w_at(base: __m256i, done: u32, rk0: __m256i) -> __m256i {
        let first = _mm256_add_epi32(base, inc(done as i32 - 2));
        // Lane 0's counter in both lanes.
        let first = _mm256_permute2x128_si256::<0x00>(first, first);
        _mm256_xor_si256(bswap256(first), rk0)
    }

    /// The 16 blocks from `done` the plain way: add, byte swap, whiten.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn plain(base: __m256i, done: u32, rk0: __m256i) -> [__m256i; 8] {
        counters(_mm256_add_epi32(base, inc(done as i32)), rk0)
    }

    /// The next 16 counter blocks, whitened; steps past them.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn next16(&mut self) -> [__m256i; 8] {
        let done = self.done;
        self.done = done.wrapping_add(16);
        if let Some(row) = self.cursor.next_row() {
            // SAFETY: a 32-byte row, 32-byte aligned (see `next_row`).
            let d = unsafe { _mm256_load_si256(row.cast::<__m256i>()) };
            let (w, next) = (self.w, _mm256_xor_si256(self.w, d));
            self.w = next;
            core::array::from_fn(|i| {
                // SAFETY: row `i < 8` of the 32-byte-aligned table.
                let low = unsafe { _mm256_load_si256(LOW_BYTES.0[i].as_ptr().cast()) };
                _mm256_xor_si256(if i < 7 { w } else { next }, low)
            })
        } else {
            self.w = Self::w_at(self.base, self.done, self.rk0);
            Self::plain(self.base, done, self.rk0)
        }
    }

    /// The next 8 counter blocks, whitened; steps past them (used once, at the end).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn next8(&mut self) -> [__m256i; VECS] {
        let out = Self::plain(self.base, self.done, self.rk0);
        self.done = self.done.wrapping_add(8);
        core::array::from_fn(|i| out[i])
    }

    /// Little-endian counters for the tail: `c0+done, c0+done+1`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn le(&self) -> __m256i {
        _mm256_add_epi32(self.base, inc(self.done as i32))
    }
}

/// Rounds 1 to NR of the `N` whitened counter vectors `s`, XORed with `input` in the last
/// round, round key `r` from `rk(r)`: the keystream of the tail and of [`short`] (the bulk
/// steps run `stitched_kara!`). The tail reads the table the bulk loop broadcast; the
/// short path broadcasts each key from its 128-bit copy where it is used, since with a
/// table built first (and spilled) AES-256 seal at 48 and 64 bytes took 165 TSC ticks
/// against 100-117 (Zen 4).
#[inline]
#[target_feature(enable = "vaes,avx2")]
fn encrypt_xor<const NR: usize, const N: usize>(
    rk: impl Fn(usize) -> __m256i,
    mut s: [__m256i; N],
    input: &[__m256i; N],
) -> [__m256i; N] {
    for r in 1..NR {
        let k = rk(r);
        for b in s.iter_mut() {
            *b = _mm256_aesenc_epi128(*b, k);
        }
    }
    let last = rk(NR);
    for (b, i) in s.iter_mut().zip(input) {
        *b = _mm256_aesenclast_epi128(*b, _mm256_xor_si256(last, *i));
    }
    s
}

/// An unreduced sum of lane-wise products in Karatsuba form: `lo = Σ a0·h0`,
/// `hi = Σ a1·h1`, `mid = Σ (a0 ^ a1)·(h0 ^ h1)`, three carry-less multiplies per pair of
/// blocks instead of four. The schoolbook middle term is `mid ^ lo ^ hi`.
#[derive(Clone, Copy)]
struct Kara {
    lo: __m256i,
    hi: __m256i,
    mid: __m256i,
}

impl Kara {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn zero() -> Self {
        let z = _mm256_setzero_si256();
        Self {
            lo: z,
            hi: z,
            mid: z,
        }
    }

    /// Adds `a·h` lane by lane; `hx` holds `h0 ^ h1` of each lane's power in its low half.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn mul_add(&mut self, a: __m256i, h: __m256i, hx: __m256i) {
        self.lo = _mm256_xor_si256(self.lo, _mm256_clmulepi64_epi128::<0x00>(a, h));
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(a, h));
        let a01 = _mm256_xor_si256(a, _mm256_shuffle_epi32::<0x4e>(a));
        self.mid = _mm256_xor_si256(self.mid, _mm256_clmulepi64_epi128::<0x00>(a01, hx));
    }

    /// Adds `a·ha` and `b·hb` lane by lane, where `ha` and `hb` hold `HPowers` entries
    /// `k, k + 1` and `k + 2, k + 3`, and `hxp` is `HXor` entries `k, k + 1`: in each lane
    /// the middle factor of `ha`'s power in the low half and of `hb`'s in the high half.
    ///
    /// The two vectors' middle inputs come out of one vector, `a0 ^ a1` in the low half
    /// of each lane and `b0 ^ b1` in the high half: two unpacks and one XOR where
    /// [`Self::mul_add`] twice spends two shuffles and two XORs. On AMD Zen 3 a vector
    /// XOR beside the AES rounds and the multiplies is not free (it takes issue slots
    /// the AES instructions need): with four XORs fewer per 16 blocks (measured by
    /// leaving them out), AES-256-GCM seal at 16 KiB took 3% less time there.
    ///
    /// Swapping shuffles for blends does not pay on AMD Zen 4 (family 25 model 17, this
    /// back end forced; TSC ticks per 16 KiB call, the 20th percentile of 40 runs of 50000
    /// calls in place, best of three alternated processes, AD 13 bytes; AES-128 / AES-256):
    /// the halves regrouped by two blends of the vectors as loaded and then byte-swapped,
    /// one within each half and one whole (two blends and two byte shuffles a pair where
    /// this takes four shuffles; the running hash swapped to join in byte form), seal
    /// 3536 / 3949 -> 3559 / 3962, open 3526 / 3927 -> 3712 / 3912; the byte swaps kept
    /// and the unpacks replaced by a blend and a `VSHUFPD`, seal 3583 / 3940 -> 3532 /
    /// 4014, open 3523 / 3928 -> 3542 / 3975. There a blend costs the loop what a
    /// shuffle does; uops taken out do help (timing only, wrong tags: the eight unpacks
    /// of a step, seal 3536 / 3949 -> 3439 / 3824; its eight byte swaps, 3542 / 3984 ->
    /// 3395 / 3784), 0.3 to 0.5 core cycles each. One reduction per two steps, estimated
    /// the same way (every other step's left out), would gain 1% at most (3765 / 3972 ->
    /// 3731 / 3920): not built.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn mul_add_pair(&mut self, a: __m256i, b: __m256i, ha: __m256i, hb: __m256i, hxp: __m256i) {
        let lo = _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x00>(a, ha),
            _mm256_clmulepi64_epi128::<0x00>(b, hb),
        );
        let hi = _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x11>(a, ha),
            _mm256_clmulepi64_epi128::<0x11>(b, hb),
        );
        let m = _mm256_xor_si256(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        let mid = _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x00>(m, hxp),
            _mm256_clmulepi64_epi128::<0x11>(m, hxp),
        );
        self.lo = _mm256_xor_si256(self.lo, lo);
        self.hi = _mm256_xor_si256(self.hi, hi);
        self.mid = _mm256_xor_si256(self.mid, mid);
    }

    /// Reduces both lanes, then sums them.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn reduce(self) -> __m128i {
        Wide {
            lo: self.lo,
            mi: _mm256_xor_si256(self.mid, _mm256_xor_si256(self.lo, self.hi)),
            hi: self.hi,
        }
        .reduce()
    }
}

/// Which hash unit, if any, runs after AES round `r` (of `nr`), when there are `units`
/// of them (one per hashed vector, then the reduction): they are spread evenly over the
/// `nr - 1` middle rounds, unit `u` after round `1 + u·(nr - 1)/units`, so that the
/// multiplier and the AES units work side by side through the whole step. Never more
/// than one per round, since `units <= nr - 1`.
const fn unit_after_round(r: usize, nr: usize, units: usize) -> Option<usize> {
    let mut u = 0;
    while u < units {
        if 1 + u * (nr - 1) / units == r {
            return Some(u);
        }
        u += 1;
    }
    None
}

/// The middle rounds of `stitched_kara!`, one per literal (those below `NR` run), each
/// followed by the hash unit placed after it, if any.
macro_rules! kara_rounds {
    ($hash:expr, $key:ident, $rk:ident, $s:ident, $hash_src:ident, $x:ident, $acc:ident,
     $first:ident; $($r:literal)*) => {$(
        if $r < NR {
            for b in $s.iter_mut() {
                *b = _mm256_aesenc_epi128(*b, $rk[$r]);
            }
            if let (true, Some(u)) = ($hash, const { unit_after_round($r, NR, M / 2 + 1) }) {
                if u < M / 2 {
                    let v = 2 * ((u + 1) % (M / 2));
                    // SAFETY: vectors `v, v + 1 < M` at `hash_src` (the invocation's
                    // contract), and entries up to `first + 2v + 3 < HPowers::COUNT` of
                    // the 19-entry tables, each load 32-byte aligned (`first + 2v` is
                    // even, the tables 64-byte aligned).
                    let (da, db, ha, hb, hxp) = unsafe {
                        (
                            _mm256_loadu_si256($hash_src.add(32 * v).cast()),
                            _mm256_loadu_si256($hash_src.add(32 * v + 32).cast()),
                            _mm256_load_si256($key.h.0.as_ptr().add($first + 2 * v).cast()),
                            _mm256_load_si256($key.h.0.as_ptr().add($first + 2 * v + 2).cast()),
                            _mm256_load_si256($key.hx.0.as_ptr().add($first + 2 * v).cast()),
                        )
                    };
                    let mut da = bswap256(da);
                    if v == 0 {
                        da = with_x(da, *$x);
                    }
                    let mut db = bswap256(db);
                    opaque2(&mut da, &mut db);
                    $acc.mul_add_pair(da, db, ha, hb, hxp);
                } else {
                    *$x = $acc.reduce();
                }
                pin(&mut $s, &mut $acc);
            }
        }
    )*};
}

/// One step of the bulk loop: rounds 1 to `NR` of the `$n` whitened counter vectors
/// `$s`, XORed with the `$n` input vectors at `$input` in the last round; with `$hash`,
/// the GHASH of the `$m` vectors (byte form) at `$hash_src` continuing from `$x`, in
/// Karatsuba form, by the powers from table index `HPowers::COUNT - 2m` (`H^2m .. H^1`),
/// reduced into `$x` at the end. Evaluates to the `$n` output vectors.
///
/// The hash work comes in `m / 2 + 1` units, each placed after one AES round: the pairs
/// of vectors `2, 3` to `m - 2, m - 1`, then vectors `0, 1`, where vector 0 carries `x`
/// and so waits for the previous step's reduction (placed last, it has the whole step to
/// arrive), then the reduction itself.
/// Each unit is tied to its round by [`pin`], without which the code generator gathers
/// the hash work in one place and the two kinds of work no longer overlap.
///
/// A macro, expanded inside `bulk`'s `#[target_feature]` context, rather than a function:
/// as an `#[inline]` function the code generator declined to inline the 16-block form
/// (arrays passed through memory, a call per step: AES-128 seal at 0.6x), and as a loop
/// over the rounds it kept them rolled with a branch per round to find the unit. So the
/// rounds are written out too (`kara_rounds!`).
///
/// Contract of an invocation: `$n` vectors (32 bytes each) readable at `$input`, and with
/// `$hash`, `$m` at `$hash_src`.
macro_rules! stitched_kara {
    ($hash:expr, $n:literal, $m:literal, $key:expr, $rk:expr, $s:expr, $input:expr,
     $hash_src:expr, $x:expr $(,)?) => {{
        const M: usize = $m;
        // Whole pairs, and at most one hash unit per middle round of AES-128.
        const { assert!(M <= 8 && M % 2 == 0 && M / 2 + 1 < 10) };
        let (key, rk, input, hash_src, x): (&HwKey, &[__m256i; 15], *const u8, *const u8, &mut __m128i) =
            ($key, $rk, $input, $hash_src, $x);
        let mut s: [__m256i; $n] = $s;
        let first = HPowers::COUNT - 2 * M;
        let mut acc = Kara::zero();
        kara_rounds!($hash, key, rk, s, hash_src, x, acc, first; 1 2 3 4 5 6 7 8 9 10 11 12 13);
        for (i, b) in s.iter_mut().enumerate() {
            // SAFETY: vector `i < n` at `input` (the invocation's contract).
            let inp = unsafe { _mm256_loadu_si256(input.add(32 * i).cast()) };
            *b = _mm256_aesenclast_epi128(*b, _mm256_xor_si256(rk[NR], inp));
        }
        s
    }};
}

/// An empty `asm!` that claims to change `a` and `b`: it keeps the code generator from
/// merging the byte swaps of two hashed vectors into the unpacks that follow them
/// ([`Kara::mul_add_pair`]), which it otherwise rewrites as more shuffles and blends
/// (AES-256 open's step: 313 instructions with 20 byte shuffles and 6 blends, against
/// 289 with 8 and none). Measured on an AMD EPYC Zen 3, at 16 KiB, fastest of 75 runs,
/// TSC cycles, without it and with it: AES-128 open 4410 and 4165, AES-256 open 4998 and
/// 4777.
#[inline]
#[target_feature(enable = "avx")]
fn opaque2(a: &mut __m256i, b: &mut __m256i) {
    // As in `pin`: nothing for Miri or MemorySanitizer.
    #[cfg(any(miri, ct_msan))]
    let _ = (a, b);
    // SAFETY: the template is empty: no instruction runs, no memory or flags change.
    #[cfg(not(any(miri, ct_msan)))]
    unsafe {
        core::arch::asm!(
            "/* {0} {1} */",
            inout(ymm_reg) * a,
            inout(ymm_reg) * b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
}

/// An empty `asm!` that claims to read and write the eight AES states and the hash
/// accumulators. It emits nothing; it keeps the code generator from moving a hash unit
/// away from the round it follows (see `stitched_kara!`).
#[inline]
#[target_feature(enable = "avx")]
fn pin<const N: usize>(s: &mut [__m256i; N], acc: &mut Kara) {
    // Miri cannot run `asm!`, and MemorySanitizer would report the secrets going into it
    // and lose track of them coming out; the pin only matters to the code generator.
    #[cfg(any(miri, ct_msan))]
    let _ = (s, acc);
    #[cfg(not(any(miri, ct_msan)))]
    if let [s0, s1, s2, s3, s4, s5, s6, s7] = &mut s[..] {
        // SAFETY: the template is empty: no instruction runs, no memory or flags change.
        unsafe {
            core::arch::asm!(
                "/* {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} */",
                inout(ymm_reg) * s0,
                inout(ymm_reg) * s1,
                inout(ymm_reg) * s2,
                inout(ymm_reg) * s3,
                inout(ymm_reg) * s4,
                inout(ymm_reg) * s5,
                inout(ymm_reg) * s6,
                inout(ymm_reg) * s7,
                inout(ymm_reg) acc.lo,
                inout(ymm_reg) acc.hi,
                inout(ymm_reg) acc.mid,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    } else if let [s0, s1, s2, s3] = &mut s[..] {
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "/* {0} {1} {2} {3} {4} {5} {6} */",
                inout(ymm_reg) * s0,
                inout(ymm_reg) * s1,
                inout(ymm_reg) * s2,
                inout(ymm_reg) * s3,
                inout(ymm_reg) acc.lo,
                inout(ymm_reg) acc.hi,
                inout(ymm_reg) acc.mid,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    }
}

/// 16 blocks per iteration: eight AES chains (see the module documentation).
const WIDE: usize = 2 * CHUNK;

/// # Safety
/// `off + WIDE <= io.len`.
#[inline(always)]
unsafe fn store8(io: InOut, off: usize, v: &[__m256i; 8]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + WIDE` inside the output.
        unsafe { _mm256_storeu_si256(io.dst.add(off + 32 * i).cast(), *b) };
    }
}

/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn store4(io: InOut, off: usize, v: &[__m256i; VECS]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + CHUNK` inside the output.
        unsafe { _mm256_storeu_si256(io.dst.add(off + 32 * i).cast(), *b) };
    }
}

/// CTR over all of `io` from the byte-reversed counter `ctr`; with `HASH`, GHASH of the
/// ciphertext (output if `ENC`, input otherwise) continuing from `x`. `public` says
/// whether the counter's value may steer the counter scheme (see `Counters`).
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    x: __m128i,
    io: InOut,
) -> __m128i {
    // SAFETY: forwarded contract.
    unsafe { bulk_with::<NR, ENC, HASH>(key, ctr, public, x, io, None).0 }
}

/// [`bulk`]; with `lens` (the associated data's and the message's lengths in bytes), an
/// encryption that ends in a partial step gets the lengths block hashed in the tail's
/// reduction, which saves the multiply and reduction of `finish_tag` on the tag's
/// critical path: the second value returned says whether it was, in which case the first
/// is the whole GHASH.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk_with<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    mut x: __m128i,
    io: InOut,
    lens: Option<(usize, usize)>,
) -> (__m128i, bool) {
    let mut rk = [_mm256_setzero_si256(); 15];
    for i in 0..=NR {
        rk[i] = _mm256_broadcastsi128_si256(key.aes.rk[i]);
    }
    let base = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(ctr),
        _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 0),
    );
    let mut ctrs = Counters::new(base, rk[0], public);
    let mut off = 0;

    // Every `stitched_kara!` below reads its input at `off` with `off + WIDE <= io.len`
    // (or `CHUNK` for the 8-block step), and hashes either that input (decryption) or
    // output written two steps before (encryption, `hashed + 2 * WIDE == off`).
    // Encryption: the start of the output not yet hashed (decryption hashes as it goes).
    let mut hashed = 0;
    // An 8-block step (4 vectors: counters `$ctrs`, input at `$input`) that hashes the 16
    // blocks of output from `hashed` on, in its AES rounds.
    macro_rules! hash_oldest_16 {
        ($ctrs:expr, $input:expr) => {{
            let back = io.dst.cast_const().wrapping_add(hashed);
            hashed += WIDE;
            stitched_kara!(true, 4, 8, key, &rk, $ctrs, $input, back, &mut x)
        }};
    }
    if ENC && HASH {
        // Two steps without hashing, then each hashes the output of two steps back (see
        // the module documentation).
        let src = io.src;
        while off + WIDE <= io.len && off < 2 * WIDE {
            let out = stitched_kara!(
                false,
                8,
                8,
                key,
                &rk,
                ctrs.next16(),
                src.wrapping_add(off),
                src,
                &mut x
            );
            // SAFETY: `off + WIDE <= io.len`.
            unsafe { store8(io, off, &out) };
            off += WIDE;
        }
        while off + WIDE <= io.len {
            let back = io.dst.cast_const().wrapping_add(hashed);
            let out = stitched_kara!(
                true,
                8,
                8,
                key,
                &rk,
                ctrs.next16(),
                src.wrapping_add(off),
                back,
                &mut x
            );
            // SAFETY: `off + WIDE <= io.len`.
            unsafe { store8(io, off, &out) };
            hashed += WIDE;
            off += WIDE;
        }
        if off + CHUNK <= io.len {
            // The 8-block step hashes the oldest 16 blocks of output still unhashed, if
            // there are that many, rather than leave them to be hashed after the last AES
            // round (the tail below does the same). Measured on an AMD EPYC Zen 4 (family
            // 25 model 17, this back end forced), TSC ticks per call, fastest of 10000
            // batches of eight, three runs alternated, AD 13 bytes, seal AES-128 / AES-256:
            // 272 B 188-195 / 211-217 -> 175-188 / 198-208, 400 B 230-234 / 263-273 ->
            // 217-227 / 240-243, 1350 B and 16 KiB within noise.
            let out = if off - hashed >= WIDE {
                hash_oldest_16!(ctrs.next8(), src.wrapping_add(off))
            } else {
                stitched_kara!(
                    false,
                    4,
                    4,
                    key,
                    &rk,
                    ctrs.next8(),
                    src.wrapping_add(off),
                    src,
                    &mut x
                )
            };
            // SAFETY: `off + CHUNK <= io.len`.
            unsafe { store4(io, off, &out) };
            off += CHUNK;
        }
    } else {
        while off + WIDE <= io.len {
            let p = io.src.wrapping_add(off);
            let out = stitched_kara!(HASH, 8, 8, key, &rk, ctrs.next16(), p, p, &mut x);
            // SAFETY: `off + WIDE <= io.len`.
            unsafe { store8(io, off, &out) };
            off += WIDE;
        }
        if off + CHUNK <= io.len {
            let p = io.src.wrapping_add(off);
            let out = stitched_kara!(HASH, 4, 4, key, &rk, ctrs.next8(), p, p, &mut x);
            // SAFETY: `off + CHUNK <= io.len`.
            unsafe { store4(io, off, &out) };
            off += CHUNK;
        }
    }

    let rem = io.len - off;
    // Only seal's tag waits for its hash: open's waits for the AES at least as long (the
    // lengths block folded in measured no faster there, 272 B AES-256 4% slower). Made
    // here, not before the loops, where it would hold a register through them.
    let lens = lens
        .filter(|_| ENC && HASH && rem > 0)
        .map(|(aad_len, len)| lengths_block(aad_len, len));
    // The tail (below) of an encryption likewise hashes 16 blocks of earlier output in its
    // AES rounds, if that many are still unhashed.
    let tail_with_hash = ENC && HASH && rem > 0 && off - hashed >= WIDE;
    let mut tail_out = [_mm256_setzero_si256(); VECS];
    if rem > 0 {
        let ctr = ctrs.le();
        // The tail is read and written in place, its partial last block included (see
        // `partial`): through a stack buffer, a byte copy in and vector loads out (and on
        // seal a copy out and zero fill before hashing) made loads that span several
        // smaller stores, which wait until those stores reach the cache. Measured on an
        // AMD EPYC Zen 4 (family 25 model 17, this back end forced), TSC ticks per call,
        // fastest of 10000 batches of eight, three runs alternated, AD 13 bytes, AES-128
        // seal: 272 B 221-263 -> 188-195, 400 B 273-292 -> 230-237, 1350 B 500-523 ->
        // 458-468 (AES-256 572-598 -> 520-526); open within a few ticks either way (136 B
        // 130 -> 113-126).
        let (src, dst) = (io.src.wrapping_add(off), io.dst.wrapping_add(off));
        let nv = rem.div_ceil(32);
        let mut input = [_mm256_setzero_si256(); VECS];
        for (i, v) in input[..nv].iter_mut().enumerate() {
            // SAFETY: `off + rem == io.len`: the input is readable for `rem` bytes at `src`.
            *v = unsafe { load_pair(src, rem, i) };
        }
        if HASH && !ENC {
            x = hash_tail_kara(key, x, &input, rem.div_ceil(16), None);
        }
        // Only as many vectors as hold data go through AES, unless the tail hashes.
        let k0 = rk[0];
        let round_key = |r: usize| rk[r];
        tail_out = if tail_with_hash {
            // The step reads its input from memory: whole vectors, stored whole just
            // before, which the store buffer forwards.
            hash_oldest_16!(counters(ctr, k0), input.as_ptr().cast::<u8>())
        } else {
            match nv {
                1 => widen(encrypt_xor::<NR, 1>(
                    round_key,
                    counters(ctr, k0),
                    &[input[0]],
                )),
                2 => widen(encrypt_xor::<NR, 2>(
                    round_key,
                    counters(ctr, k0),
                    &[input[0], input[1]],
                )),
                3 => widen(encrypt_xor::<NR, 3>(
                    round_key,
                    counters(ctr, k0),
                    &[input[0], input[1], input[2]],
                )),
                _ => encrypt_xor::<NR, 4>(round_key, counters(ctr, k0), &input),
            }
        };
        for (i, v) in tail_out[..nv].iter().enumerate() {
            // SAFETY: the output is writable for `rem` bytes at `dst`, and all of the input
            // was read above.
            unsafe { store_pair(dst, rem, i, *v) };
        }
        if ENC {
            // Keystream beyond the message is not ciphertext: GHASH pads with zeros.
            let keep = partial::keep_first32(rem - 32 * (nv - 1));
            tail_out[nv - 1] = _mm256_and_si256(tail_out[nv - 1], keep);
        }
    }
    if ENC && HASH {
        // SAFETY: output written above, not written again while the slice lives.
        let unhashed = unsafe { core::slice::from_raw_parts(io.dst.add(hashed), off - hashed) };
        x = hash_bytes_kara(key, x, unhashed);
        if rem > 0 {
            x = hash_tail_kara(key, x, &tail_out, rem.div_ceil(16), lens);
        }
    }
    (x, lens.is_some())
}

#[inline(always)]
fn widen<const N: usize>(v: [__m256i; N]) -> [__m256i; VECS] {
    // SAFETY: an all-zero bit pattern is a valid __m256i.
    let mut out = [unsafe { core::mem::zeroed::<__m256i>() }; VECS];
    out[..N].copy_from_slice(&v);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table derived two powers a vector is the one the 128-bit code derives, entry
    /// for entry (the three zero entries included), for hash keys with every bit pattern
    /// class: zero, one bit at either end, all ones, and mixed.
    #[test]
    fn powers_match_the_128_bit_derivation() {
        let Some(t) = Vaes256Token::new() else { return };
        let mixed: [u8; 16] = core::array::from_fn(|i| (i as u8).wrapping_mul(0x9d) ^ 0x5a);
        let mut one_high = [0u8; 16];
        one_high[0] = 0x80;
        let mut one_low = [0u8; 16];
        one_low[15] = 1;
        for h in [[0u8; 16], one_high, one_low, [0xff; 16], mixed] {
            // SAFETY: the token proves PCLMULQDQ and SSSE3.
            let expected = unsafe { clmul::powers(load16(&h)) };
            // Filled with a pattern, so that an entry left unwritten shows.
            // SAFETY: 16 bytes to 16 bytes; every bit pattern is a valid `__m128i`.
            let fill = unsafe { core::mem::transmute::<[u8; 16], __m128i>([0x77; 16]) };
            let mut got = HPowers([fill; HPowers::LEN]);
            // SAFETY: 16 bytes to 16 bytes; every bit pattern is a valid `[u8; 16]`.
            let bytes = |v: __m128i| -> [u8; 16] { unsafe { core::mem::transmute(v) } };
            // SAFETY: the token proves the features.
            unsafe { powers_into(load16(&h), t, &mut got) };
            for k in 0..HPowers::LEN {
                assert_eq!(
                    bytes(got.0[k]),
                    bytes(expected.0[k]),
                    "entry {k}, H {h:02x?}"
                );
            }
        }
    }
}

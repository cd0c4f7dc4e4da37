//! SHA-1 for x86_64 CPUs with AVX2 and BMI1/BMI2 but no SHA extensions (Intel's Haswell
//! to Cascade Lake and Cooper Lake, the Skylake-derived clients up to Comet Lake), which
//! otherwise ran the sha1 crate's portable rounds.
//!
//! The layout of `sha256_avx2`: the message schedule of two blocks at once on 256-bit
//! vectors (block A's words in the low 128-bit lane, block B's in the high one, four
//! words a step), computed while block A's rounds run, so that block B's rounds only
//! read the precomputed `W + K`; the rounds scalar with `rorx`. Each round is written
//! with its number known at compile time, so that its function (`Ch`, parity or `Maj`)
//! is picked when it is built. No branch or memory index depends on the data.
//!
//! The schedule, `W[t] = rol1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16])`, makes the fourth
//! word of a step depend on the first; from word 32 on it is computed as `W[t] =
//! rol2(W[t-6] ^ W[t-16] ^ W[t-28] ^ W[t-32])` (the recurrence applied to itself), whose
//! four words are independent: 7 vector operations a step against 13. So the window
//! holds 32 words of each block, eight vectors.
//!
//! The body is generic over the schedule's rotations and XORs ([`Schedule`]): this
//! file's AVX2 ones, or `sha1_avx512`'s for the CPUs of this kind that have AVX-512.

use core::arch::x86_64::*;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use super::Hook;
use super::sha512::{Between, group_of_16};
use super::two_blocks::{self, load_pair_32, opaque_u32 as opaque};

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx2_bmi_available()
}

/// Core cycles the four rounds between two hook calls take when they wait only on
/// themselves (2.5 a round, measured on Zen 3), against which [`rounds16`] weighs a
/// hook's `CHAIN_CYCLES`.
pub(crate) const SLOT_CYCLES: usize = 10;

/// The round constants, one for each 20 rounds.
const K: [u32; 4] = [0x5a82_7999, 0x6ed9_eba1, 0x8f1b_bcdc, 0xca62_c1d6];

/// `W + K` for two blocks, four words of block A then the same four of block B, so one
/// 256-bit store writes a schedule step of both; 4 steps to a group of 16 rounds.
pub(crate) type Wk = two_blocks::Wk<[u32; 8], 20, 4>;

/// Stores step `j` (words `4 j .. 4 j + 4` of both blocks) plus its round constant into
/// `slot`, which rounds `4 j .. 4 j + 4` read.
#[inline]
#[target_feature(enable = "avx2")]
fn put_step(slot: &mut MaybeUninit<[u32; 8]>, j: usize, words: __m256i) {
    let k = _mm256_set1_epi32(K[j / 5] as i32);
    // SAFETY: `slot` is 32 writable bytes; the store is unaligned.
    unsafe { _mm256_storeu_si256(slot.as_mut_ptr().cast(), _mm256_add_epi32(words, k)) };
}

/// The vector operations of the message schedule that differ between CPU levels: AVX2
/// builds rotations from two shifts and an OR, AVX-512VL has them (`VPROLD`) and XORs
/// three vectors in one `VPTERNLOGD` (`sha1_avx512`). The rest of the engine is shared.
pub(crate) trait Schedule {
    /// `a ^ b ^ c ^ d`.
    ///
    /// # Safety
    /// The CPU must have the implementation's features.
    unsafe fn xor4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m256i;

    /// Each 32-bit word rotated left by 1.
    ///
    /// # Safety
    /// As [`Self::xor4`].
    unsafe fn rol1(x: __m256i) -> __m256i;

    /// Each 32-bit word rotated left by 2.
    ///
    /// # Safety
    /// As [`Self::xor4`].
    unsafe fn rol2(x: __m256i) -> __m256i;
}

/// The AVX2 schedule operations.
#[derive(Debug)]
pub(crate) enum Avx2 {}

impl Schedule for Avx2 {
    #[inline(always)]
    unsafe fn xor4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d)) }
    }
    #[inline(always)]
    unsafe fn rol1(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { rol::<1, 31>(x) }
    }
    #[inline(always)]
    unsafe fn rol2(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { rol::<2, 30>(x) }
    }
}

/// Each 32-bit word rotated left by `L` (`R` = 32 - `L`), in three operations.
#[inline]
#[target_feature(enable = "avx2")]
fn rol<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<L>(x), _mm256_srli_epi32::<R>(x))
}

/// Schedule step `j` (4..20) for both blocks, from the window `x`, whose slot `j % 8`
/// holds step `j - 8` and is overwritten with step `j`.
///
/// # Safety
/// The CPU must have AVX2 and `S`'s features.
#[inline(always)]
unsafe fn schedule_step<S: Schedule>(x: &mut [__m256i; 8], j: usize) {
    let s = j % 8;
    let step = |back: usize| x[(j + 8 - back) % 8];
    // SAFETY: the caller guarantees the features.
    let new = unsafe {
        if j < 8 {
            // Words 16..32: `rol1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16])`, whose fourth
            // word needs the first, `W[t]`: rotated in with its own rotation afterwards.
            let w16 = step(4);
            let w14 = _mm256_alignr_epi8::<8>(step(3), step(4));
            let w8 = step(2);
            // `W[t-3], W[t-2], W[t-1], 0`.
            let w3 = _mm256_bsrli_epi128::<4>(step(1));
            let r = S::rol1(S::xor4(w16, w14, w8, w3));
            // Word 3 lacked `W[t]` (word 0 of `r`) inside the rotation: `rol1` of it,
            // moved to word 3.
            _mm256_xor_si256(r, S::rol1(_mm256_bslli_epi128::<12>(r)))
        } else {
            // `rol2(W[t-6] ^ W[t-16] ^ W[t-28] ^ W[t-32])`.
            let w6 = _mm256_alignr_epi8::<8>(step(1), step(2));
            S::rol2(S::xor4(step(4), step(7), step(8), w6))
        }
    };
    x[s] = new;
}

/// The message schedule of the next group of 16 rounds, run between block A's rounds
/// ([`group_of_16!`] calls it after every two): a step on every second call, so one
/// after each 4 rounds, as `sha256_avx2::NextSchedule`.
struct NextSchedule<'a, S> {
    /// The schedule's window of 32 words of both blocks (step `j` in slot `j % 8`).
    x: &'a mut [__m256i; 8],
    /// Where the next group's `W + K` go.
    next: &'a mut [MaybeUninit<[u32; 8]>; 4],
    /// The first step of the next group.
    j: usize,
    schedule: PhantomData<S>,
}

impl<S: Schedule> Between for NextSchedule<'_, S> {
    #[inline(always)]
    unsafe fn run(&mut self, s: usize) {
        if s % 2 == 1 {
            let j = self.j + s / 2;
            // SAFETY: the caller guarantees this engine's features, AVX2 among them.
            unsafe {
                schedule_step::<S>(self.x, j);
                put_step(&mut self.next[s / 2], j, self.x[j % 8]);
            }
        }
    }
}

/// The round function of round `$t` (`Ch`, parity or `Maj`) of `b, c, d`, in the
/// forms with the fewest register copies on a two-operand ISA.
macro_rules! f {
    ($t:expr; $b:expr, $c:expr, $d:expr) => {
        if $t < 20 {
            // Ch(b, c, d): `andn` builds `!b & d` without a copy of `b`.
            ($b & $c) ^ (!$b & $d)
        } else if $t < 40 || $t >= 60 {
            $b ^ $c ^ $d
        } else {
            // Maj(b, c, d), as `(b ^ c) & (c ^ d) ^ c`.
            (($b ^ $c) & ($c ^ $d)) ^ $c
        }
    };
}

/// Round `$t` (0..80), the caller rotating the names instead of the values, in the form
/// OpenSSL's AVX2 SHA-1 keeps between rounds: on entry `$f` already holds the round's
/// function of `b, c, d`, and `b` is already rotated by 30. `e` gains `W + K`, `f` and
/// `rol5(a)`, in that order (the sum of the first two is ready before `a`, the previous
/// round's result, is); the round then builds the next round's function from `a` (the
/// next `b`, not yet rotated), `b` and `c`, and rotates `a`. Round 79 builds no function
/// and leaves `a` unrotated, so the state comes out in the usual form.
///
/// The chain from one `a` to the next is `rorx` and `add`, two cycles a round, and the
/// rounds run close to it, so where its instructions sit in the program matters (the
/// core's schedulers pick the oldest ready instruction). `$alone` (the rounds wait only
/// on themselves: the plain compressions, which opens run, and the stitched seals whose
/// CBC chain is shorter than the rounds, AES-128's) writes the final `add` last and pins
/// `a` beside its rotation ([`pin_pair`]), so that `rol5` of each new `a` is issued as
/// soon as the `a` is computed, ahead of the function building: 150 TSC ticks a block
/// against 161 with the sum written first (Zen 3, fastest of 3000 compressions of 256
/// blocks; OpenSSL's AVX2 SHA-1 148); in the AES-128-CBC-SHA1 seal, about 3% at 16 KiB
/// (17.3-17.4 -> 16.8-17.1 us across builds). Where the CBC chain paces the rounds
/// (AES-256: 14 rounds a block against AES-128's 10) or the hook's work is not known at
/// compile time (`CbcHook`), the sum comes first and the compiler places the rest: the
/// other form made AES-256-CBC-SHA1 seals 3-4% slower (19.9 -> 20.6 us at 16 KiB; all
/// on Zen 3).
macro_rules! round {
    ($t:expr, $alone:expr; $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $wk:expr) => {
        if $alone {
            let a5 = $a.rotate_left(5);
            let sum = opaque(opaque($e.wrapping_add($wk)).wrapping_add($f));
            if $t != 79 {
                let (a, a30) = pin_pair($a, $a.rotate_left(30));
                $f = f!($t + 1; a, $b, $c);
                $a = a30;
            }
            $e = opaque(sum).wrapping_add(a5);
        } else {
            $e = opaque(opaque($e.wrapping_add($wk)).wrapping_add($f)).wrapping_add($a.rotate_left(5));
            if $t != 79 {
                $f = f!($t + 1; $a, $b, $c);
                $a = $a.rotate_left(30);
            }
        }
    };
}

/// `(x, y)` unchanged, with the claim that both changed together, so that whatever
/// computes `y` from `x` runs before whatever reads the returned `x`: [`round!`]'s
/// rotation of `a` stays ahead of the function built from `a`, whose `and` or `xor` may
/// then overwrite `a` instead of a copy of it. Under MemorySanitizer and Miri,
/// `black_box`, as `opaque`.
#[inline(always)]
fn pin_pair(#[allow(unused_mut)] mut x: u32, #[allow(unused_mut)] mut y: u32) -> (u32, u32) {
    #[cfg(any(ct_msan, miri))]
    return core::hint::black_box((x, y));
    // SAFETY: the template is empty: no instruction runs, no memory or flags change.
    #[cfg(not(any(ct_msan, miri)))]
    unsafe {
        core::arch::asm!(
            "/* {0:e} {1:e} */",
            inout(reg) x,
            inout(reg) y,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    #[cfg(not(any(ct_msan, miri)))]
    (x, y)
}

/// 16 rounds, `16 * G ..`, of block A (`L` = 0) or B (`L` = 4) on the working variables
/// `v` and `function`, in the form [`round!`] keeps between rounds (see
/// [`enter_rounds`]), reading `W + K` from `wk`, calling `hook` before every 4 rounds and
/// running `between` after every two.
///
/// # Safety
/// The CPU must have this engine's features (`between` runs AVX2 code).
#[inline(always)]
unsafe fn rounds16<const L: usize, const G: usize, H: Hook, B: Between>(
    v: &mut [u32; 5],
    function: &mut u32,
    wk: &[[u32; 8]; 4],
    hook: &mut H,
    between: &mut B,
) {
    let [mut a, mut b, mut c, mut d, mut e] = *v;
    let mut f = *function;
    // Whether the rounds wait only on themselves (see `round!`).
    let alone = H::CHAIN_CYCLES < SLOT_CYCLES;
    macro_rules! w {
        ($i:literal) => {
            wk[$i / 4][L + $i % 4]
        };
    }
    group_of_16!(hook, between;
        { round!(16 * G, alone; a, b, c, d, e, f, w!(0)); }
        { round!(16 * G + 1, alone; e, a, b, c, d, f, w!(1)); }
        { round!(16 * G + 2, alone; d, e, a, b, c, f, w!(2)); }
        { round!(16 * G + 3, alone; c, d, e, a, b, f, w!(3)); }
        { round!(16 * G + 4, alone; b, c, d, e, a, f, w!(4)); }
        { round!(16 * G + 5, alone; a, b, c, d, e, f, w!(5)); }
        { round!(16 * G + 6, alone; e, a, b, c, d, f, w!(6)); }
        { round!(16 * G + 7, alone; d, e, a, b, c, f, w!(7)); }
        { round!(16 * G + 8, alone; c, d, e, a, b, f, w!(8)); }
        { round!(16 * G + 9, alone; b, c, d, e, a, f, w!(9)); }
        { round!(16 * G + 10, alone; a, b, c, d, e, f, w!(10)); }
        { round!(16 * G + 11, alone; e, a, b, c, d, f, w!(11)); }
        { round!(16 * G + 12, alone; d, e, a, b, c, f, w!(12)); }
        { round!(16 * G + 13, alone; c, d, e, a, b, f, w!(13)); }
        { round!(16 * G + 14, alone; b, c, d, e, a, f, w!(14)); }
        { round!(16 * G + 15, alone; a, b, c, d, e, f, w!(15)); }
    );
    // After 16 rounds the names have turned one place: the new `a` is in `e`.
    *v = [e, a, b, c, d];
    *function = f;
}

/// Puts the chaining value into the form [`round!`] keeps between rounds: round 0's
/// function of `b, c, d` beside it, `b` rotated by 30.
#[inline(always)]
fn enter_rounds(state: &[u32; 5]) -> ([u32; 5], u32) {
    let [a, b, c, d, e] = *state;
    ([a, b.rotate_left(30), c, d, e], f!(0; b, c, d))
}

/// Adds the working variables into the chaining value (the feed-forward).
#[inline(always)]
fn feed_forward(state: &mut [u32; 5], v: &[u32; 5]) {
    for (s, x) in state.iter_mut().zip(v) {
        *s = s.wrapping_add(*x);
    }
}

/// Block A's group `G` (0..4) with the next group's schedule beside it.
///
/// # Safety
/// As [`rounds16`]; the steps of group `G` are written.
#[inline(always)]
unsafe fn scheduled_group<const G: usize, S: Schedule, H: Hook>(
    v: &mut [u32; 5],
    f: &mut u32,
    wk: &mut Wk,
    x: &mut [__m256i; 8],
    hook: &mut H,
) {
    wk.publish();
    // SAFETY: the caller guarantees group `G`'s steps.
    let (cur, next) = unsafe { wk.group_and_next(G) };
    let mut schedule = NextSchedule::<S> {
        x,
        next,
        j: 4 * (G + 1),
        schedule: PhantomData,
    };
    // SAFETY: the caller guarantees the features.
    unsafe { rounds16::<0, G, H, _>(v, f, cur, hook, &mut schedule) };
}

/// Compresses block A of `words` (from [`load_pair_32`]) and then, if `both`, block B,
/// calling `hook` 20 times a block, before each 4 rounds (so that what it starts, seal's
/// CBC encryption, overlaps those rounds: see `stitch`), and writing the chaining value
/// after block A to `after_a`, if given.
///
/// # Safety
/// The CPU must have this engine's features.
#[inline(always)]
pub(crate) unsafe fn compress_pair<S: Schedule, H: Hook>(
    state: &mut [u32; 5],
    wk: &mut Wk,
    words: [__m256i; 4],
    both: bool,
    after_a: Option<&mut [u32; 5]>,
    hook: &mut H,
) {
    // SAFETY: the caller guarantees AVX2.
    let mut x = [unsafe { _mm256_setzero_si256() }; 8];
    for (j, w) in words.iter().enumerate() {
        x[j] = *w;
        // SAFETY: the caller guarantees AVX2.
        unsafe { put_step(wk.step_mut(j), j, *w) };
    }
    let (mut v, mut f) = enter_rounds(state);
    // SAFETY: the caller guarantees the features; steps 0..4 were written above, and
    // each group writes the next group's.
    unsafe {
        scheduled_group::<0, S, H>(&mut v, &mut f, wk, &mut x, hook);
        scheduled_group::<1, S, H>(&mut v, &mut f, wk, &mut x, hook);
        scheduled_group::<2, S, H>(&mut v, &mut f, wk, &mut x, hook);
        scheduled_group::<3, S, H>(&mut v, &mut f, wk, &mut x, hook);
        wk.publish();
        rounds16::<0, 4, H, _>(&mut v, &mut f, wk.group(4), hook, &mut ());
    }
    feed_forward(state, &v);
    if let Some(after_a) = after_a {
        *after_a = *state;
    }
    if both {
        let (mut v, mut f) = enter_rounds(state);
        // SAFETY: all 20 steps are written by now; nothing between the rounds.
        unsafe {
            rounds16::<4, 0, H, _>(&mut v, &mut f, wk.group(0), hook, &mut ());
            rounds16::<4, 1, H, _>(&mut v, &mut f, wk.group(1), hook, &mut ());
            rounds16::<4, 2, H, _>(&mut v, &mut f, wk.group(2), hook, &mut ());
            rounds16::<4, 3, H, _>(&mut v, &mut f, wk.group(3), hook, &mut ());
            rounds16::<4, 4, H, _>(&mut v, &mut f, wk.group(4), hook, &mut ());
        }
        feed_forward(state, &v);
    }
}

/// Compresses `blocks` into `state`, two at a time (one schedule for both), a lone last
/// block through the same code.
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(crate) fn compress(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the engine's features.
    unsafe { compress_with::<Avx2>(state, blocks) }
}

/// [`compress`] with the schedule operations of `S`.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2 and `S`'s features.
#[inline(always)]
pub(crate) unsafe fn compress_with<S: Schedule>(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    let mut wk = Wk::new();
    for p in blocks.chunks(2) {
        let both = p.len() == 2;
        let b = &p[p.len() - 1];
        // SAFETY: the caller guarantees the features.
        unsafe {
            let words = load_pair_32(&p[0], b);
            compress_pair::<S, _>(state, &mut wk, words, both, None, &mut ());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::x86_64::sha1_avx512;

    /// Both builds against the sha1 crate, from random chaining values on 0 to 5 blocks
    /// (pairs and a lone last block).
    #[test]
    fn matches_sha1() {
        crate::x86_64::check_compressions(
            0x6745_2301_efcd_ab89u64,
            sha1::block_api::compress,
            &[
                ("the AVX2 engine", available, compress),
                (
                    "the AVX-512VL engine",
                    sha1_avx512::available,
                    sha1_avx512::compress,
                ),
            ],
        );
    }
}

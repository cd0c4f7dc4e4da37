//! SHA-256 for x86_64 CPUs with AVX2 and BMI1/BMI2 but no SHA extensions: Intel's
//! Haswell to Cascade Lake and Cooper Lake servers and the Skylake-derived clients up to
//! Comet Lake (every AMD core with AVX2 has SHA-NI). Without this engine those CPUs ran
//! the sha2 crate's portable rounds, about 0.8x of OpenSSL's AVX2 assembly.
//!
//! The layout of `sha512`'s engine, for 32-bit words: the message schedule of two blocks
//! at once on 256-bit vectors (block A's words in the low 128-bit lane, block B's in the
//! high one, four words a step), computed while block A's rounds run (half a step after
//! every two rounds, through `sha512`'s [`group_of_16!`] and [`Between`]), so that block
//! B's rounds only read the precomputed `W + K`. The rounds are scalar with `rorx`, in
//! the fewest operations (22 a round, as `sha512::round!`'s `FewestOps` form): every
//! core without SHA-NI that has AVX2 has four integer ALUs, which the count bounds. No
//! branch or memory index depends on the data.
//!
//! The body is generic over the schedule's σ functions ([`Sigmas`]): this file's AVX2
//! ones, or `sha256_avx512`'s rotations for the CPUs of this kind that have AVX-512.

use core::arch::x86_64::*;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use super::Hook;
use super::sha256_ni::K;
use super::sha512::{Between, group_of_16};
use super::two_blocks::{self, load_pair_32, opaque_u32 as opaque};

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx2_bmi_available()
}

/// `W + K` for two blocks, four words of block A then the same four of block B, so one
/// 256-bit store writes a schedule step of both; 4 steps to a group of 16 rounds.
pub(crate) type Wk = two_blocks::Wk<[u32; 8], 16, 4>;

/// Stores words `t .. t + 4` of both blocks plus `K[t .. t + 4]` into `slot`, the step
/// that rounds `t .. t + 4` read; `t` is a multiple of 4.
#[inline]
#[target_feature(enable = "avx2")]
fn put_step(slot: &mut MaybeUninit<[u32; 8]>, t: usize, words: __m256i) {
    let k = &K[t..t + 4];
    // SAFETY: `k` is 16 readable bytes.
    let k = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(k.as_ptr().cast()) });
    // SAFETY: `slot` is 32 writable bytes; the store is unaligned.
    unsafe { _mm256_storeu_si256(slot.as_mut_ptr().cast(), _mm256_add_epi32(words, k)) };
}

/// The vector operations of the message schedule that differ between CPU levels: the σ
/// functions, which AVX2 builds from shifts and AVX-512VL from rotations (`sha256_avx512`).
/// The rest of the engine is shared.
pub(crate) trait Sigmas {
    /// σ0 (`ror 7 ^ ror 18 ^ shr 3`) of each 32-bit word.
    ///
    /// # Safety
    /// The CPU must have the implementation's features.
    unsafe fn small_sigma0(x: __m256i) -> __m256i;

    /// σ1 (`ror 17 ^ ror 19 ^ shr 10`) of words 2 and 3 of each lane, in words 0 and 1,
    /// with words 2 and 3 zero.
    ///
    /// # Safety
    /// As [`Self::small_sigma0`].
    unsafe fn small_sigma1_down(x: __m256i) -> __m256i;

    /// σ1 of words 0 and 1 of each lane, in words 2 and 3, with words 0 and 1 zero.
    ///
    /// # Safety
    /// As [`Self::small_sigma0`].
    unsafe fn small_sigma1_up(x: __m256i) -> __m256i;
}

/// The AVX2 σ functions.
#[derive(Debug)]
pub(crate) enum Avx2 {}

impl Sigmas for Avx2 {
    #[inline(always)]
    unsafe fn small_sigma0(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { small_sigma0(x) }
    }
    #[inline(always)]
    unsafe fn small_sigma1_down(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { small_sigma1_moved::<0b11_11_10_10, true>(x) }
    }
    #[inline(always)]
    unsafe fn small_sigma1_up(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { small_sigma1_moved::<0b01_01_00_00, false>(x) }
    }
}

/// σ0 of each 32-bit word, from 32-bit shifts (AVX2 has no rotation): the two halves of
/// each rotation have disjoint bits, so all are XORed in. 9 operations.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    let r7 = _mm256_xor_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x));
    let r18 = _mm256_xor_si256(_mm256_srli_epi32::<18>(x), _mm256_slli_epi32::<14>(x));
    _mm256_xor_si256(_mm256_xor_si256(r7, r18), _mm256_srli_epi32::<3>(x))
}

/// σ1 of two words of each lane, picked and doubled by `PICK` (`[w, w, w', w']`, a
/// shuffle of the words), moved to words 0 and 1 (`DOWN`) or 2 and 3, the other two
/// zeroed: a 64-bit shift of `w:w` leaves the rotation in its low 32 bits, so each
/// rotation takes one shift. 7 operations.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1_moved<const PICK: i32, const DOWN: bool>(x: __m256i) -> __m256i {
    let v = _mm256_shuffle_epi32::<PICK>(x);
    let rot = _mm256_xor_si256(_mm256_srli_epi64::<17>(v), _mm256_srli_epi64::<19>(v));
    let s1 = _mm256_xor_si256(rot, _mm256_srli_epi32::<10>(v));
    // The results are in words 0 and 2: a byte shuffle gathers them into words 0 and 1,
    // or into 2 and 3, and zeroes the other two (a set high bit zeroes the byte).
    let (z, w0, w2) = (-128, [0, 1, 2, 3], [8, 9, 10, 11]);
    let gather = if DOWN {
        _mm_setr_epi8(
            w0[0], w0[1], w0[2], w0[3], w2[0], w2[1], w2[2], w2[3], z, z, z, z, z, z, z, z,
        )
    } else {
        _mm_setr_epi8(
            z, z, z, z, z, z, z, z, w0[0], w0[1], w0[2], w0[3], w2[0], w2[1], w2[2], w2[3],
        )
    };
    _mm256_shuffle_epi8(s1, _mm256_broadcastsi128_si256(gather))
}

/// One schedule step for both blocks, words `t .. t + 4` from the window
/// `x[s..] ++ x[..s]` of words `t - 16 .. t`, in two halves (see [`NextSchedule`]).
/// The first: `W[t - 16] + W[t - 7] + σ0(W[t - 15])` for all four words.
///
/// # Safety
/// The CPU must have AVX2 and `S`'s features.
#[inline(always)]
unsafe fn step_start<S: Sigmas>(x: &[__m256i; 4], s: usize) -> __m256i {
    // SAFETY: the caller guarantees the features.
    unsafe {
        let w15 = _mm256_alignr_epi8::<4>(x[(s + 1) % 4], x[s]);
        let w7 = _mm256_alignr_epi8::<4>(x[(s + 3) % 4], x[(s + 2) % 4]);
        _mm256_add_epi32(_mm256_add_epi32(x[s], w7), S::small_sigma0(w15))
    }
}

/// The second half: σ1 of words `t - 2, t - 1` (the newest two, in `newest`'s words 2
/// and 3) added to words `t, t + 1`, then σ1 of those two added to `t + 2, t + 3`.
///
/// # Safety
/// As [`step_start`].
#[inline(always)]
unsafe fn step_finish<S: Sigmas>(sum: __m256i, newest: __m256i) -> __m256i {
    // SAFETY: the caller guarantees the features.
    unsafe {
        let sum = _mm256_add_epi32(sum, S::small_sigma1_down(newest));
        _mm256_add_epi32(sum, S::small_sigma1_up(sum))
    }
}

/// The message schedule of the next group of 16 rounds, run between block A's rounds
/// ([`group_of_16!`] calls it after every two): the first half of a step on even calls,
/// the second half and the store on odd ones, so that the vector work is spread evenly
/// through the scalar rounds (as in `sha512::NextSchedule`, where a batch before the
/// rounds held them back). A struct, not a closure, for the same reason as there.
struct NextSchedule<'a, S> {
    /// The schedule's window of 16 words of both blocks.
    x: &'a mut [__m256i; 4],
    /// Where the next group's `W + K` go.
    next: &'a mut [MaybeUninit<[u32; 8]>; 4],
    /// The first round of the next group.
    t: usize,
    /// The first half of the step under way.
    sum: __m256i,
    sigmas: PhantomData<S>,
}

impl<S: Sigmas> Between for NextSchedule<'_, S> {
    #[inline(always)]
    unsafe fn run(&mut self, s: usize) {
        let step = s / 2;
        // SAFETY: the caller guarantees this engine's features, AVX2 among them.
        unsafe {
            if s.is_multiple_of(2) {
                self.sum = step_start::<S>(self.x, step);
            } else {
                let newest = self.x[(step + 3) % 4];
                self.x[step] = step_finish::<S>(self.sum, newest);
                put_step(&mut self.next[step], self.t + 4 * step, self.x[step]);
            }
        }
    }
}

#[inline(always)]
fn big_sigma0(a: u32) -> u32 {
    a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22)
}

#[inline(always)]
fn big_sigma1(e: u32) -> u32 {
    e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25)
}

/// One round in 22 operations (see `sha512::round!`, `FewestOps`); the caller rotates the
/// names instead of the values. `x` carries `a ^ b` to the next round, where it is
/// `b ^ c`, so that `Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b` takes two more operations.
/// `(a ^ b) & (b ^ c)` passes through `opaque`: otherwise LLVM sees that `(b ^ c) ^ b` is
/// `c` and, in some rounds, builds a select of `b` and `c` instead (`ANDN`, `AND`, `OR` and
/// a copy). As written, the compression took 297-298 TSC ticks a block against 302-305
/// (Intel Xeon with AVX512-FP16, a KVM guest reporting family 6 model 0xa7; three runs).
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $x:ident, $wk:expr) => {
        let ch = (($f ^ $g) & $e) ^ $g;
        let hk_ch = opaque(opaque($h.wrapping_add($wk)).wrapping_add(ch));
        let t1 = hk_ch.wrapping_add(big_sigma1($e));
        $d = $d.wrapping_add(t1);
        let ab = $a ^ $b;
        let maj = opaque(ab & $x) ^ $b;
        $x = ab;
        $h = opaque(t1.wrapping_add(maj)).wrapping_add(big_sigma0($a));
    };
}

/// 16 rounds of block A (`L` = 0) or B (`L` = 4) on the working variables `v`, reading
/// `W + K` from `wk`, calling `hook` before every 4 rounds and running `between` after
/// every two.
///
/// # Safety
/// The CPU must have this engine's features (`between` runs AVX2 code).
#[inline(always)]
unsafe fn rounds16<const L: usize, H: Hook, B: Between>(
    v: &mut [u32; 8],
    wk: &[[u32; 8]; 4],
    hook: &mut H,
    between: &mut B,
) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *v;
    let mut x = b ^ c;
    macro_rules! w {
        ($i:literal) => {
            wk[$i / 4][L + $i % 4]
        };
    }
    group_of_16!(hook, between;
        { round!(a, b, c, d, e, f, g, h, x, w!(0)); }
        { round!(h, a, b, c, d, e, f, g, x, w!(1)); }
        { round!(g, h, a, b, c, d, e, f, x, w!(2)); }
        { round!(f, g, h, a, b, c, d, e, x, w!(3)); }
        { round!(e, f, g, h, a, b, c, d, x, w!(4)); }
        { round!(d, e, f, g, h, a, b, c, x, w!(5)); }
        { round!(c, d, e, f, g, h, a, b, x, w!(6)); }
        { round!(b, c, d, e, f, g, h, a, x, w!(7)); }
        { round!(a, b, c, d, e, f, g, h, x, w!(8)); }
        { round!(h, a, b, c, d, e, f, g, x, w!(9)); }
        { round!(g, h, a, b, c, d, e, f, x, w!(10)); }
        { round!(f, g, h, a, b, c, d, e, x, w!(11)); }
        { round!(e, f, g, h, a, b, c, d, x, w!(12)); }
        { round!(d, e, f, g, h, a, b, c, x, w!(13)); }
        { round!(c, d, e, f, g, h, a, b, x, w!(14)); }
        { round!(b, c, d, e, f, g, h, a, x, w!(15)); }
    );
    let _ = x;
    *v = [a, b, c, d, e, f, g, h];
}

/// Adds the working variables into the chaining value (the feed-forward).
#[inline(always)]
fn feed_forward(state: &mut [u32; 8], v: &[u32; 8]) {
    for (s, x) in state.iter_mut().zip(v) {
        *s = s.wrapping_add(*x);
    }
}

/// Compresses block A of `x` (from [`load_pair_32`]) and then, if `both`, block B, calling
/// `hook` 16 times a block, before each 4 rounds (so that what it starts, seal's CBC
/// encryption, overlaps those rounds: see `stitch`), and writing the chaining value
/// after block A to `after_a`, if given.
///
/// # Safety
/// The CPU must have this engine's features.
#[inline(always)]
pub(crate) unsafe fn compress_pair<S: Sigmas, H: Hook>(
    state: &mut [u32; 8],
    wk: &mut Wk,
    mut x: [__m256i; 4],
    both: bool,
    after_a: Option<&mut [u32; 8]>,
    hook: &mut H,
) {
    for (s, w) in x.iter().enumerate() {
        // SAFETY: the caller guarantees AVX2.
        unsafe { put_step(wk.step_mut(s), 4 * s, *w) };
    }
    let mut v = *state;
    for group in 0..3 {
        // SAFETY: steps 0..4 were written before this loop, and those of each later
        // group in the iteration before.
        let (cur, next) = unsafe { wk.group_and_next(group) };
        let mut schedule = NextSchedule::<S> {
            x: &mut x,
            next,
            t: 16 * (group + 1),
            // SAFETY: the caller guarantees AVX2.
            sum: unsafe { _mm256_setzero_si256() },
            sigmas: PhantomData,
        };
        // SAFETY: the caller guarantees the features.
        unsafe { rounds16::<0, H, _>(&mut v, cur, hook, &mut schedule) };
    }
    // SAFETY: steps 12..16 were written in the last iteration; nothing between the rounds.
    unsafe { rounds16::<0, H, _>(&mut v, wk.group(3), hook, &mut ()) };
    feed_forward(state, &v);
    if let Some(after_a) = after_a {
        *after_a = *state;
    }
    if both {
        let mut v = *state;
        if H::IS_EMPTY || H::NUMBERED {
            // Written out, so that every `W + K` is at a constant offset from the stack
            // pointer (as block B in `sha512::compress_pair`, where a loop over the
            // groups cost a register, and a reload a round), and so that a numbered
            // hook's call numbers are constants. With `CbcHook`, a loop, as there (its
            // code between the rounds made the written-out block more than the
            // decoded-op cache holds).
            // SAFETY: all 16 steps are written by now; nothing between the rounds.
            unsafe {
                rounds16::<4, H, _>(&mut v, wk.group(0), hook, &mut ());
                rounds16::<4, H, _>(&mut v, wk.group(1), hook, &mut ());
                rounds16::<4, H, _>(&mut v, wk.group(2), hook, &mut ());
                rounds16::<4, H, _>(&mut v, wk.group(3), hook, &mut ());
            }
        } else {
            for group in 0..4 {
                // SAFETY: as above.
                unsafe { rounds16::<4, H, _>(&mut v, wk.group(group), hook, &mut ()) };
            }
        }
        feed_forward(state, &v);
    }
}

/// Compresses `blocks` into `state`, two at a time (one schedule for both), a lone last
/// block through the same code; writes the chaining value after the first block to
/// `after_first`, if given (for a secret-length finish's pairs, as
/// `sha512::compress`).
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(crate) fn compress(
    state: &mut [u32; 8],
    blocks: &[[u8; 64]],
    after_first: Option<&mut [u32; 8]>,
) {
    // SAFETY: this function has the engine's features.
    unsafe { compress_with::<Avx2>(state, blocks, after_first) }
}

/// [`compress`] with the σ functions of `S`.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2 and `S`'s features.
#[inline(always)]
pub(crate) unsafe fn compress_with<S: Sigmas>(
    state: &mut [u32; 8],
    blocks: &[[u8; 64]],
    mut after_first: Option<&mut [u32; 8]>,
) {
    let mut wk = Wk::new();
    for p in blocks.chunks(2) {
        let both = p.len() == 2;
        let b = &p[p.len() - 1];
        // SAFETY: the caller guarantees the features.
        unsafe {
            compress_pair::<S, _>(
                state,
                &mut wk,
                load_pair_32(&p[0], b),
                both,
                after_first.take(),
                &mut (),
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::x86_64::sha256_avx512;

    /// Both builds against the sha2 crate, from random chaining values on 0 to 5 blocks
    /// (pairs and a lone last block).
    #[test]
    fn matches_sha2() {
        crate::x86_64::check_compressions(
            0x6a09_e667_f3bc_c908u64,
            sha2::block_api::compress256,
            &[
                ("the AVX2 engine", available, compress_all),
                ("the AVX-512VL engine", sha256_avx512::available, avx512_all),
            ],
        );
    }

    /// [`compress`] without the chaining value after the first block.
    ///
    /// # Safety
    /// As [`compress`]: the engine's features.
    unsafe fn compress_all(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        // SAFETY: the caller guarantees the features.
        unsafe { compress(state, blocks, None) }
    }

    /// The same for `sha256_avx512::compress`.
    ///
    /// # Safety
    /// As that function: its engine's features.
    unsafe fn avx512_all(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        // SAFETY: the caller guarantees the features.
        unsafe { sha256_avx512::compress(state, blocks, None) }
    }

    /// The chaining value after the first block, which a secret-length finish keeps.
    #[test]
    fn after_first_block() {
        if !available() {
            std::eprintln!("skipped: no AVX2/BMI2");
            return;
        }
        let blocks: [[u8; 64]; 2] = core::array::from_fn(|i| {
            core::array::from_fn(|j| (i * 64 + j).wrapping_mul(151) as u8)
        });
        let start: [u32; 8] = core::array::from_fn(|i| 0x0123_4567u32.wrapping_mul(i as u32 + 3));
        let (mut want_mid, mut want) = (start, start);
        sha2::block_api::compress256(&mut want_mid, &blocks[..1]);
        sha2::block_api::compress256(&mut want, &blocks);
        let (mut got, mut got_mid) = (start, [0; 8]);
        // SAFETY: checked above.
        unsafe { compress(&mut got, &blocks, Some(&mut got_mid)) };
        assert_eq!((got, got_mid), (want, want_mid));
    }
}

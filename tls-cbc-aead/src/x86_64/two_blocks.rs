//! What the engines that schedule two blocks at once on 256-bit vectors share (`sha512`,
//! `sha256_avx2`, `sha1_avx2`): the buffer of `W + K` that the vector schedule writes a
//! step of both blocks at a time (one 256-bit store) and the scalar rounds read a word at
//! a time, and, for the 64-byte blocks, the load of a pair of blocks into those steps.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::sha512::define_opaque;

cpufeatures::new!(avx2_bmi, "avx2", "bmi1", "bmi2");
cpufeatures::new!(avx512vl_bmi, "avx2", "bmi1", "bmi2", "avx512f", "avx512vl");

/// Whether this CPU (and OS) has what the AVX2 engines need (AVX2, BMI1, BMI2), less what
/// the constant-time harness hides.
pub(crate) fn avx2_bmi_available() -> bool {
    use gcm_core::__CpuFeatures as F;
    // The constant-time harness can hide these, to run what CPUs without them run.
    avx2_bmi::get() && !crate::ct_check::hidden(F::AVX | F::AVX2)
}

/// Whether this CPU (and OS) has what the AVX-512VL engines need (those of
/// [`avx2_bmi_available`] and AVX-512F and AVX-512VL), less what the constant-time
/// harness hides.
pub(crate) fn avx512vl_bmi_available() -> bool {
    use gcm_core::__CpuFeatures as F;
    avx512vl_bmi::get() && !crate::ct_check::hidden(F::AVX | F::AVX2 | F::AVX512F | F::AVX512VL)
}

define_opaque!(
    /// A 32-bit word computed as written (see `sha512::opaque`): SHA-1's and SHA-256's
    /// rounds.
    opaque_u32,
    u32,
    reg,
    "/* {0:e} */"
);

/// `N` schedule steps of `W + K` (each a `T`: the words of a step of block A, then the
/// same words of block B), grouped `S` steps to a group of 16 rounds.
///
/// Made uninitialised: the compressions write every step before the rounds that read it.
/// Zeroing the SHA-512 one's 1280 bytes cost a `memset` call in each compression, several
/// per record.
#[repr(C, align(32))]
pub(crate) struct Wk<T, const N: usize, const S: usize>([MaybeUninit<T>; N]);

impl<T: Copy, const N: usize, const S: usize> Wk<T, N, S> {
    /// A buffer with no step written yet.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Wk([MaybeUninit::uninit(); N])
    }

    /// Step `i`'s slot, to be written.
    #[inline(always)]
    pub(crate) fn step_mut(&mut self, i: usize) -> &mut MaybeUninit<T> {
        &mut self.0[i]
    }

    /// The steps of rounds `16 * group ..` (as [`Self::group`]) and the slots of the
    /// next group's, to be written while those rounds run.
    ///
    /// # Safety
    /// As [`Self::group`].
    #[inline(always)]
    pub(crate) unsafe fn group_and_next(
        &mut self,
        group: usize,
    ) -> (&[T; S], &mut [MaybeUninit<T>; S]) {
        let (done, rest) = self.0.split_at_mut(S * group + S);
        let steps: &[MaybeUninit<T>; S] = done[S * group..].try_into().unwrap();
        let next: &mut [MaybeUninit<T>; S] = (&mut rest[..S]).try_into().unwrap();
        // SAFETY: as in `group`.
        (unsafe { &*steps.as_ptr().cast::<[T; S]>() }, next)
    }

    /// The steps of rounds `16 * group ..`, as one array so that the rounds index it with
    /// constants.
    ///
    /// # Safety
    /// Steps `S * group .. S * group + S` must have been written.
    #[inline(always)]
    pub(crate) unsafe fn group(&self, group: usize) -> &[T; S] {
        let steps: &[MaybeUninit<T>; S] = self.0[S * group..S * group + S].try_into().unwrap();
        // SAFETY: the caller guarantees that these steps are initialised, and
        // `MaybeUninit<T>` has the layout of `T`.
        unsafe { &*steps.as_ptr().cast::<[T; S]>() }
    }

    /// Makes the steps written so far reach memory, and the rounds after this read them
    /// from there. Where a compression lays out all of a pair of blocks with constant
    /// indices (`sha1_avx2`), LLVM otherwise kept the steps in vector registers and took
    /// each word out with `VPEXTRD` (two operations, one on a port the rounds' rotations
    /// use) instead of adding it from memory within the round's addition: SHA-1's
    /// compression ran 183 TSC ticks a block, against 151 with this (Intel Xeon,
    /// AVX512-FP16 and AMX, a KVM guest reporting family 6 model 0xa7).
    #[inline(always)]
    pub(crate) fn publish(&mut self) {
        core::hint::black_box(self);
    }
}

/// The 16 message words of 64-byte blocks `a` and `b`, big-endian to native, as
/// `[a[4i..4i + 4], b[4i..4i + 4]]` for `i` in `0..4` (SHA-1 and SHA-256).
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn load_pair_32(a: &[u8; 64], b: &[u8; 64]) -> [__m256i; 4] {
    let swap = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
    ));
    core::array::from_fn(|i| {
        let (pa, pb) = (&a[16 * i..16 * i + 16], &b[16 * i..16 * i + 16]);
        // SAFETY: `pa` and `pb` are 16 readable bytes each; the loads are unaligned.
        let v = unsafe { _mm256_loadu2_m128i(pb.as_ptr().cast(), pa.as_ptr().cast()) };
        _mm256_shuffle_epi8(v, swap)
    })
}

//! The SHA-512 engine for CPUs with AVX2 and BMI1/BMI2 but no AVX-512 (Zen 2/3, Haswell
//! to Alder Lake): the shared body of `sha512` with the schedule's σ functions built from
//! 64-bit shifts, the rotation by 8 as one byte shuffle.

use core::arch::x86_64::*;

use super::sha512::{self, RoundForm, Sigmas};
use super::two_blocks;

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx2_bmi_available()
}

/// The AVX2 σ functions.
#[derive(Debug)]
pub(crate) enum Avx2 {}

impl Sigmas for Avx2 {
    #[inline(always)]
    unsafe fn small_sigma0(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { small_sigma0(x) }
    }
    #[inline(always)]
    unsafe fn small_sigma1(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { small_sigma1(x) }
    }
}

/// `ror 1 ^ ror 8 ^ shr 7`; each rotation's two halves have disjoint bits, so every
/// piece is XORed in.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    // Byte `i` of each word takes byte `i + 1`: a rotation right by 8 bits.
    let ror8 = _mm256_setr_epi8(
        1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8, //
        1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8,
    );
    let r1 = _mm256_xor_si256(_mm256_srli_epi64::<1>(x), _mm256_slli_epi64::<63>(x));
    let r8_s7 = _mm256_xor_si256(_mm256_shuffle_epi8(x, ror8), _mm256_srli_epi64::<7>(x));
    _mm256_xor_si256(r1, r8_s7)
}

/// `ror 19 ^ ror 61 ^ shr 6`.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    let right = _mm256_xor_si256(_mm256_srli_epi64::<19>(x), _mm256_srli_epi64::<61>(x));
    let left = _mm256_xor_si256(_mm256_slli_epi64::<45>(x), _mm256_slli_epi64::<3>(x));
    _mm256_xor_si256(_mm256_xor_si256(right, left), _mm256_srli_epi64::<6>(x))
}

/// Compresses `blocks` into `state`, with the rounds in form `F`, writing the chaining
/// value after the first block to `after_first` if given (see `sha512::compress`).
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(crate) fn compress<F: RoundForm>(
    state: &mut [u64; 8],
    blocks: &[[u8; 128]],
    after_first: Option<&mut [u64; 8]>,
) {
    // SAFETY: this function has the engine's features.
    unsafe { sha512::compress::<Avx2, F>(state, blocks, after_first) }
}

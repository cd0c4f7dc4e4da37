//! SHA-256 for x86_64 CPUs with AVX-512VL but no SHA extensions: Intel's Skylake-SP,
//! Cascade Lake and Cooper Lake Xeons (and the Skylake-X desktops). The engine of
//! `sha256_avx2` with the message schedule's σ functions on `VPRORD` and `VPTERNLOGD`
//! (256-bit vectors, which run at full clock on those cores): σ0 in 4 operations
//! against AVX2's 9, each half of σ1 in 5 against 7. The vector work shares ports 0, 1
//! and 5 with the scalar rounds there, so every operation saved is a slot the rounds
//! get back.
//!
//! Not measured on those CPUs (none reachable). `llvm-mca-19 -mcpu=skylake-avx512` (the
//! same for `cascadelake`) puts the first block's 16 rounds that carry the schedule at
//! 124.9 cycles against 136.4 on AVX2, about 4% of a pair of blocks. On an Intel Xeon
//! with AVX512-FP16 (a KVM guest reporting family 6 model 0xa7; Golden Cove's wider
//! core, with more ports to spare) the compression took 292-300 TSC ticks a block
//! against 297-304 (three runs), and the records 1-2.5% less time (`speed --tls-engines
//! --hash-engine avx512 --backend aesni`).

use core::arch::x86_64::*;

use super::sha256_avx2::{self, Sigmas};
use super::sha512_avx512::xor3;
use super::two_blocks;

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx512vl_bmi_available()
}

/// The AVX-512VL σ functions.
#[derive(Debug)]
pub(crate) enum Avx512 {}

impl Sigmas for Avx512 {
    #[inline(always)]
    unsafe fn small_sigma0(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { small_sigma0(x) }
    }
    #[inline(always)]
    unsafe fn small_sigma1_down(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features; the byte shift leaves
        // words 2 and 3 in 0 and 1 and zeroes the rest.
        unsafe { _mm256_bsrli_epi128::<8>(small_sigma1(x)) }
    }
    #[inline(always)]
    unsafe fn small_sigma1_up(x: __m256i) -> __m256i {
        // SAFETY: as above, words 0 and 1 to 2 and 3.
        unsafe { _mm256_bslli_epi128::<8>(small_sigma1(x)) }
    }
}

/// `ror 7 ^ ror 18 ^ shr 3` of each 32-bit word.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn small_sigma0(x: __m256i) -> __m256i {
    let (r7, r18) = (_mm256_ror_epi32::<7>(x), _mm256_ror_epi32::<18>(x));
    xor3(r7, r18, _mm256_srli_epi32::<3>(x))
}

/// `ror 17 ^ ror 19 ^ shr 10` of each 32-bit word.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn small_sigma1(x: __m256i) -> __m256i {
    let (r17, r19) = (_mm256_ror_epi32::<17>(x), _mm256_ror_epi32::<19>(x));
    xor3(r17, r19, _mm256_srli_epi32::<10>(x))
}

/// Compresses `blocks` into `state` (as `sha256_avx2::compress`).
#[target_feature(enable = "avx2,bmi1,bmi2,avx512f,avx512vl")]
pub(crate) fn compress(
    state: &mut [u32; 8],
    blocks: &[[u8; 64]],
    after_first: Option<&mut [u32; 8]>,
) {
    // SAFETY: this function has the engine's features.
    unsafe { sha256_avx2::compress_with::<Avx512>(state, blocks, after_first) }
}

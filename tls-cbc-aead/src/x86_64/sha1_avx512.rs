//! SHA-1 for x86_64 CPUs with AVX-512VL but no SHA extensions: Intel's Skylake-SP,
//! Cascade Lake and Cooper Lake Xeons (and the Skylake-X desktops). The engine of
//! `sha1_avx2` with the message schedule's rotations as `VPROLD` and three of each
//! step's four-way XOR in one `VPTERNLOGD` (256-bit vectors, which run at full clock
//! on those cores): a step in 4 operations against AVX2's 7 (7 against 12 for words
//! 16..32). The vector work shares ports 0, 1 and 5 with the scalar rounds there.
//!
//! Not measured on those CPUs (none reachable). `llvm-mca-19 -mcpu=skylake-avx512` (the
//! same for `cascadelake`) puts the first block's 80 rounds, which carry the schedule,
//! at 216.6 cycles against 227.7 on AVX2. On an Intel Xeon with AVX512-FP16 (a KVM
//! guest reporting family 6 model 0xa7) the compression took 137-148 TSC ticks a block
//! against 140-151 (three runs), and the records 1-4% less time.

use core::arch::x86_64::*;

use super::sha1_avx2::{self, Schedule};
use super::sha512_avx512::xor3;
use super::two_blocks;

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx512vl_bmi_available()
}

/// The AVX-512VL schedule operations.
#[derive(Debug)]
pub(crate) enum Avx512 {}

impl Schedule for Avx512 {
    #[inline(always)]
    unsafe fn xor4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features. `d` last: the callers
        // pass the word that depends on the newest step there.
        unsafe { _mm256_xor_si256(xor3(a, b, c), d) }
    }
    #[inline(always)]
    unsafe fn rol1(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { rol::<1>(x) }
    }
    #[inline(always)]
    unsafe fn rol2(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { rol::<2>(x) }
    }
}

/// Each 32-bit word rotated left by `L`.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn rol<const L: i32>(x: __m256i) -> __m256i {
    _mm256_rol_epi32::<L>(x)
}

/// Compresses `blocks` into `state` (as `sha1_avx2::compress`).
#[target_feature(enable = "avx2,bmi1,bmi2,avx512f,avx512vl")]
pub(crate) fn compress(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the engine's features.
    unsafe { sha1_avx2::compress_with::<Avx512>(state, blocks) }
}

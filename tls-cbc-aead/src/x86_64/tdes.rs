//! 3DES CBC decryption compiled for AVX2 and for AVX-512: the portable body
//! (`TdesEde3::cbc_decrypt_in_groups`) in `#[target_feature]` functions, where LLVM turns
//! each round's operations on the `u64` words of 8 or 16 blocks into 256- or 512-bit
//! vector operations. No intrinsics: the same code as the baseline kernel, wider.

use crate::tdes::TdesEde3;

cpufeatures::new!(avx2_cpuid, "avx2");
cpufeatures::new!(avx512_cpuid, "avx512f", "avx512vl");

/// Whether this CPU (and OS) can run the AVX2 kernel (less what the constant-time
/// harness hides).
pub(crate) fn avx2_available() -> bool {
    use gcm_core::__CpuFeatures as F;
    avx2_cpuid::get() && !crate::ct_check::hidden(F::AVX | F::AVX2)
}

/// Whether this CPU (and OS) can run the AVX-512 kernel (less what the constant-time
/// harness hides).
pub(crate) fn avx512_available() -> bool {
    use gcm_core::__CpuFeatures as F;
    avx512_cpuid::get() && avx2_available() && !crate::ct_check::hidden(F::AVX512F | F::AVX512VL)
}

/// CBC decryption, 8 blocks at a time on 256-bit vectors.
#[target_feature(enable = "avx2")]
pub(crate) fn cbc_decrypt_avx2(cipher: &TdesEde3, iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
    cipher.cbc_decrypt_in_groups::<8>(iv, blocks);
}

/// CBC decryption, 16 blocks at a time on 512-bit vectors.
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(crate) fn cbc_decrypt_avx512(cipher: &TdesEde3, iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
    cipher.cbc_decrypt_in_groups::<16>(iv, blocks);
}

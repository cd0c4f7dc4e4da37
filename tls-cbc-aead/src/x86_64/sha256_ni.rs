//! SHA-256 compression on the x86 SHA extensions (SHA-NI: Intel since Ice Lake and
//! Goldmont, AMD since Zen).
//!
//! `SHA256RNDS2` runs two rounds on the chaining value held as two vectors, `ABEF` and
//! `CDGH`; `SHA256MSG1`/`SHA256MSG2` extend the message schedule four words at a time.
//! The first step of that has two forms ([`Schedule`]): `SHA256MSG1` itself, or its σ0
//! in AVX-512VL rotations and a three-way XOR, for cores whose SHA unit is slow at
//! `SHA256MSG1` (see [`VectorAlu`]).
//! The chaining value stays in that layout across the blocks of a call ([`Regs`]), and
//! the rounds call a hook before every 16 of them, so that seal can run its CBC chain on
//! the AES unit beside them (see `stitch`). No branch or memory index depends on the data.

use core::arch::x86_64::*;

use super::{
    Hook,
    sha_ext::{sha256msg1, sha256msg2, sha256rnds2},
    sha512_avx512::ternary_lane,
};

cpufeatures::new!(cpuid, "sha", "sse2", "ssse3", "sse4.1");
cpufeatures::new!(cpuid_avx512, "sha", "sse4.1", "avx2", "avx512f", "avx512vl");

/// Whether this CPU can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    use gcm_core::__CpuFeatures as F;
    // The constant-time harness can hide these, to run what CPUs without them run.
    cpuid::get() && !crate::ct_check::hidden(F::SHA | F::SSSE3 | F::SSE41)
}

/// Whether this CPU (and OS) can run the engine with the schedule's first step on
/// AVX-512VL ([`compress_avx512`]).
pub(crate) fn available_avx512() -> bool {
    use gcm_core::__CpuFeatures as F;
    available()
        && cpuid_avx512::get()
        && !crate::ct_check::hidden(F::AVX | F::AVX2 | F::AVX512F | F::AVX512VL)
}

/// The round constants (the first 32 bits of the fractional parts of the cube roots of
/// the first 64 primes).
pub(super) static K: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

/// The chaining value as the instructions want it: dwords `[F, E, B, A]` and
/// `[H, G, D, C]`, lowest first.
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    abef: __m128i,
    cdgh: __m128i,
}

impl Regs {
    /// From the standard word order `[A, B, .., H]`.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(crate) fn load(state: &[u32; 8]) -> Self {
        // SAFETY: `state` is 32 readable bytes; the loads are unaligned.
        let (abcd, efgh) = unsafe {
            let p = state.as_ptr().cast::<__m128i>();
            (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)))
        };
        let badc = _mm_shuffle_epi32::<0xb1>(abcd);
        let hgfe = _mm_shuffle_epi32::<0x1b>(efgh);
        Regs {
            abef: _mm_alignr_epi8::<8>(badc, hgfe),
            cdgh: _mm_blend_epi16::<0xf0>(hgfe, badc),
        }
    }

    /// Back to the standard word order.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(crate) fn store(self, state: &mut [u32; 8]) {
        let feba = _mm_shuffle_epi32::<0x1b>(self.abef);
        let dchg = _mm_shuffle_epi32::<0xb1>(self.cdgh);
        let abcd = _mm_blend_epi16::<0xf0>(feba, dchg);
        let efgh = _mm_alignr_epi8::<8>(dchg, feba);
        // SAFETY: `state` is 32 writable bytes; the stores are unaligned.
        unsafe {
            let p = state.as_mut_ptr().cast::<__m128i>();
            _mm_storeu_si128(p, abcd);
            _mm_storeu_si128(p.add(1), efgh);
        }
    }
}

/// A block's 16 message words, big-endian to native, four per vector in order.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(crate) fn load_block(block: &[u8; 64]) -> [__m128i; 4] {
    let swap = _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
    core::array::from_fn(|i| {
        let p = &block[16 * i..16 * i + 16];
        // SAFETY: `p` is 16 readable bytes; the load is unaligned.
        _mm_shuffle_epi8(unsafe { _mm_loadu_si128(p.as_ptr().cast()) }, swap)
    })
}

/// `K[4 i .. 4 i + 4]`.
#[inline]
#[target_feature(enable = "sse2")]
fn k4(i: usize) -> __m128i {
    let k = &K[4 * i..4 * i + 4];
    // SAFETY: `k` is 16 readable bytes.
    unsafe { _mm_loadu_si128(k.as_ptr().cast()) }
}

/// How a compression takes the first step of the message schedule: `W[t - 16] +
/// σ0(W[t - 15])` for the four words `t` of a group, from the groups 16 and 12 words
/// back (in the layout of [`load_block`]).
pub(crate) trait Schedule {
    /// # Safety
    /// The CPU must have the schedule's features: SHA-NI and SSE4.1, and AVX-512VL for
    /// [`VectorAlu`].
    unsafe fn first_step(w16: __m128i, w12: __m128i) -> __m128i;
}

/// The first step on `SHA256MSG1`, the SHA extensions' own.
pub(crate) enum ShaMsg {}

impl Schedule for ShaMsg {
    #[inline(always)]
    unsafe fn first_step(w16: __m128i, w12: __m128i) -> __m128i {
        // SAFETY: the caller guarantees the features.
        unsafe { sha256msg1(w16, w12) }
    }
}

/// The first step on the vector ALUs: `σ0(x) = ror7(x) ^ ror18(x) ^ (x >> 3)` in
/// AVX-512VL's rotations and one three-way XOR, for cores whose SHA unit issues
/// `SHA256MSG1` only once every 4 cycles (six vector operations instead, off the
/// schedule's critical chain, which runs through `SHA256MSG2`).
pub(crate) enum VectorAlu {}

impl Schedule for VectorAlu {
    #[inline(always)]
    unsafe fn first_step(w16: __m128i, w12: __m128i) -> __m128i {
        // SAFETY: the caller guarantees the features (AVX-512VL among them).
        unsafe {
            // Words `t - 15 .. t - 11`: the last three of `w16`'s group, the first of
            // `w12`'s.
            let w15 = _mm_alignr_epi8::<4>(w12, w16);
            let sigma0 = ternary_lane::<0x96>(
                _mm_ror_epi32::<7>(w15),
                _mm_ror_epi32::<18>(w15),
                _mm_srli_epi32::<3>(w15),
            );
            _mm_add_epi32(w16, sigma0)
        }
    }
}

/// Compresses one block (from [`load_block`]) with schedule `S`, calling `hook` 4
/// times, one call before each 16 rounds (before, so that what the hook starts overlaps
/// those rounds).
///
/// # Safety
/// The CPU must have the features of [`compress`], or of [`compress_avx512`] for
/// [`VectorAlu`].
#[inline(always)]
pub(crate) unsafe fn compress_block<S: Schedule, H: Hook>(
    regs: &mut Regs,
    mut w: [__m128i; 4],
    hook: &mut H,
) {
    let start = *regs;
    let (mut abef, mut cdgh) = (regs.abef, regs.cdgh);
    // Four rounds on words `4 i ..`; from `i = 4` on, those words first replace the ones
    // 16 back in the ring `w` (written out, so that every index is a constant).
    macro_rules! quad {
        ($($i:literal)*) => {$(
            if $i % 4 == 0 {
                hook.call();
            }
            // SAFETY: the caller guarantees the features.
            unsafe {
                if $i >= 4 {
                    let (w16, w12) = (w[$i % 4], w[($i + 1) % 4]);
                    let (w8, w4) = (w[($i + 2) % 4], w[($i + 3) % 4]);
                    let w7 = _mm_alignr_epi8::<4>(w4, w8);
                    let sum = _mm_add_epi32(S::first_step(w16, w12), w7);
                    w[$i % 4] = sha256msg2(sum, w4);
                }
                let wk = _mm_add_epi32(w[$i % 4], k4($i));
                cdgh = sha256rnds2(cdgh, abef, wk);
                abef = sha256rnds2(abef, cdgh, _mm_shuffle_epi32::<0x0e>(wk));
            }
        )*};
    }
    quad!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    // SAFETY: the caller guarantees the features.
    unsafe {
        regs.abef = _mm_add_epi32(abef, start.abef);
        regs.cdgh = _mm_add_epi32(cdgh, start.cdgh);
    }
}

/// Compresses `blocks` into `state`, the schedule on `SHA256MSG1`/`SHA256MSG2`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(crate) fn compress(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the features.
    unsafe { compress_with::<ShaMsg>(state, blocks) }
}

/// Compresses `blocks` into `state`, the schedule's first step on the vector ALUs
/// ([`VectorAlu`]) and the whole built with AVX-512VL (thirty-two vector registers).
/// Alone it runs as fast as [`compress`] (both wait on `SHA256RNDS2`'s chain); beside an
/// AES-CBC chain (the stitched seal) it was measured 2-6% faster on an Intel Xeon with
/// AVX512-FP16 (see `engine::ShaScheduleOn`), where the AES code and the schedule
/// compete for issue slots (a measured gain, not one a port model explains).
#[target_feature(enable = "sha,sse4.1,avx2,avx512f,avx512vl")]
pub(crate) fn compress_avx512(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the features (AVX2 includes SSSE3).
    unsafe { compress_with::<VectorAlu>(state, blocks) }
}

/// The loop of [`compress`] and [`compress_avx512`].
///
/// # Safety
/// As [`compress_block`].
#[inline(always)]
unsafe fn compress_with<S: Schedule>(state: &mut [u32; 8], blocks: &[[u8; 64]]) {
    // SAFETY: the caller guarantees the features.
    unsafe {
        let mut regs = Regs::load(state);
        for b in blocks {
            compress_block::<S, _>(&mut regs, load_block(b), &mut ());
        }
        regs.store(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both schedules, where the CPU has them.
    #[test]
    fn matches_sha2() {
        crate::x86_64::check_compressions(
            0x2545_f491_4f6c_dd1du64,
            sha2::block_api::compress256,
            &[
                ("the SHA256MSG1 schedule", available, compress),
                ("the AVX-512VL schedule", available_avx512, compress_avx512),
            ],
        );
    }
}

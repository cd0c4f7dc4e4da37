//! SHA-1 compression on the x86 SHA extensions (SHA-NI: Intel since Ice Lake and
//! Goldmont, AMD since Zen).
//!
//! `SHA1RNDS4` runs four rounds on `ABCD` (one vector, `A` in the top dword);
//! `SHA1NEXTE` derives the next `E` from `A` four rounds back and adds the message words.
//! The message schedule has two forms ([`Schedule`]): the extensions' own
//! `SHA1MSG1`/`SHA1MSG2`, four words at a time, or rotations and XORs on the vector
//! ALUs, in AVX-512VL, for cores whose SHA unit is slow at `SHA1MSG2` (see
//! [`VectorAlu`]).
//! The chaining value stays in registers across the blocks of a call ([`Regs`]), and the
//! rounds call a hook before every 20 of them, so that seal can run its CBC chain on the
//! AES unit beside them (see `stitch`). No branch or memory index depends on the data.

use core::arch::x86_64::*;

use super::{
    Hook,
    sha_ext::{sha1msg1, sha1msg2, sha1nexte, sha1rnds4},
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

/// Whether this CPU (and OS) can run the engine with the schedule on AVX-512VL
/// ([`compress_avx512`]).
pub(crate) fn available_avx512() -> bool {
    use gcm_core::__CpuFeatures as F;
    available()
        && cpuid_avx512::get()
        && !crate::ct_check::hidden(F::AVX | F::AVX2 | F::AVX512F | F::AVX512VL)
}

/// The chaining value as the instructions want it: dwords `[D, C, B, A]` and
/// `[_, _, _, E]`, lowest first (the low dwords of `e` are don't-cares).
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    abcd: __m128i,
    e: __m128i,
}

impl Regs {
    /// From the standard word order `[A, B, C, D, E]`.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(crate) fn load(state: &[u32; 5]) -> Self {
        // SAFETY: the first four words are 16 readable bytes; the load is unaligned.
        let abcd = unsafe { _mm_loadu_si128(state.as_ptr().cast()) };
        Regs {
            abcd: _mm_shuffle_epi32::<0x1b>(abcd),
            e: _mm_insert_epi32::<3>(_mm_setzero_si128(), state[4] as i32),
        }
    }

    /// Back to the standard word order.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(crate) fn store(self, state: &mut [u32; 5]) {
        // SAFETY: the first four words are 16 writable bytes; the store is unaligned.
        unsafe {
            _mm_storeu_si128(
                state.as_mut_ptr().cast(),
                _mm_shuffle_epi32::<0x1b>(self.abcd),
            )
        };
        state[4] = _mm_extract_epi32::<3>(self.e) as u32;
    }
}

/// A block's 16 message words, big-endian to native, four per vector, the first word of
/// each four in the top dword.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(crate) fn load_block(block: &[u8; 64]) -> [__m128i; 4] {
    let reverse = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    core::array::from_fn(|i| {
        let p = &block[16 * i..16 * i + 16];
        // SAFETY: `p` is 16 readable bytes; the load is unaligned.
        _mm_shuffle_epi8(unsafe { _mm_loadu_si128(p.as_ptr().cast()) }, reverse)
    })
}

/// How a compression extends the message schedule: each call gives group `i` (words
/// `4 i .. 4 i + 4`, in the layout of [`load_block`]) from the groups before it, which
/// `w` holds at index `j % 8` for group `j` (groups `i - 8 .. i`).
pub(crate) trait Schedule {
    /// # Safety
    /// The CPU must have the schedule's features: SHA-NI and SSE4.1, and AVX-512VL for
    /// [`VectorAlu`].
    unsafe fn group(w: &[__m128i; 8], i: usize) -> __m128i;
}

/// The schedule on `SHA1MSG1` and `SHA1MSG2`, the SHA extensions' own: two
/// instructions a group.
pub(crate) enum ShaMsg {}

impl Schedule for ShaMsg {
    #[inline(always)]
    unsafe fn group(w: &[__m128i; 8], i: usize) -> __m128i {
        let (w16, w12, w8, w4) = (
            w[(i - 4) % 8],
            w[(i - 3) % 8],
            w[(i - 2) % 8],
            w[(i - 1) % 8],
        );
        // SAFETY: the caller guarantees the features.
        unsafe { sha1msg2(_mm_xor_si128(sha1msg1(w16, w12), w8), w4) }
    }
}

/// The schedule on the vector ALUs, in AVX-512VL's rotations and three-way XORs, for
/// cores whose SHA unit is slow at `SHA1MSG2`.
///
/// `W[t] = rotl1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16])` has, within a group, `W[t+3]`
/// depend on `W[t]`; for groups 4 to 7 that word is computed without it and fixed up.
/// From `t = 32` on, the same schedule is `W[t] = rotl2(W[t-6] ^ W[t-16] ^ W[t-28] ^
/// W[t-32])` (the first recurrence applied to itself), whose terms all lie in earlier
/// groups: no fix-up, and a chain from group to group of an alignment, an XOR and a
/// rotation (3 cycles, where `SHA1MSG2` alone takes 6).
pub(crate) enum VectorAlu {}

impl Schedule for VectorAlu {
    #[inline(always)]
    unsafe fn group(w: &[__m128i; 8], i: usize) -> __m128i {
        // In a group's layout word `4 i + j` sits in lane `3 - j`, so the words `k`
        // back, for `k` not a multiple of 4, straddle two groups: `_mm_alignr_epi8` of
        // the older and the newer one.
        // SAFETY: the caller guarantees the features (AVX-512VL among them).
        unsafe {
            if i < 8 {
                let w14 = _mm_alignr_epi8::<8>(w[(i - 4) % 8], w[(i - 3) % 8]);
                // Words `t - 3` for lanes 3 to 1; lane 0 (`t + 3`) needs `W[t]` itself.
                let w3 = _mm_slli_si128::<4>(w[(i - 1) % 8]);
                let x = ternary_lane::<0x96>(w[(i - 4) % 8], w14, w[(i - 2) % 8]);
                let partial = _mm_rol_epi32::<1>(_mm_xor_si128(x, w3));
                // `W[t + 3]` = its partial word ^ rotl1(W[t]), and `W[t]` is lane 3.
                _mm_xor_si128(partial, _mm_rol_epi32::<1>(_mm_srli_si128::<12>(partial)))
            } else {
                let w6 = _mm_alignr_epi8::<8>(w[(i - 2) % 8], w[(i - 1) % 8]);
                let x = ternary_lane::<0x96>(w[(i - 8) % 8], w[(i - 7) % 8], w[(i - 4) % 8]);
                _mm_rol_epi32::<2>(_mm_xor_si128(x, w6))
            }
        }
    }
}

/// Compresses one block (from [`load_block`]) with schedule `S`, calling `hook` 4
/// times, one call before each 20 rounds (before, so that what the hook starts overlaps
/// those rounds).
///
/// # Safety
/// The CPU must have the features of [`compress`], or of [`compress_avx512`] for
/// [`VectorAlu`].
#[inline(always)]
pub(crate) unsafe fn compress_block<S: Schedule, H: Hook>(
    regs: &mut Regs,
    x: [__m128i; 4],
    hook: &mut H,
) {
    let start = *regs;
    let mut abcd = regs.abcd;
    // `ABCD` before the latest four rounds, whose `A` becomes the next `E`.
    let mut before = abcd;
    // The schedule's last eight groups, group `j` at `j % 8`.
    // SAFETY: SSE2.
    let mut w = [unsafe { _mm_setzero_si128() }; 8];
    w[..4].copy_from_slice(&x);
    // Four rounds on words `4 i ..`, group `i` computed first from `i = 4` on (written
    // out, so that every index is a constant).
    macro_rules! quad {
        ($($i:literal)*) => {$(
            if $i % 5 == 0 {
                hook.call();
            }
            // SAFETY: the caller guarantees the features.
            unsafe {
                if $i >= 4 {
                    w[$i % 8] = S::group(&w, $i);
                }
                let e = if $i == 0 {
                    _mm_add_epi32(start.e, w[0])
                } else {
                    sha1nexte(before, w[$i % 8])
                };
                before = abcd;
                abcd = sha1rnds4::<{ $i / 5 }>(abcd, e);
            }
        )*};
    }
    quad!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    // SAFETY: the caller guarantees the features.
    unsafe {
        regs.e = sha1nexte(before, start.e);
        regs.abcd = _mm_add_epi32(abcd, start.abcd);
    }
}

/// Compresses `blocks` into `state`, the schedule on `SHA1MSG1`/`SHA1MSG2`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(crate) fn compress(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the features.
    unsafe { compress_with::<ShaMsg>(state, blocks) }
}

/// Compresses `blocks` into `state`, the schedule on the vector ALUs ([`VectorAlu`]).
/// Measured on an Intel Xeon with AVX512-FP16 and AMX (a KVM guest reporting family 6
/// model 0xa7), cycles a 64-byte block in a stand-alone copy of the loop: 119 with
/// `SHA1MSG2`; 116 with this schedule in AVX without AVX-512 (three operations a
/// rotation, and sixteen registers, which spill); 99 with AVX-512VL's rotations, XORs
/// of three and thirty-two registers. Beside an AES-128-CBC chain of 120 cycles a
/// block (the stitched seal's loop): 138, 136 and 121. So only the AVX-512VL build is
/// kept (see `engine::ShaScheduleOn` for where it runs).
#[target_feature(enable = "sha,sse4.1,avx2,avx512f,avx512vl")]
pub(crate) fn compress_avx512(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    // SAFETY: this function has the features (AVX2 includes SSSE3).
    unsafe { compress_with::<VectorAlu>(state, blocks) }
}

/// The loop of [`compress`] and [`compress_avx512`].
///
/// # Safety
/// As [`compress_block`].
#[inline(always)]
unsafe fn compress_with<S: Schedule>(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
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
    fn matches_sha1() {
        crate::x86_64::check_compressions(
            0x853c_49e6_748f_ea9bu64,
            sha1::block_api::compress,
            &[
                ("the SHA1MSG2 schedule", available, compress),
                ("the AVX-512VL schedule", available_avx512, compress_avx512),
            ],
        );
    }
}

//! SHA-1 compression on the x86 SHA extensions (SHA-NI: Intel since Ice Lake and
//! Goldmont, AMD since Zen).
//!
//! `SHA1RNDS4` runs four rounds on `ABCD` (one vector, `A` in the top dword);
//! `SHA1NEXTE` derives the next `E` from `A` four rounds back and adds the message words;
//! `SHA1MSG1`/`SHA1MSG2` extend the schedule four words at a time. The chaining value
//! stays in registers across the blocks of a call ([`Regs`]), and the rounds call a hook
//! before every 20 of them, so that seal can run its CBC chain on the AES unit beside
//! them (see `stitch`). No branch or memory index depends on the data.

use core::arch::x86_64::*;

use super::{
    Hook,
    sha_ext::{sha1msg1, sha1msg2, sha1nexte, sha1rnds4},
};

cpufeatures::new!(cpuid, "sha", "sse2", "ssse3", "sse4.1");

/// Whether this CPU can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    use gcm_core::__CpuFeatures as F;
    // The constant-time harness can hide these, to run what CPUs without them run.
    cpuid::get() && !crate::ct_check::hidden(F::SHA | F::SSSE3 | F::SSE41)
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

/// Compresses one block (from [`load_block`]), calling `hook` 4 times, one call
/// before each 20 rounds (before, so that what the hook starts overlaps those rounds).
///
/// # Safety
/// The CPU must have SHA-NI and SSE4.1 (the features of [`compress`]).
#[inline(always)]
pub(crate) unsafe fn compress_block<H: Hook>(regs: &mut Regs, mut w: [__m128i; 4], hook: &mut H) {
    let start = *regs;
    let mut abcd = regs.abcd;
    // `ABCD` before the latest four rounds, whose `A` becomes the next `E`.
    let mut before = abcd;
    // Four rounds on words `4 i ..`; from `i = 4` on, those words first replace the ones
    // 16 back in the ring `w` (written out, so that every index is a constant).
    macro_rules! quad {
        ($($i:literal)*) => {$(
            if $i % 5 == 0 {
                hook.call();
            }
            // SAFETY: the caller guarantees the features.
            unsafe {
                if $i >= 4 {
                    let (w16, w12) = (w[$i % 4], w[($i + 1) % 4]);
                    let (w8, w4) = (w[($i + 2) % 4], w[($i + 3) % 4]);
                    let x = _mm_xor_si128(sha1msg1(w16, w12), w8);
                    w[$i % 4] = sha1msg2(x, w4);
                }
                let e = if $i == 0 {
                    _mm_add_epi32(start.e, w[0])
                } else {
                    sha1nexte(before, w[$i % 4])
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

/// Compresses `blocks` into `state`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(crate) fn compress(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    let mut regs = Regs::load(state);
    for b in blocks {
        // SAFETY: this function has the features.
        unsafe { compress_block(&mut regs, load_block(b), &mut ()) };
    }
    regs.store(state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_sha1() {
        if !available() {
            std::eprintln!("skipped: no SHA-NI");
            return;
        }
        crate::x86_64::check_compression(
            0x853c_49e6_748f_ea9bu64,
            sha1::block_api::compress,
            |state, blocks| {
                // SAFETY: the features were checked above.
                unsafe { compress(state, blocks) }
            },
        );
    }
}

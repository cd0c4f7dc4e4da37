//! The blocks of a short message read and written in place, a partial last block
//! included, without a copy through a stack buffer.
//!
//! A copy of a few bytes into a buffer followed by a vector load of the buffer makes the
//! load span several smaller stores, which the store buffer cannot forward: the load
//! waits until those stores reach the cache. On a message of a few blocks that wait is
//! on the critical path of the tag. Here a whole block is one load; the partial last
//! block of a message of at least one block is the 16 bytes that end where the message
//! ends, shifted down by a byte shuffle; a message shorter than one block is read with
//! two overlapping scalar loads. Every branch depends on the length only.

use core::arch::x86_64::*;

/// Byte `j` of the table is `j` for `j < 16` and `0x80` (a shuffle's "zero") after:
/// the 16 bytes from `16 - r` move bytes `16 - r ..` of a vector down to the front and
/// zero the last `16 - r`.
static SHIFT_DOWN: [u8; 32] = {
    let mut t = [0x80u8; 32];
    let mut i = 0;
    while i < 16 {
        t[i] = i as u8;
        i += 1;
    }
    t
};

/// 32 bytes of `0xff` then 32 of zero: 16 or 32 bytes from `32 - r` keep the first `r`.
static KEEP_FIRST: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 32 {
        t[i] = 0xff;
        i += 1;
    }
    t
};

/// A mask of the first `r` bytes of a block (`1 <= r <= 16`): a partial last block's
/// bytes past the message are not ciphertext, and GHASH takes zeros there.
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn keep_first16(r: usize) -> __m128i {
    assert!((1..=16).contains(&r));
    // SAFETY: 16 bytes of the 64-byte table from `32 - r`, inside it.
    unsafe { _mm_loadu_si128(KEEP_FIRST.as_ptr().add(32 - r).cast()) }
}

/// [`keep_first16`] for a 256-bit vector of two blocks (`1 <= r <= 32`).
#[inline]
#[target_feature(enable = "avx")]
pub(crate) fn keep_first32(r: usize) -> __m256i {
    assert!((1..=32).contains(&r));
    // SAFETY: 32 bytes of the 64-byte table from `32 - r`, inside it.
    unsafe { _mm256_loadu_si256(KEEP_FIRST.as_ptr().add(32 - r).cast()) }
}

/// The `n < 16` bytes at `p`, zero-padded.
///
/// # Safety
/// `p` readable for `n` bytes.
#[inline]
#[target_feature(enable = "sse2")]
unsafe fn load_short(p: *const u8, n: usize) -> __m128i {
    debug_assert!(n < 16);
    // Two loads of a power-of-two size that may overlap cover the `n` bytes; the second
    // is shifted to its place, where the bytes both hold are equal.
    // SAFETY: every read lies inside the first `n` bytes at `p` (the caller's contract).
    let (lo, hi) = unsafe {
        let r = |off: usize, size: usize| -> u64 {
            match size {
                8 => p.add(off).cast::<u64>().read_unaligned(),
                4 => u64::from(p.add(off).cast::<u32>().read_unaligned()),
                2 => u64::from(p.add(off).cast::<u16>().read_unaligned()),
                _ => u64::from(*p.add(off)),
            }
        };
        match n {
            9..=15 => (r(0, 8), r(n - 8, 8) >> (8 * (16 - n))),
            8 => (r(0, 8), 0),
            4..=7 => (r(0, 4) | (r(n - 4, 4) << (8 * (n - 4))), 0),
            2 | 3 => (r(0, 2) | (r(n - 2, 2) << (8 * (n - 2))), 0),
            1 => (r(0, 1), 0),
            _ => (0, 0),
        }
    };
    _mm_set_epi64x(hi as i64, lo as i64)
}

/// Stores the first `n < 16` bytes of `v` at `p`.
///
/// # Safety
/// `p` writable for `n` bytes.
#[inline]
#[target_feature(enable = "sse4.1")]
unsafe fn store_short(p: *mut u8, n: usize, v: __m128i) {
    debug_assert!(n < 16);
    let lo = _mm_cvtsi128_si64(v) as u64;
    let hi = _mm_extract_epi64::<1>(v) as u64;
    // SAFETY: every write lies inside the first `n` bytes at `p` (the caller's contract);
    // two writes that overlap write the same bytes there.
    unsafe {
        let w = |off: usize, size: usize, x: u64| match size {
            8 => p.add(off).cast::<u64>().write_unaligned(x),
            4 => p.add(off).cast::<u32>().write_unaligned(x as u32),
            2 => p.add(off).cast::<u16>().write_unaligned(x as u16),
            _ => *p.add(off) = x as u8,
        };
        match n {
            9..=15 => {
                w(0, 8, lo);
                w(n - 8, 8, (lo >> (8 * (n - 8))) | (hi << (8 * (16 - n))));
            }
            8 => w(0, 8, lo),
            4..=7 => {
                w(0, 4, lo);
                w(n - 4, 4, lo >> (8 * (n - 4)));
            }
            2 | 3 => {
                w(0, 2, lo);
                w(n - 2, 2, lo >> (8 * (n - 2)));
            }
            1 => w(0, 1, lo),
            _ => {}
        }
    }
}

/// Block `j` of the `len` bytes at `p`, zero past `len` (`16 j < len`).
///
/// # Safety
/// `p` readable for `len` bytes.
#[inline]
#[target_feature(enable = "ssse3,sse4.1")]
pub(crate) unsafe fn load_block(p: *const u8, len: usize, j: usize) -> __m128i {
    debug_assert!(16 * j < len);
    let rest = len - 16 * j;
    // SAFETY: each branch reads inside the `len` bytes at `p`: a whole block, the 16
    // bytes ending at `len` (at least 16 of them), or the `rest` bytes of a message
    // shorter than a block; the table read is 16 of its 32 bytes.
    unsafe {
        if rest >= 16 {
            _mm_loadu_si128(p.add(16 * j).cast())
        } else if len >= 16 {
            let v = _mm_loadu_si128(p.add(len - 16).cast());
            _mm_shuffle_epi8(
                v,
                _mm_loadu_si128(SHIFT_DOWN.as_ptr().add(16 - rest).cast()),
            )
        } else {
            load_short(p, rest)
        }
    }
}

/// Stores block `j` of the `len` bytes at `p` from `v` (its bytes past `len` are not
/// written; `16 j < len`).
///
/// # Safety
/// `p` writable for `len` bytes.
#[inline]
#[target_feature(enable = "sse4.1")]
pub(crate) unsafe fn store_block(p: *mut u8, len: usize, j: usize, v: __m128i) {
    debug_assert!(16 * j < len);
    let rest = len - 16 * j;
    // SAFETY: both writes lie inside the `len` bytes at `p`.
    unsafe {
        if rest >= 16 {
            _mm_storeu_si128(p.add(16 * j).cast(), v);
        } else {
            store_short(p.add(16 * j), rest, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masks keep exactly the first `r` bytes.
    #[test]
    fn masks_keep_the_first_bytes() {
        use crate::cpu::CpuFeatures as F;
        for r in 1..=16 {
            let mut bytes = [0u8; 16];
            // SAFETY: 16 writable bytes; SSE2 is part of x86_64.
            unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), keep_first16(r)) };
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(
                    *b,
                    if i < r { 0xff } else { 0 },
                    "16-byte mask {r}, byte {i}"
                );
            }
        }
        if !crate::cpu::features().has(F::AVX | F::OS_YMM) {
            return;
        }
        for r in 1..=32 {
            let mut bytes = [0u8; 32];
            // SAFETY: 32 writable bytes; AVX checked above.
            unsafe {
                _mm256_storeu_si256(bytes.as_mut_ptr().cast(), keep_first32(r));
            }
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(
                    *b,
                    if i < r { 0xff } else { 0 },
                    "32-byte mask {r}, byte {i}"
                );
            }
        }
    }

    /// Every length up to three blocks, every block, against plain slices: the loads
    /// zero-pad exactly, and the stores write the block's bytes, in order, and nothing
    /// else.
    #[test]
    fn blocks_match_slices() {
        use crate::cpu::CpuFeatures as F;
        if !crate::cpu::features().has(F::SSSE3 | F::SSE41) {
            return;
        }
        let mut data = [0u8; 48];
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0x5a;
        }
        let max: usize = if cfg!(miri) { 20 } else { 48 };
        for len in 1..=max {
            for j in 0..len.div_ceil(16) {
                let end = (16 * j + 16).min(len);
                let mut want = [0u8; 16];
                want[..end - 16 * j].copy_from_slice(&data[16 * j..end]);
                // SAFETY: SSSE3 and SSE4.1 checked above; `data` holds at least `len`
                // bytes.
                let got = unsafe { load_block(data.as_ptr(), len, j) };
                let mut bytes = [0u8; 16];
                // SAFETY: 16 writable bytes.
                unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), got) };
                assert_eq!(bytes, want, "load: len {len}, block {j}");

                let mut out = [0xeeu8; 48];
                let pattern: [u8; 16] = core::array::from_fn(|i| 0x40 + i as u8);
                // SAFETY: 16 readable bytes.
                let v = unsafe { _mm_loadu_si128(pattern.as_ptr().cast()) };
                // SAFETY: as above; `out` holds at least `len` bytes.
                unsafe { store_block(out.as_mut_ptr(), len, j, v) };
                for (i, b) in out.iter().enumerate() {
                    let want = if (16 * j..end).contains(&i) {
                        0x40 + (i - 16 * j) as u8
                    } else {
                        0xee
                    };
                    assert_eq!(*b, want, "store: len {len}, block {j}, byte {i}");
                }
            }
        }
    }
}

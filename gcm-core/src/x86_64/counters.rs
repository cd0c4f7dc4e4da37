//! The counter blocks of the 512-bit bulk loop, kept whitened and stepped by XOR.
//!
//! Every iteration of the loop encrypts 16 counter blocks `c + j` (`j < 16`; 32-bit
//! big-endian counter in the last four bytes, the rest fixed), and AES's first step XORs
//! them with round key 0. Producing them the obvious way costs two vector uops per
//! vector and iteration (an add, then the whitening XOR), and those uops compete with the
//! AES rounds and the carry-less multiplies for the two 512-bit ports. Here the blocks
//! stay whitened from one iteration to the next and are stepped with one XOR each:
//!
//! adding 16 to a counter never changes its low four bits, so the bits it flips,
//! `d = x ^ (x + 16)`, depend only on `x >> 4`: `d = (2^m - 1) << 4` where `m - 1` is the
//! number of trailing one bits of `x >> 4` (the 32-bit wrap only cuts the mask short).
//! Within one iteration the 16 counters share `x >> 4` up to the block where the low four
//! bits wrap, which is the same block in every iteration since each step adds 16, and the
//! blocks after it share `(x >> 4) + 1`. So two deltas step all the blocks: `d1` for
//! those before the wrap, `d2` for those after. XOR commutes with the whitening:
//! `(c ^ rk0) ^ d = (c + 16) ^ rk0`.
//!
//! The loops start at counter 2, the first block of every message with a 96-bit nonce
//! (and of the `ctr32` entry as the roofline uses it), so the wrap is always after
//! block 13: vectors 0..2 step with `d1`, and the last vector with `d1` in its first two
//! lanes and `d2` in the other two. `d1` and `d2` are read from a table indexed by
//! `q = (x >> 4) mod 64`, which gives the delta exactly while the run of trailing ones
//! stays inside those six bits (`q < 63`), and the table stores each delta twice in a row
//! so that one 64-byte load at row `q` is the last vector's `(d1, d1, d2, d2)` and a
//! 16-byte broadcast is `d1` everywhere: constant offsets, no branch and nothing on the
//! vector ports but the XORs themselves. In the two steps out of 64 where `q` reaches 62
//! or 63 the blocks are rebuilt the plain way. Other starting counters are rebuilt at
//! every step (a rare case: a `ctr32` call at another counter).
//!
//! All of this looks at the counter's value, which is public only when the nonce is 96
//! bits (`J0 = nonce || 1`); for other nonce lengths `J0` is a GHASH under the secret hash
//! key, and the table index and the rebuild branch would leak it. Those messages take the plain
//! scheme (add, byte swap, whiten: no branch, no index), chosen by the nonce length,
//! which is public.
//!
//! Measured on the development machine (Sapphire Rapids): AES-128-GCM at 16 KiB went
//! from ~80% to ~85% of the AES-CTR loop's speed; reading both deltas at constant offsets
//! (an earlier version chose per vector, which compiled to a dozen branches per
//! iteration) gained another ~1.3%. The 256-bit kernel steps one whitened block per step
//! with the same table and derives its sixteen from it (see `vaes256_gcm::Counters`), as the AES-NI kernel steps the
//! base of each 16-block pair of batches with it (see `aesni_gcm::Counters`).

use core::arch::x86_64::*;

/// Row `j < 63`: `x ^ (x + 16)` for a counter `x` with `(x >> 4) mod 64 == j`, i.e.
/// `(2^(t+1) - 1) << 4` with `t` the trailing ones of `j`, byte-swapped into dword 3 of
/// two 128-bit lanes (rows are 32 bytes; see the module documentation).
#[repr(C, align(64))]
struct DeltaRows([[u32; 8]; 63]);

static DELTA_ROWS: DeltaRows = {
    let mut t = [[0u32; 8]; 63];
    let mut j = 0;
    while j < 63 {
        let ones = (j as u32).trailing_ones();
        let d = (((1u32 << (ones + 1)) - 1) << 4).swap_bytes();
        t[j][3] = d;
        t[j][7] = d;
        j += 1;
    }
    DeltaRows(t)
};

impl DeltaRows {
    /// The last row a step starts at (it also reads row `j + 1`).
    const LAST_FAST: usize = 61;

    /// Row `j`.
    ///
    /// # Safety
    /// `j <= Self::LAST_FAST`, so that 64 bytes from it are inside the table.
    #[inline(always)]
    unsafe fn row(&self, j: usize) -> *const u8 {
        // SAFETY: `j < 63` per the caller.
        unsafe { self.0.as_ptr().add(j).cast() }
    }
}

/// The scalar half of XOR stepping, shared by all three kernels: which table row the next
/// 16-block step reads, or none when the blocks must be rebuilt the plain way.
#[derive(Clone, Copy)]
pub(super) struct DeltaCursor {
    /// `x >> 4` for the counter `x` of the current first block; zero unless the counter
    /// is public, so that nothing downstream can branch on one that is not.
    q: u32,
    /// Whether to step by XOR: the counter is public and starts at 2 mod 16.
    by_xor: bool,
}

impl DeltaCursor {
    /// `first` is the counter of the loop's first block, `public` whether it may be
    /// looked at (see the module documentation).
    #[inline(always)]
    pub(super) fn new(first: u32, public: bool) -> Self {
        // Only `public` is branched on; the counter is looked at inside.
        if public {
            Self {
                q: first >> 4,
                by_xor: first & 15 == 2,
            }
        } else {
            Self {
                q: 0,
                by_xor: false,
            }
        }
    }

    /// Moves on by 16 blocks; returns the row holding `d1` (and `d2` right after it) for
    /// this step, or `None` to rebuild. The pointer may be read for 64 bytes.
    #[inline(always)]
    pub(super) fn next_row(&mut self) -> Option<*const u8> {
        let j = (self.q & 63) as usize;
        self.q = self.q.wrapping_add(1);
        // SAFETY: `j <= LAST_FAST`, so rows `j` and `j + 1` are inside the table.
        (self.by_xor && j <= DeltaRows::LAST_FAST).then(|| unsafe { DELTA_ROWS.row(j) })
    }
}

/// The whitened counter blocks of one iteration of the 512-bit loop, and what it takes
/// to step them.
pub(super) struct Counters {
    /// Little-endian counters `c0 .. c0+3` of the first iteration (lowest dword counts).
    base: __m512i,
    /// Blocks since `base`.
    done: u32,
    /// Which delta row the next step reads.
    cursor: DeltaCursor,
    /// Round key 0 in all lanes, for the plain scheme.
    rk0: __m512i,
    /// Big-endian blocks `c0+done .. c0+done+15`, XORed with round key 0.
    white: [__m512i; 4],
}

impl Counters {
    /// `base` holds the byte-reversed counters `c0 .. c0+3`, `rk0` round key 0 in all
    /// four lanes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn new(base: __m512i, rk0: __m512i, public: bool) -> Self {
        let first = _mm_cvtsi128_si32(_mm512_castsi512_si128(base)) as u32;
        Self {
            base,
            done: 0,
            cursor: DeltaCursor::new(first, public),
            rk0,
            white: Self::plain(base, 0, rk0),
        }
    }

    /// The blocks `done .. done + 16` the plain way: add, byte swap, whiten.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn plain(base: __m512i, done: u32, rk0: __m512i) -> [__m512i; 4] {
        let first = _mm512_add_epi32(base, super::vaes512_gcm::inc(done as i32));
        super::vaes512_gcm::counters(first, rk0)
    }

    /// The current 16 blocks, whitened with round key 0.
    #[inline(always)]
    pub(super) fn whitened(&self) -> [__m512i; 4] {
        self.white
    }

    /// Moves on by 16 blocks.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn step(&mut self) {
        self.done = self.done.wrapping_add(16);
        if let Some(row) = self.cursor.next_row() {
            // SAFETY: 16 bytes of the row, and 64 bytes from it (see `next_row`).
            let (d1, d1d2) = unsafe {
                (
                    _mm512_broadcast_i32x4(_mm_load_si128(row.cast())),
                    _mm512_loadu_si512(row.cast()),
                )
            };
            for w in &mut self.white[..3] {
                *w = _mm512_xor_si512(*w, d1);
            }
            self.white[3] = _mm512_xor_si512(self.white[3], d1d2);
        } else {
            self.white = Self::plain(self.base, self.done, self.rk0);
        }
    }

    /// Little-endian counters for the tail: `c0+done .. c0+done+3`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn le(&self) -> __m512i {
        _mm512_add_epi32(self.base, super::vaes512_gcm::inc(self.done as i32))
    }
}

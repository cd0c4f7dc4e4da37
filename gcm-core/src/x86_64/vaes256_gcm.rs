//! AES-GCM with VAES and VPCLMULQDQ on 256-bit vectors (AVX2), for CPUs that have the
//! vector AES and carry-less multiply instructions but not AVX-512 (AMD Zen 3, Intel
//! Alder Lake and later client parts), or whose OS does not enable AVX-512 state.
//!
//! The design is that of the 512-bit kernel (see `vaes512_gcm`) at half the width, with
//! one difference: each iteration takes 16 blocks as eight 256-bit vectors of two blocks,
//! not four. A 256-bit `VAESENC` has a latency of three cycles and two units can take
//! one each per cycle, so six or more independent AES chains are needed to keep them busy;
//! with four, each iteration's rounds wait on each other (A/B on Sapphire Rapids: AES-128
//! seal +10%). The AES rounds of the eight counter vectors are interleaved with the
//! lane-wise multiplication of 16 ciphertext blocks by `H^16..H^1`, one per round, with
//! one reduction per iteration. A last chunk of 8 blocks takes the four-vector version of
//! the same loop body. Without AVX-512 there are no byte masks and no three-way XOR: the
//! final partial chunk goes through a 128-byte stack buffer, and XORs come in pairs.
//!
//! Encryption hashes the ciphertext of two iterations back, read again from the output
//! buffer, rather than the previous iteration's output still in registers: that would tie
//! each iteration's multiplies to the last AES rounds of the one before, and take eight
//! of the sixteen vector registers.

use super::clmul::{bswap, bswap_mask};
use super::counters::DeltaCursor;
use super::{
    HPowers, HwKey, InOut, Vaes256Token, aes_ni, finish_tag, load16, read_tail, write_tail,
};
use core::arch::x86_64::*;

const VECS: usize = 4;
const CHUNK: usize = 16 * 2 * VECS;

kernel_entry_points!(
    Vaes256Token,
    "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1"
);

/// GHASH of `data` (zero-padded) continuing from `x` (mirrored), 8 blocks per reduction.
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
pub(crate) fn ghash(h: &HPowers, _t: Vaes256Token, x: __m128i, data: &[u8]) -> __m128i {
    hash_bytes(h, x, data)
}

/// [`ghash`], for callers that already run with the features.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
fn hash_bytes(h: &HPowers, mut x: __m128i, data: &[u8]) -> __m128i {
    let hp = powers8(h);
    let mut chunks = data.chunks_exact(CHUNK);
    for chunk in &mut chunks {
        let v: [__m256i; VECS] = core::array::from_fn(|i| {
            // SAFETY: `chunk` has CHUNK = 32 * VECS bytes.
            unsafe { _mm256_loadu_si256(chunk.as_ptr().add(32 * i).cast()) }
        });
        x = hash8(&hp, x, &v);
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return x;
    }
    let mut buf = [0u8; CHUNK];
    buf[..rest.len()].copy_from_slice(rest);
    hash_tail(h, x, &load_buf(&buf), rest.len().div_ceil(16))
}

#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn gcm<const NR: usize, const ENC: bool>(
    key: &HwKey,
    t: Vaes256Token,
    j0: &[u8; 16],
    nonce96: bool,
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let j0 = load16(j0);
    let tag_mask = aes_ni::encrypt1::<NR>(&key.aes.rk, j0);
    let x = ghash(&key.h, t, _mm_setzero_si128(), aad);
    let ctr = _mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1));
    // SAFETY: forwarded contract.
    let x = unsafe { bulk::<NR, ENC, true>(key, ctr, nonce96, x, io) };
    finish_tag(&key.h, x, aad.len(), io.len, tag_mask)
}

/// An unreduced sum of lane-wise products.
#[derive(Clone, Copy)]
struct Wide {
    lo: __m256i,
    mi: __m256i,
    hi: __m256i,
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn zero() -> Self {
        let z = _mm256_setzero_si256();
        Self {
            lo: z,
            mi: z,
            hi: z,
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn mul_add(&mut self, a: __m256i, b: __m256i) {
        self.lo = _mm256_xor_si256(self.lo, _mm256_clmulepi64_epi128::<0x00>(a, b));
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(a, b));
        let m = _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x01>(a, b),
            _mm256_clmulepi64_epi128::<0x10>(a, b),
        );
        self.mi = _mm256_xor_si256(self.mi, m);
    }

    /// Reduces both lanes, then sums them.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn reduce(self) -> __m128i {
        let c = _mm256_set1_epi64x(0xC200_0000_0000_0000_u64 as i64);
        let mi = _mm256_xor_si256(
            _mm256_xor_si256(self.mi, _mm256_shuffle_epi32::<0x4e>(self.lo)),
            _mm256_clmulepi64_epi128::<0x00>(self.lo, c),
        );
        let r = _mm256_xor_si256(
            _mm256_xor_si256(self.hi, _mm256_shuffle_epi32::<0x4e>(mi)),
            _mm256_clmulepi64_epi128::<0x00>(mi, c),
        );
        _mm_xor_si128(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r))
    }
}

/// `H^8 H^7`, `H^6 H^5`, `H^4 H^3`, `H^2 H^1`.
#[inline]
#[target_feature(enable = "avx")]
fn powers8(h: &HPowers) -> [__m256i; VECS] {
    // SAFETY: indices 8..16 of a 19-entry table, four 32-byte loads.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(h.0.as_ptr().add(8 + 2 * i).cast()) })
}

#[inline]
#[target_feature(enable = "avx2")]
fn bswap256(v: __m256i) -> __m256i {
    _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(bswap_mask()))
}

#[inline]
#[target_feature(enable = "avx2")]
fn with_x(d: __m256i, x: __m128i) -> __m256i {
    _mm256_xor_si256(d, _mm256_zextsi128_si256(x))
}

/// GHASH of 8 blocks in byte form continuing from `x`, one reduction.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn hash8(hp: &[__m256i; VECS], x: __m128i, v: &[__m256i; VECS]) -> __m128i {
    let mut w = Wide::zero();
    for i in 0..VECS {
        let mut d = bswap256(v[i]);
        if i == 0 {
            d = with_x(d, x);
        }
        w.mul_add(d, hp[i]);
    }
    w.reduce()
}

/// GHASH of the first `n` (1..=8) blocks of `v` (byte form, zero beyond the data).
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn hash_tail(h: &HPowers, x: __m128i, v: &[__m256i; VECS], n: usize) -> __m128i {
    debug_assert!((1..=8).contains(&n));
    let first = HPowers::COUNT - n;
    let mut w = Wide::zero();
    for i in 0..n.div_ceil(2) {
        // SAFETY: `first + 2i + 1 <= 16 < HPowers::LEN` for every vector that holds data.
        let hp = unsafe { _mm256_loadu_si256(h.0.as_ptr().add(first + 2 * i).cast()) };
        let mut d = bswap256(v[i]);
        if i == 0 {
            d = with_x(d, x);
        }
        w.mul_add(d, hp);
    }
    w.reduce()
}

#[inline]
#[target_feature(enable = "avx")]
fn load_buf(buf: &[u8; CHUNK]) -> [__m256i; VECS] {
    // SAFETY: four 32-byte loads inside a CHUNK-byte array.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(buf.as_ptr().add(32 * i).cast()) })
}

#[inline]
#[target_feature(enable = "avx2")]
fn inc(k: i32) -> __m256i {
    _mm256_set_epi32(0, 0, 0, k, 0, 0, 0, k)
}

/// Counter vectors `ctr + 2i` (`ctr` holds two consecutive counters), byte order
/// restored and whitened with round key 0.
#[inline]
#[target_feature(enable = "avx2")]
fn counters<const N: usize>(ctr: __m256i, rk0: __m256i) -> [__m256i; N] {
    core::array::from_fn(|i| {
        _mm256_xor_si256(bswap256(_mm256_add_epi32(ctr, inc(2 * i as i32))), rk0)
    })
}

/// The counter blocks of the bulk loop: eight vectors of two big-endian counter blocks,
/// kept whitened with round key 0 and stepped by 16 blocks with one XOR per vector, as in
/// the 512-bit kernel and with its table (see `counters`): starting at counter 2, blocks
/// 14 and 15, all of the last vector, take the second delta. Other starts, and counters
/// that are not public, add, byte-swap and whiten at every step.
struct Counters {
    /// Little-endian counters `c0, c0+1` (lowest dword counts).
    base: __m256i,
    /// Round key 0 in both lanes.
    rk0: __m256i,
    /// Blocks since `base`.
    done: u32,
    /// Which delta row the next step reads.
    cursor: DeltaCursor,
    /// Big-endian blocks `c0+done .. c0+done+15`, whitened.
    white: [__m256i; 8],
}

impl Counters {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(base: __m256i, rk0: __m256i, public: bool) -> Self {
        Self {
            base,
            rk0,
            done: 0,
            cursor: DeltaCursor::new(_mm256_cvtsi256_si32(base) as u32, public),
            white: Self::plain(base, 0, rk0),
        }
    }

    /// The 16 blocks from `done` the plain way: add, byte swap, whiten.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn plain(base: __m256i, done: u32, rk0: __m256i) -> [__m256i; 8] {
        counters(_mm256_add_epi32(base, inc(done as i32)), rk0)
    }

    /// The next 16 counter blocks, whitened; steps past them.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn next16(&mut self) -> [__m256i; 8] {
        let out = self.white;
        self.done = self.done.wrapping_add(16);
        if let Some(row) = self.cursor.next_row() {
            // SAFETY: two 32-byte rows from a 32-byte-aligned row (see `next_row`).
            let (d1, d2) = unsafe {
                let row = row.cast::<__m256i>();
                (_mm256_load_si256(row), _mm256_load_si256(row.add(1)))
            };
            for w in &mut self.white[..7] {
                *w = _mm256_xor_si256(*w, d1);
            }
            self.white[7] = _mm256_xor_si256(self.white[7], d2);
        } else {
            self.white = Self::plain(self.base, self.done, self.rk0);
        }
        out
    }

    /// The next 8 counter blocks, whitened; steps past them (used once, at the end).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn next8(&mut self) -> [__m256i; VECS] {
        let out = core::array::from_fn(|i| self.white[i]);
        self.done = self.done.wrapping_add(8);
        self.white = Self::plain(self.base, self.done, self.rk0);
        out
    }

    /// Little-endian counters for the tail: `c0+done, c0+done+1`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn le(&self) -> __m256i {
        _mm256_add_epi32(self.base, inc(self.done as i32))
    }
}

/// Rounds 1 to NR of `s`, XORed with `input` in the last round; with `HASH`, the
/// products of the `M` vectors of `hash_in` with `hp`, one after each of the first rounds.
#[inline]
#[target_feature(enable = "vaes,vpclmulqdq,avx2")]
fn stitched<const NR: usize, const HASH: bool, const N: usize, const M: usize>(
    rk: &[__m256i; 15],
    mut s: [__m256i; N],
    input: &[__m256i; N],
    hash_in: &[__m256i; M],
    hp: &[__m256i; M],
) -> ([__m256i; N], Wide) {
    // AES-128 has 9 middle rounds: room for up to 9 hashed vectors.
    const { assert!(M <= 9) };
    let mut w = Wide::zero();
    for r in 1..NR {
        for b in s.iter_mut() {
            *b = _mm256_aesenc_epi128(*b, rk[r]);
        }
        if HASH && r <= M {
            w.mul_add(hash_in[r - 1], hp[r - 1]);
        }
    }
    for (b, i) in s.iter_mut().zip(input) {
        *b = _mm256_aesenclast_epi128(*b, _mm256_xor_si256(rk[NR], *i));
    }
    (s, w)
}

/// 16 blocks per iteration: eight AES chains (see the module documentation).
const WIDE: usize = 2 * CHUNK;

/// # Safety
/// `off + WIDE` bytes readable at `p`.
#[inline(always)]
unsafe fn load8(p: *const u8, off: usize) -> [__m256i; 8] {
    // SAFETY: the caller keeps `off + WIDE` inside the buffer.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(p.add(off + 32 * i).cast()) })
}

/// # Safety
/// `off + WIDE <= io.len`.
#[inline(always)]
unsafe fn store8(io: InOut, off: usize, v: &[__m256i; 8]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + WIDE` inside the output.
        unsafe { _mm256_storeu_si256(io.dst.add(off + 32 * i).cast(), *b) };
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn hash_input8(v: &[__m256i; 8], x: __m128i) -> [__m256i; 8] {
    let mut d = v.map(|b| bswap256(b));
    d[0] = with_x(d[0], x);
    d
}

/// `H^16 H^15` .. `H^2 H^1`.
#[inline]
#[target_feature(enable = "avx")]
fn powers16(h: &HPowers) -> [__m256i; 8] {
    // SAFETY: indices 0..16 of a 19-entry table, eight 32-byte loads.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(h.0.as_ptr().add(2 * i).cast()) })
}

/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn load4(io: InOut, off: usize) -> [__m256i; VECS] {
    // SAFETY: the caller keeps `off + CHUNK` inside the input.
    core::array::from_fn(|i| unsafe { _mm256_loadu_si256(io.src.add(off + 32 * i).cast()) })
}

/// # Safety
/// `off + CHUNK <= io.len`.
#[inline(always)]
unsafe fn store4(io: InOut, off: usize, v: &[__m256i; VECS]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + CHUNK` inside the output.
        unsafe { _mm256_storeu_si256(io.dst.add(off + 32 * i).cast(), *b) };
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn hash_input(v: &[__m256i; VECS], x: __m128i) -> [__m256i; VECS] {
    let mut d = v.map(|b| bswap256(b));
    d[0] = with_x(d[0], x);
    d
}

/// CTR over all of `io` from the byte-reversed counter `ctr`; with `HASH`, GHASH of the
/// ciphertext (output if `ENC`, input otherwise) continuing from `x`. `public` says
/// whether the counter's value may steer the counter scheme (see `Counters`).
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(enable = "vaes,vpclmulqdq,avx2,avx,aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    ctr: __m128i,
    public: bool,
    mut x: __m128i,
    io: InOut,
) -> __m128i {
    let mut rk = [_mm256_setzero_si256(); 15];
    for i in 0..=NR {
        rk[i] = _mm256_broadcastsi128_si256(key.aes.rk[i]);
    }
    let hp = powers8(&key.h);
    let base = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(ctr),
        _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 0),
    );
    let mut ctrs = Counters::new(base, rk[0], public);
    let none = [_mm256_setzero_si256(); VECS];
    let mut off = 0;

    let hp16 = powers16(&key.h);
    if ENC && HASH {
        // Two iterations without hashing, then each hashes the output of two back (see
        // the module documentation).
        while off + WIDE <= io.len && off < 2 * WIDE {
            // SAFETY: `off + WIDE <= io.len`.
            let input = unsafe { load8(io.src, off) };
            let out = stitched::<NR, false, 8, 8>(&rk, ctrs.next16(), &input, &input, &hp16).0;
            // SAFETY: as above.
            unsafe { store8(io, off, &out) };
            off += WIDE;
        }
        let mut hashed = 0;
        while off + WIDE <= io.len {
            // SAFETY: `off + WIDE <= io.len`, and `hashed + 2 * WIDE == off`: output
            // written two iterations ago.
            let (input, back) = unsafe { (load8(io.src, off), load8(io.dst, hashed)) };
            let hash_in = hash_input8(&back, x);
            let (out, w) = stitched::<NR, true, 8, 8>(&rk, ctrs.next16(), &input, &hash_in, &hp16);
            // SAFETY: as above.
            unsafe { store8(io, off, &out) };
            x = w.reduce();
            hashed += WIDE;
            off += WIDE;
        }
        if off + CHUNK <= io.len {
            // SAFETY: `off + CHUNK <= io.len`.
            let input = unsafe { load4(io, off) };
            let (out, _) = stitched::<NR, false, VECS, VECS>(&rk, ctrs.next8(), &input, &none, &hp);
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            off += CHUNK;
        }
        // SAFETY: output written above, not written again while the slice lives.
        let unhashed = unsafe { core::slice::from_raw_parts(io.dst.add(hashed), off - hashed) };
        x = hash_bytes(&key.h, x, unhashed);
    } else {
        while off + WIDE <= io.len {
            // SAFETY: `off + WIDE <= io.len`.
            let input = unsafe { load8(io.src, off) };
            let s = ctrs.next16();
            let out = if HASH {
                let hash_in = hash_input8(&input, x);
                let (out, w) = stitched::<NR, true, 8, 8>(&rk, s, &input, &hash_in, &hp16);
                x = w.reduce();
                out
            } else {
                stitched::<NR, false, 8, 8>(&rk, s, &input, &input, &hp16).0
            };
            // SAFETY: as above.
            unsafe { store8(io, off, &out) };
            off += WIDE;
        }
        if off + CHUNK <= io.len {
            // SAFETY: `off + CHUNK <= io.len`.
            let input = unsafe { load4(io, off) };
            let s = ctrs.next8();
            let (out, w) = if HASH {
                let hash_in = hash_input(&input, x);
                stitched::<NR, true, VECS, VECS>(&rk, s, &input, &hash_in, &hp)
            } else {
                stitched::<NR, false, VECS, VECS>(&rk, s, &input, &none, &hp)
            };
            // SAFETY: as above.
            unsafe { store4(io, off, &out) };
            if HASH {
                x = w.reduce();
            }
            off += CHUNK;
        }
    }

    let rem = io.len - off;
    if rem == 0 {
        return x;
    }
    let ctr = ctrs.le();
    let mut buf = [0u8; CHUNK];
    // SAFETY: `off + rem == io.len` and `rem < CHUNK`.
    unsafe { read_tail(io, off, rem, &mut buf) };
    let input = load_buf(&buf);
    let n = rem.div_ceil(16);
    if HASH && !ENC {
        x = hash_tail(&key.h, x, &input, n);
    }
    let out: [__m256i; VECS] = match n.div_ceil(2) {
        1 => widen(
            stitched::<NR, false, 1, VECS>(&rk, counters(ctr, rk[0]), &[input[0]], &none, &none).0,
        ),
        2 => widen(
            stitched::<NR, false, 2, VECS>(
                &rk,
                counters(ctr, rk[0]),
                &[input[0], input[1]],
                &none,
                &none,
            )
            .0,
        ),
        3 => widen(
            stitched::<NR, false, 3, VECS>(
                &rk,
                counters(ctr, rk[0]),
                &[input[0], input[1], input[2]],
                &none,
                &none,
            )
            .0,
        ),
        _ => stitched::<NR, false, 4, VECS>(&rk, counters(ctr, rk[0]), &input, &none, &none).0,
    };
    for (i, v) in out.iter().enumerate() {
        // SAFETY: four 32-byte stores inside a CHUNK-byte array.
        unsafe { _mm256_storeu_si256(buf.as_mut_ptr().add(32 * i).cast(), *v) };
    }
    // SAFETY: as for `read_tail`.
    unsafe { write_tail(io, off, rem, &buf) };
    if HASH && ENC {
        // Keystream beyond the message is not ciphertext: GHASH pads with zeros.
        buf[rem..].fill(0);
        x = hash_tail(&key.h, x, &load_buf(&buf), n);
    }
    x
}

#[inline(always)]
fn widen<const N: usize>(v: [__m256i; N]) -> [__m256i; VECS] {
    // SAFETY: an all-zero bit pattern is a valid __m256i.
    let mut out = [unsafe { core::mem::zeroed::<__m256i>() }; VECS];
    out[..N].copy_from_slice(&v);
    out
}

//! AES-GCM with AES-NI and PCLMULQDQ on 128-bit vectors.
//!
//! The bulk loop takes 8 blocks per iteration and runs the AES rounds of those blocks
//! with the GHASH multiplications of 8 ciphertext blocks woven between them: one block's
//! four `PCLMULQDQ`s after each of the first eight rounds, and one reduction for all
//! eight. AES and carry-less multiplication use different execution ports, so the hash
//! rides along in the shadow of the cipher. Decryption hashes the ciphertext it is about
//! to decrypt (it is input); encryption hashes the previous iteration's output, one
//! iteration behind, and hashes the last 8 blocks after the loop.
//!
//! Counters are kept byte-reversed, so that the 32-bit block counter is the lowest lane
//! and `PADDD` increments it with the wrap-around GCM specifies; one `PSHUFB` per block
//! turns it back. The final round XORs the input into the last round key
//! (`AESENCLAST(s, k ^ in) = AESENCLAST(s, k) ^ in`), taking the XOR off the critical path.
//!
//! Fewer than 8 blocks at the end go through a stack buffer, and are hashed with one
//! aggregated multiplication by `H^n ... H^1`.

use super::clmul::{self, Wide, bswap};
use super::{AesNiToken, HPowers, HwKey, InOut, aes_ni, load16, read_tail, store16, write_tail};
use core::arch::x86_64::*;

const BLOCKS: usize = 8;
const CHUNK: usize = 16 * BLOCKS;

kernel_entry_points!(AesNiToken, "aes,pclmulqdq,ssse3,sse4.1");

#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn gcm<const NR: usize, const ENC: bool>(
    key: &HwKey,
    _t: AesNiToken,
    j0: &[u8; 16],
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    let j0 = load16(j0);
    let tag_mask = aes_ni::encrypt1::<NR>(&key.aes.rk, j0);
    let x = clmul::update(&key.h, _mm_setzero_si128(), aad);
    let ctr = _mm_add_epi32(bswap(j0), _mm_set_epi32(0, 0, 0, 1));
    // SAFETY: forwarded contract.
    let x = unsafe { bulk::<NR, ENC, true>(key, ctr, x, io) };
    let lens = _mm_set_epi64x((aad.len() as i64) << 3, (io.len as i64) << 3);
    let s = clmul::mont_mul(_mm_xor_si128(x, lens), key.h.0[HPowers::COUNT - 1]);
    let mut tag = [0u8; 16];
    store16(&mut tag, _mm_xor_si128(bswap(s), tag_mask));
    tag
}

/// The counter blocks `ctr + 0 .. ctr + 7`, byte order restored, whitened with round key 0.
#[inline]
#[target_feature(enable = "ssse3,sse2")]
fn counters(ctr: __m128i, rk0: __m128i) -> [__m128i; BLOCKS] {
    core::array::from_fn(|i| {
        _mm_xor_si128(
            bswap(_mm_add_epi32(ctr, _mm_set_epi32(0, 0, 0, i as i32))),
            rk0,
        )
    })
}

/// Rounds 1 to NR of 8 whitened counter blocks, XORed with `input`; when `HASH`, the
/// products of `hash_in` (mirrored, `X` already added to the first) with `H^8 ... H^1`
/// are accumulated between the rounds.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,sse2")]
fn stitched<const NR: usize, const HASH: bool>(
    rk: &[__m128i; 15],
    mut s: [__m128i; BLOCKS],
    input: &[__m128i; BLOCKS],
    hash_in: &[__m128i; BLOCKS],
    h: &HPowers,
) -> ([__m128i; BLOCKS], Wide) {
    let mut w = Wide::zero();
    for r in 1..NR {
        for b in s.iter_mut() {
            *b = _mm_aesenc_si128(*b, rk[r]);
        }
        if HASH && r <= BLOCKS {
            w.mul_add(hash_in[r - 1], h.0[HPowers::COUNT - BLOCKS + r - 1]);
        }
    }
    // AES has at least 10 rounds, so all 8 blocks were hashed above.
    const { assert!(NR > BLOCKS) };
    for (b, i) in s.iter_mut().zip(input) {
        *b = _mm_aesenclast_si128(*b, _mm_xor_si128(rk[NR], *i));
    }
    (s, w)
}

/// Loads 8 blocks of input at `off`.
///
/// # Safety
/// `off + 128 <= io.len`.
#[inline(always)]
unsafe fn load8(io: InOut, off: usize) -> [__m128i; BLOCKS] {
    // SAFETY: the caller keeps `off + 128` inside the input.
    core::array::from_fn(|i| unsafe { _mm_loadu_si128(io.src.add(off + 16 * i).cast()) })
}

/// Stores 8 blocks of output at `off`.
///
/// # Safety
/// `off + 128 <= io.len`.
#[inline(always)]
unsafe fn store8(io: InOut, off: usize, v: &[__m128i; BLOCKS]) {
    for (i, b) in v.iter().enumerate() {
        // SAFETY: the caller keeps `off + 128` inside the output.
        unsafe { _mm_storeu_si128(io.dst.add(off + 16 * i).cast(), *b) };
    }
}

/// CTR over all of `io` starting at the (byte-reversed) counter `ctr`; when `HASH`,
/// GHASH of the ciphertext (output if `ENC`, input otherwise) continuing from `x`.
///
/// # Safety
/// `io` must satisfy the contract of [`InOut::new`].
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn bulk<const NR: usize, const ENC: bool, const HASH: bool>(
    key: &HwKey,
    mut ctr: __m128i,
    mut x: __m128i,
    io: InOut,
) -> __m128i {
    let rk = &key.aes.rk;
    let h = &key.h;
    let step = _mm_set_epi32(0, 0, 0, BLOCKS as i32);
    let none = [_mm_setzero_si128(); BLOCKS];
    let mut off = 0;

    if ENC && HASH {
        // Output is hashed one iteration late: `pending` holds the last ciphertext.
        if io.len >= CHUNK {
            // SAFETY: `CHUNK <= io.len`.
            let input = unsafe { load8(io, 0) };
            let (out, _) = stitched::<NR, false>(rk, counters(ctr, rk[0]), &input, &none, h);
            // SAFETY: as above.
            unsafe { store8(io, 0, &out) };
            ctr = _mm_add_epi32(ctr, step);
            off = CHUNK;
            let mut pending = out;
            while off + CHUNK <= io.len {
                let mut hash_in = pending.map(|b| bswap(b));
                hash_in[0] = _mm_xor_si128(hash_in[0], x);
                // SAFETY: `off + CHUNK <= io.len`.
                let input = unsafe { load8(io, off) };
                let (out, w) = stitched::<NR, true>(rk, counters(ctr, rk[0]), &input, &hash_in, h);
                // SAFETY: as above.
                unsafe { store8(io, off, &out) };
                x = w.reduce();
                ctr = _mm_add_epi32(ctr, step);
                off += CHUNK;
                pending = out;
            }
            x = hash_blocks(h, x, &pending);
        }
    } else {
        while off + CHUNK <= io.len {
            // SAFETY: `off + CHUNK <= io.len`.
            let input = unsafe { load8(io, off) };
            let (out, w) = if HASH {
                let mut hash_in = input.map(|b| bswap(b));
                hash_in[0] = _mm_xor_si128(hash_in[0], x);
                stitched::<NR, true>(rk, counters(ctr, rk[0]), &input, &hash_in, h)
            } else {
                stitched::<NR, false>(rk, counters(ctr, rk[0]), &input, &none, h)
            };
            // SAFETY: as above.
            unsafe { store8(io, off, &out) };
            if HASH {
                x = w.reduce();
            }
            ctr = _mm_add_epi32(ctr, step);
            off += CHUNK;
        }
    }

    let rem = io.len - off;
    if rem == 0 {
        return x;
    }
    let mut buf = [[0u8; 16]; BLOCKS];
    // SAFETY: `off + rem == io.len` and `rem < CHUNK`, the size of `buf`.
    unsafe { read_tail(io, off, rem, buf.as_flattened_mut()) };
    let n = rem.div_ceil(16);
    if HASH && !ENC {
        x = hash_tail(h, x, &buf[..n]);
    }
    for (i, b) in buf[..n].iter_mut().enumerate() {
        let c = bswap(_mm_add_epi32(ctr, _mm_set_epi32(0, 0, 0, i as i32)));
        store16(b, _mm_xor_si128(load16(b), aes_ni::encrypt1::<NR>(rk, c)));
    }
    // SAFETY: as above.
    unsafe { write_tail(io, off, rem, buf.as_flattened()) };
    if HASH && ENC {
        // The keystream beyond the message is not ciphertext: GHASH pads with zeros.
        buf.as_flattened_mut()[rem..].fill(0);
        x = hash_tail(h, x, &buf[..n]);
    }
    x
}

/// GHASH of 8 output blocks (byte form) continuing from `x`.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn hash_blocks(h: &HPowers, x: __m128i, blocks: &[__m128i; BLOCKS]) -> __m128i {
    let mut w = Wide::zero();
    for (j, b) in blocks.iter().enumerate() {
        let mut v = bswap(*b);
        if j == 0 {
            v = _mm_xor_si128(v, x);
        }
        w.mul_add(v, h.0[HPowers::COUNT - BLOCKS + j]);
    }
    w.reduce()
}

/// GHASH of up to 16 blocks in byte form, with one reduction.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn hash_tail(h: &HPowers, x: __m128i, blocks: &[[u8; 16]]) -> __m128i {
    let n = blocks.len();
    let mut w = Wide::zero();
    for (j, b) in blocks.iter().enumerate() {
        let mut v = bswap(load16(b));
        if j == 0 {
            v = _mm_xor_si128(v, x);
        }
        w.mul_add(v, h.0[HPowers::COUNT - n + j]);
    }
    w.reduce()
}

//! Raw AES block encryption and decryption on the hardware back ends, for the `cipher`
//! trait implementations in `crate::aes` and for CBC.
//!
//! Each back end is a small struct holding the round keys, implementing the `cipher`
//! backend traits with its natural width: 8 blocks for AES-NI (8 independent `AESENC`
//! chains fill the pipeline), 16 blocks (8 × 256-bit) for VAES-256 and 32 blocks
//! (8 × 512-bit) for VAES-512. The `with_*` entry points are `#[target_feature]`
//! functions that hand the backend to the caller's closure, so that the caller's loop is
//! compiled inside the feature context and the kernels inline into it.
//!
//! CBC decryption is parallel (each plaintext block needs only two ciphertext blocks), and
//! is done here in place: the previous-ciphertext operand of every block is one unaligned
//! load 16 bytes behind the block, made before anything is stored.

use super::{AesNiToken, RoundKeys, Vaes256Token, Vaes512Token, aes_ni, load16, store16};
use cipher::{
    Block, BlockCipherDecBackend, BlockCipherDecClosure, BlockCipherEncBackend,
    BlockCipherEncClosure, BlockSizeUser, InOut, ParBlocks, ParBlocksSizeUser,
    consts::{U8, U16, U32},
};
use core::arch::x86_64::*;

/// Which way a backend struct runs the cipher.
#[derive(Clone, Copy)]
pub(crate) enum Dir {
    Enc,
    Dec,
}

macro_rules! backend {
    ($name:ident, $token:ty, $par:ty, $par_fn:ident) => {
        pub(crate) struct $name<'a> {
            keys: &'a RoundKeys,
            dir: Dir,
            _t: $token,
        }

        impl BlockSizeUser for $name<'_> {
            type BlockSize = U16;
        }

        impl ParBlocksSizeUser for $name<'_> {
            type ParBlocksSize = $par;
        }

        impl $name<'_> {
            #[inline]
            fn one(&self, mut block: InOut<'_, '_, Block<Self>>) {
                let b: &[u8; 16] = block.get_in().as_ref();
                let v = load16(b);
                // SAFETY: the token field proves the CPU features.
                let r = unsafe {
                    match self.dir {
                        Dir::Enc => one_enc(self.keys, v),
                        Dir::Dec => one_dec(self.keys, v),
                    }
                };
                store16(block.get_out().as_mut(), r);
            }

            #[inline]
            fn par(&self, blocks: InOut<'_, '_, ParBlocks<Self>>) {
                // Both pointers from one `into_raw`: taking the output as `&mut` after
                // the input as `&` would, in place, invalidate the input pointer (Miri's
                // borrow checks flag it), since the two are the same memory.
                let (src, dst) = blocks.into_raw();
                let (src, dst) = (src.cast::<u8>(), dst.cast::<u8>());
                // SAFETY: `src` and `dst` each cover one `ParBlocks` array (equal, or disjoint
                // by `InOut`'s contract); the token proves the CPU features.
                unsafe { $par_fn(self.keys, self.dir, src, dst) }
            }
        }

        impl BlockCipherEncBackend for $name<'_> {
            #[inline]
            fn encrypt_block(&self, block: InOut<'_, '_, Block<Self>>) {
                self.one(block)
            }
            #[inline]
            fn encrypt_par_blocks(&self, blocks: InOut<'_, '_, ParBlocks<Self>>) {
                self.par(blocks)
            }
        }

        impl BlockCipherDecBackend for $name<'_> {
            #[inline]
            fn decrypt_block(&self, block: InOut<'_, '_, Block<Self>>) {
                self.one(block)
            }
            #[inline]
            fn decrypt_par_blocks(&self, blocks: InOut<'_, '_, ParBlocks<Self>>) {
                self.par(blocks)
            }
        }
    };
}

backend!(NiBackend, AesNiToken, U8, par_ni);
backend!(Vaes256Backend, Vaes256Token, U16, par_vaes256);
backend!(Vaes512Backend, Vaes512Token, U32, par_vaes512);

#[inline]
#[target_feature(enable = "aes,sse2")]
fn one_enc(k: &RoundKeys, v: __m128i) -> __m128i {
    aes_ni::encrypt_block(k, v)
}

#[inline]
#[target_feature(enable = "aes,sse2")]
fn one_dec(k: &RoundKeys, v: __m128i) -> __m128i {
    aes_ni::decrypt_block(k, v)
}

/// 8 blocks through all rounds, 8 chains in flight.
///
/// # Safety
/// `src` readable and `dst` writable for 128 bytes (equal or disjoint).
#[inline]
#[target_feature(enable = "aes,sse2")]
unsafe fn par_ni(k: &RoundKeys, dir: Dir, src: *const u8, dst: *mut u8) {
    // SAFETY: the caller provides 128 readable bytes.
    let mut s: [__m128i; 8] =
        core::array::from_fn(|i| unsafe { _mm_loadu_si128(src.add(16 * i).cast()) });
    for b in s.iter_mut() {
        *b = _mm_xor_si128(*b, k.rk[0]);
    }
    for r in 1..k.rounds {
        for b in s.iter_mut() {
            *b = match dir {
                Dir::Enc => _mm_aesenc_si128(*b, k.rk[r]),
                Dir::Dec => _mm_aesdec_si128(*b, k.rk[r]),
            };
        }
    }
    for (i, b) in s.iter().enumerate() {
        let v = match dir {
            Dir::Enc => _mm_aesenclast_si128(*b, k.rk[k.rounds]),
            Dir::Dec => _mm_aesdeclast_si128(*b, k.rk[k.rounds]),
        };
        // SAFETY: the caller provides 128 writable bytes.
        unsafe { _mm_storeu_si128(dst.add(16 * i).cast(), v) };
    }
}

/// 16 blocks as 8 × 256-bit.
///
/// # Safety
/// `src` readable and `dst` writable for 256 bytes (equal or disjoint).
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
unsafe fn par_vaes256(k: &RoundKeys, dir: Dir, src: *const u8, dst: *mut u8) {
    // SAFETY: the caller provides 256 readable bytes.
    let s = unsafe { load_and_rounds_vaes256(k, dir, src) };
    let kl = _mm256_broadcastsi128_si256(k.rk[k.rounds]);
    for (i, b) in s.iter().enumerate() {
        let v = match dir {
            Dir::Enc => _mm256_aesenclast_epi128(*b, kl),
            Dir::Dec => _mm256_aesdeclast_epi128(*b, kl),
        };
        // SAFETY: the caller provides 256 writable bytes.
        unsafe { _mm256_storeu_si256(dst.add(32 * i).cast(), v) };
    }
}

/// The 256 bytes at `src` as 8 × 256-bit vectors through every AES round but the last
/// (which the callers finish: plain, or with CBC's chaining XOR folded into its key).
///
/// # Safety
/// `src` readable for 256 bytes.
#[inline]
#[target_feature(enable = "vaes,avx2,aes")]
unsafe fn load_and_rounds_vaes256(k: &RoundKeys, dir: Dir, src: *const u8) -> [__m256i; 8] {
    let rk = |r: usize| _mm256_broadcastsi128_si256(k.rk[r]);
    // SAFETY: the caller provides 256 readable bytes.
    let mut s: [__m256i; 8] =
        core::array::from_fn(|i| unsafe { _mm256_loadu_si256(src.add(32 * i).cast()) });
    let k0 = rk(0);
    for b in s.iter_mut() {
        *b = _mm256_xor_si256(*b, k0);
    }
    for r in 1..k.rounds {
        let kr = rk(r);
        for b in s.iter_mut() {
            *b = match dir {
                Dir::Enc => _mm256_aesenc_epi128(*b, kr),
                Dir::Dec => _mm256_aesdec_epi128(*b, kr),
            };
        }
    }
    s
}

/// 32 blocks as 8 × 512-bit.
///
/// # Safety
/// `src` readable and `dst` writable for 512 bytes (equal or disjoint).
#[inline]
#[target_feature(enable = "vaes,avx512f,avx2,aes")]
unsafe fn par_vaes512(k: &RoundKeys, dir: Dir, src: *const u8, dst: *mut u8) {
    let rk = |r: usize| _mm512_broadcast_i32x4(k.rk[r]);
    // SAFETY: the caller provides 512 readable bytes.
    let mut s: [__m512i; 8] =
        core::array::from_fn(|i| unsafe { _mm512_loadu_si512(src.add(64 * i).cast()) });
    let k0 = rk(0);
    for b in s.iter_mut() {
        *b = _mm512_xor_si512(*b, k0);
    }
    for r in 1..k.rounds {
        let kr = rk(r);
        for b in s.iter_mut() {
            *b = match dir {
                Dir::Enc => _mm512_aesenc_epi128(*b, kr),
                Dir::Dec => _mm512_aesdec_epi128(*b, kr),
            };
        }
    }
    let kl = rk(k.rounds);
    for (i, b) in s.iter().enumerate() {
        let v = match dir {
            Dir::Enc => _mm512_aesenclast_epi128(*b, kl),
            Dir::Dec => _mm512_aesdeclast_epi128(*b, kl),
        };
        // SAFETY: the caller provides 512 writable bytes.
        unsafe { _mm512_storeu_si512(dst.add(64 * i).cast(), v) };
    }
}

macro_rules! entry {
    ($enc:ident, $dec:ident, $backend:ident, $token:ty, $feat:literal) => {
        /// Runs the caller's encryption closure on this back end, inside its feature context.
        #[target_feature(enable = $feat)]
        pub(crate) fn $enc(
            keys: &RoundKeys,
            t: $token,
            f: impl BlockCipherEncClosure<BlockSize = U16>,
        ) {
            f.call(&$backend {
                keys,
                dir: Dir::Enc,
                _t: t,
            })
        }

        /// Runs the caller's decryption closure (`keys` is the decryption schedule).
        #[target_feature(enable = $feat)]
        pub(crate) fn $dec(
            keys: &RoundKeys,
            t: $token,
            f: impl BlockCipherDecClosure<BlockSize = U16>,
        ) {
            f.call(&$backend {
                keys,
                dir: Dir::Dec,
                _t: t,
            })
        }
    };
}

entry!(
    enc_ni,
    dec_ni,
    NiBackend,
    AesNiToken,
    "aes,sse2,ssse3,sse4.1"
);
entry!(
    enc_vaes256,
    dec_vaes256,
    Vaes256Backend,
    Vaes256Token,
    "vaes,avx2,avx,aes,sse4.1"
);
entry!(
    enc_vaes512,
    dec_vaes512,
    Vaes512Backend,
    Vaes512Token,
    "vaes,avx512f,avx512bw,avx2,avx,aes,sse4.1"
);

/// CBC encryption in place: inherently serial, one `AESENC` chain.
///
/// The chaining XOR rides on the last round: `AESENCLAST` XORs its key in at the end, so
/// giving it `rk[last] ^ rk[0] ^ next_plaintext` yields the next block's whitened input
/// directly, and the serial chain is the AES rounds alone (two XORs per block shorter).
/// Each ciphertext block is then recovered off the chain, as that value XOR
/// `next_plaintext ^ rk[0]`.
#[target_feature(enable = "aes,sse2")]
pub(crate) fn cbc_encrypt(
    k: &RoundKeys,
    _t: AesNiToken,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    let n = k.rounds;
    let rk0 = k.rk[0];
    let last_rk0 = _mm_xor_si128(k.rk[n], rk0);
    let Some(first) = blocks.first() else {
        return;
    };
    let mut s = _mm_xor_si128(_mm_xor_si128(load16(first), load16(iv)), rk0);
    for i in 0..blocks.len() {
        for r in 1..n {
            s = _mm_aesenc_si128(s, k.rk[r]);
        }
        if let Some(next) = blocks.get(i + 1) {
            let p = load16(next);
            let t = _mm_aesenclast_si128(s, _mm_xor_si128(last_rk0, p));
            store16(&mut blocks[i], _mm_xor_si128(t, _mm_xor_si128(p, rk0)));
            s = t;
        } else {
            let c = _mm_aesenclast_si128(s, k.rk[n]);
            store16(&mut blocks[i], c);
            store16(iv, c);
        }
    }
}

/// CBC decryption in place, 8 blocks at a time with AES-NI (`dk` is the decryption
/// schedule).
#[target_feature(enable = "aes,sse2")]
pub(crate) fn cbc_decrypt_ni(
    dk: &RoundKeys,
    _t: AesNiToken,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    let mut prev = load16(iv);
    let mut chunks = blocks.chunks_exact_mut(8);
    for chunk in &mut chunks {
        prev = cbc_decrypt_lanes::<8>(dk, prev, chunk);
    }
    // The last few blocks in as few lanes as hold them, rather than eight with the unused
    // ones decrypting zeros: a short record (a TLS alert, a small request) is all tail.
    let rest = chunks.into_remainder();
    prev = match rest.len() {
        0 => prev,
        1 => cbc_decrypt_lanes::<1>(dk, prev, rest),
        2 => cbc_decrypt_lanes::<2>(dk, prev, rest),
        3 | 4 => cbc_decrypt_lanes::<4>(dk, prev, rest),
        _ => cbc_decrypt_lanes::<8>(dk, prev, rest),
    };
    store16(iv, prev);
}

/// Decrypts `chunk` (at most `N` blocks) in `N` parallel lanes, chaining from `prev`;
/// returns the last ciphertext block, the next chaining value.
#[inline]
#[target_feature(enable = "aes,sse2")]
fn cbc_decrypt_lanes<const N: usize>(
    dk: &RoundKeys,
    prev: __m128i,
    chunk: &mut [[u8; 16]],
) -> __m128i {
    debug_assert!(!chunk.is_empty() && chunk.len() <= N);
    let c: [__m128i; N] =
        core::array::from_fn(|i| chunk.get(i).map_or(_mm_setzero_si128(), load16));
    let mut s = c.map(|b| _mm_xor_si128(b, dk.rk[0]));
    for r in 1..dk.rounds {
        for b in s.iter_mut() {
            *b = _mm_aesdec_si128(*b, dk.rk[r]);
        }
    }
    for (i, b) in chunk.iter_mut().enumerate() {
        let p = _mm_aesdeclast_si128(
            s[i],
            _mm_xor_si128(dk.rk[dk.rounds], if i == 0 { prev } else { c[i - 1] }),
        );
        store16(b, p);
    }
    c[chunk.len() - 1]
}

/// The loop shared by the VAES CBC decryptions: whole chunks of [`CBC_CHUNK`] blocks
/// through `chunk` (given the chunk's bytes and the previous ciphertext block, it decrypts
/// the chunk in place and returns its last ciphertext block), then the rest on AES-NI.
#[inline]
#[target_feature(enable = "aes,sse2")]
fn cbc_decrypt_chunks(
    dk: &RoundKeys,
    t: AesNiToken,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
    mut chunk: impl FnMut(&mut [[u8; 16]; CBC_CHUNK], __m128i) -> __m128i,
) {
    let mut prev = load16(iv);
    let (chunks, rest) = blocks.as_chunks_mut::<CBC_CHUNK>();
    for c in chunks {
        prev = chunk(c, prev);
    }
    let mut tail_iv = [0u8; 16];
    store16(&mut tail_iv, prev);
    cbc_decrypt_ni(dk, t, &mut tail_iv, rest);
    *iv = tail_iv;
}

/// Blocks per chunk of the VAES CBC decryptions: 8 × 256-bit or 4 × 512-bit vectors.
const CBC_CHUNK: usize = 16;

/// CBC decryption in place, 16 blocks (8 × 256-bit) at a time with VAES on 256-bit
/// vectors: twice the blocks per instruction of [`cbc_decrypt_ni`]. Zen 3 issues two
/// 256-bit `VAESDEC` per cycle with 4 cycles of latency, so eight vectors in flight keep
/// both pipes busy (AES-128: 80 `VAESDEC` per 256 bytes, about 0.16 cycles/byte, against
/// 0.31 for eight 128-bit lanes). This matters to TLS CBC open, which decrypts the whole
/// record before it hashes it.
///
/// Not the VAES-512 chunk with narrower vectors: with 16 vector registers (no AVX-512),
/// the eight states and a round key fill most of them, so the previous-ciphertext operand
/// of each vector is not kept from the loads but loaded again, 16 bytes behind its
/// vector, at the last round. The vectors are stored last to first, so that each of
/// those loads still finds ciphertext: vector `i`'s operand spans vectors `i - 1` and
/// `i`, and vector `i - 1` is stored after it.
#[target_feature(enable = "vaes,avx2,aes")]
pub(crate) fn cbc_decrypt_vaes256(
    dk: &RoundKeys,
    t: Vaes256Token,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    cbc_decrypt_chunks(dk, t.aesni(), iv, blocks, |chunk, prev| {
        let p = chunk.as_mut_ptr().cast::<u8>();
        // SAFETY: `chunk` is 256 bytes.
        let s = unsafe { load_and_rounds_vaes256(dk, Dir::Dec, p) };
        let kl = _mm256_broadcastsi128_si256(dk.rk[dk.rounds]);
        // Still ciphertext: the last block, the next chunk's chaining value, and the
        // first, which with `prev` makes vector 0's operand.
        // SAFETY: the chunk's bytes 240..256 and 0..16.
        let (last, first) = unsafe {
            (
                _mm_loadu_si128(p.add(240).cast()),
                _mm_loadu_si128(p.cast()),
            )
        };
        for i in (0..8).rev() {
            let before = if i == 0 {
                _mm256_set_m128i(first, prev)
            } else {
                // SAFETY: bytes 32i - 16 .. 32i + 16 of the chunk, i >= 1; vectors
                // i - 1 and i are not stored yet.
                unsafe { _mm256_loadu_si256(p.add(32 * i - 16).cast()) }
            };
            let v = _mm256_aesdeclast_epi128(s[i], _mm256_xor_si256(kl, before));
            // SAFETY: as for the loads.
            unsafe { _mm256_storeu_si256(p.add(32 * i).cast(), v) };
        }
        last
    })
}

/// CBC decryption in place, 16 blocks (4 × 512-bit) at a time with VAES.
#[target_feature(enable = "vaes,avx512f,avx512bw,avx2,aes")]
pub(crate) fn cbc_decrypt_vaes512(
    dk: &RoundKeys,
    t: Vaes512Token,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    if blocks.len() < CBC_CHUNK {
        // No whole chunk: skip the round-key broadcasts.
        cbc_decrypt_ni(dk, t.aesni(), iv, blocks);
        return;
    }
    let rk: [__m512i; 15] =
        core::array::from_fn(|r| _mm512_broadcast_i32x4(dk.rk[r.min(dk.rounds)]));
    cbc_decrypt_chunks(dk, t.aesni(), iv, blocks, |chunk, prev| {
        let p = chunk.as_mut_ptr().cast::<u8>();
        // SAFETY: `chunk` is 256 bytes; four 64-byte loads.
        let c: [__m512i; 4] =
            core::array::from_fn(|i| unsafe { _mm512_loadu_si512(p.add(64 * i).cast()) });
        // The previous ciphertext of each block: the vector shifted down by one block,
        // with the last block of the previous vector (or `prev`) entering lane 0.
        let shifted: [__m512i; 4] = core::array::from_fn(|i| {
            let before = if i == 0 {
                _mm512_broadcast_i32x4(prev)
            } else {
                c[i - 1]
            };
            _mm512_alignr_epi64::<6>(c[i], before)
        });
        let mut s = c.map(|b| _mm512_xor_si512(b, rk[0]));
        for r in 1..dk.rounds {
            for b in s.iter_mut() {
                *b = _mm512_aesdec_epi128(*b, rk[r]);
            }
        }
        for i in 0..4 {
            let v = _mm512_aesdeclast_epi128(s[i], _mm512_xor_si512(rk[dk.rounds], shifted[i]));
            // SAFETY: as for the loads.
            unsafe { _mm512_storeu_si512(p.add(64 * i).cast(), v) };
        }
        _mm512_extracti32x4_epi32::<3>(c[3])
    })
}

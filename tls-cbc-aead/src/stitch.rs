//! Seal's inner HMAC-SHA384 hash and AES-256-CBC encryption in one pass (x86_64 with
//! AVX2, BMI2, AVX-512VL and AES-NI).
//!
//! CBC encryption is a serial chain of `aesenc`, bound by its latency and leaving the AES
//! unit idle most of the time; the SHA-512 rounds are scalar and do not use that unit at
//! all. So the CBC blocks are encrypted from the hook that `sha512_x86::compress_pair`
//! calls every 16 rounds, and the out-of-order core runs the chain beside the rounds.
//!
//! The hash input is `ad || len16 || plaintext`, so its blocks sit 13 bytes off the CBC
//! blocks, and encryption is in place: a CBC block is encrypted only once the hash has
//! loaded all of it (each pair of SHA blocks is loaded into registers before its rounds,
//! and hence before its hook runs). That leaves the CBC one block behind the hash; the
//! caller hashes and encrypts whatever is left the usual way.

use core::arch::x86_64::*;

use crate::sha512_x86::{compress_pair, load_pair, wk_buffer};

/// Bytes of the hash input in front of the plaintext: the associated data and the length.
const HEAD_LEN: usize = 13;
/// Plaintext bytes in the first SHA block.
const FIRST: usize = 128 - HEAD_LEN;

/// How far [`hash_and_encrypt`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Whole SHA blocks of `head || data` compressed.
    pub(crate) blocks: u64,
    /// Bytes of `data` among them.
    pub(crate) hashed: usize,
    /// Bytes of `data` CBC-encrypted in place (a multiple of 16, at most `hashed`).
    pub(crate) encrypted: usize,
}

impl Progress {
    /// Nothing hashed or encrypted: the hash takes it all the usual way.
    pub(crate) const NONE: Self = Self {
        blocks: 0,
        hashed: 0,
        encrypted: 0,
    };
}

/// Compresses the whole SHA-512 blocks of `head || data` into `state` and CBC-encrypts,
/// in place, the 16-byte blocks of `data` that those cover, chaining from `iv` (left
/// holding the last ciphertext block). `rk` are AES-256 encryption round keys.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2, AVX-512F/VL and AES-NI.
#[target_feature(enable = "avx2,bmi1,bmi2,avx512f,avx512vl,aes")]
pub(crate) unsafe fn hash_and_encrypt(
    state: &mut [u64; 8],
    head: &[u8; HEAD_LEN],
    data: &mut [u8],
    rk: &[__m128i; 15],
    iv: &mut [u8; 16],
) -> Progress {
    let blocks = (HEAD_LEN + data.len()) / 128;
    if blocks == 0 {
        return Progress {
            blocks: 0,
            hashed: 0,
            encrypted: 0,
        };
    }
    let mut first = [0u8; 128];
    first[..HEAD_LEN].copy_from_slice(head);
    first[HEAD_LEN..].copy_from_slice(&data[..FIRST]);

    let mut wk = wk_buffer();
    // SAFETY: `iv` is 16 readable bytes.
    let mut chain = unsafe { _mm_loadu_si128(iv.as_ptr().cast()) };
    let mut encrypted = 0;
    let mut k = 0;
    while k < blocks {
        let both = k + 1 < blocks;
        let last = if both { k + 1 } else { k };
        // Both blocks are in registers after this, before any of the hooks below writes
        // ciphertext over them.
        let x = load_pair(sha_block(&first, data, k), sha_block(&first, data, last));
        // The CBC blocks that lie wholly within the data loaded so far.
        let limit = (FIRST + 128 * last) / 16;
        let n = limit - encrypted;
        // The first CBC block of each hook call: the blocks spread evenly over the calls
        // (constant divisors, so no division instruction).
        let start = |group: usize| if both { group * n / 10 } else { group * n / 5 };
        let (cbc, _) = data.as_chunks_mut::<16>();
        let cbc = &mut cbc[encrypted..limit];
        compress_pair(state, &mut wk, x, both, |group| {
            for block in &mut cbc[start(group)..start(group + 1)] {
                chain = encrypt_block(rk, chain, block);
            }
        });
        encrypted = limit;
        k = last + 1;
    }
    // SAFETY: `iv` is 16 writable bytes.
    unsafe { _mm_storeu_si128(iv.as_mut_ptr().cast(), chain) };
    Progress {
        blocks: blocks as u64,
        hashed: FIRST + 128 * (blocks - 1),
        encrypted: 16 * encrypted,
    }
}

/// Block `k` of the hash input: `first`, then `data[FIRST + 128 (k - 1)..][..128]`.
#[inline(always)]
fn sha_block<'a>(first: &'a [u8; 128], data: &'a [u8], k: usize) -> &'a [u8; 128] {
    match k {
        0 => first,
        _ => {
            let off = FIRST + 128 * (k - 1);
            data[off..off + 128].try_into().unwrap()
        }
    }
}

/// One CBC step: encrypts `block ^ chain` in place and returns the ciphertext.
#[inline]
#[target_feature(enable = "aes")]
fn encrypt_block(rk: &[__m128i; 15], chain: __m128i, block: &mut [u8; 16]) -> __m128i {
    // SAFETY: `block` is 16 readable bytes.
    let p = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
    let mut s = _mm_xor_si128(_mm_xor_si128(p, rk[0]), chain);
    for k in &rk[1..14] {
        s = _mm_aesenc_si128(s, *k);
    }
    s = _mm_aesenclast_si128(s, rk[14]);
    // SAFETY: `block` is 16 writable bytes.
    unsafe { _mm_storeu_si128(block.as_mut_ptr().cast(), s) };
    s
}

#[cfg(test)]
mod tests {
    use crate::{
        digest::Sha384,
        hmac_key::HmacKey,
        record::{self, SealPath},
    };
    use gcm_core::{Backend, aes::Aes256};
    use std::{vec, vec::Vec};

    /// Stitched seal against the plain one, record for record, on every back end with
    /// AES-NI; every length up to past four hash-block pairs, and some large ones.
    #[test]
    fn stitched_seal_matches_plain() {
        let mut mac = HmacKey::<Sha384>::new(&[0x5a; 48]);
        if mac.seal_path != SealPath::Stitched {
            std::eprintln!("skipped: no AVX2/BMI2/AVX-512VL");
            return;
        }
        let ad = [0, 0, 0, 0, 0, 0, 0, 3, 0x17, 3, 3];
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + (i >> 8)) as u8).collect();
        let lens = (0..=1100).chain([4095, 4096, 8192, 16383, 16384, 16385, 19_999]);
        for backend in Backend::available() {
            let key = [0xc3; 32].into();
            let cipher = Aes256::new_with_backend(&key, backend).unwrap();
            if cipher.aesni_round_keys().is_none() {
                continue;
            }
            for len in lens.clone() {
                let mut records = vec![];
                for path in [SealPath::Plain, SealPath::Stitched] {
                    mac.seal_path = path;
                    let mut iv = [0x11u8; 16];
                    let mut buf = data[..len].to_vec();
                    record::seal(&cipher, &mac, &mut iv, &ad, &mut buf).unwrap();
                    records.push((buf, iv));
                }
                assert_eq!(records[0], records[1], "{backend:?} {len}");
            }
        }
    }
}

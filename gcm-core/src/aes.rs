//! AES block ciphers on the crate's back ends: drop-in replacements for
//! `aes::Aes128`, `aes::Aes192` and `aes::Aes256`.
//!
//! They implement the `cipher` 0.5 traits (`KeyInit`, `BlockCipherEncrypt`,
//! `BlockCipherDecrypt`), so they work with the RustCrypto modes (`cbc`, `ctr`, ...).
//! On VAES CPUs the parallel block functions run 16 or 32 blocks per call. They also
//! offer in-place CBC directly ([`Aes128::cbc_encrypt`], [`Aes128::cbc_decrypt`]), with
//! CBC decryption spread over the full vector width.
//!
//! Unlike the `aes` crate, which checks the CPU on every call, the back end is chosen
//! when the key is made.

use crate::{Backend, Error};
use cipher::{
    AlgorithmName, BlockCipherDecClosure, BlockCipherDecrypt, BlockCipherEncClosure,
    BlockCipherEncrypt, BlockSizeUser, Key, KeyInit, KeySizeUser,
    consts::{U16, U24, U32},
};
use core::fmt;

#[cfg(target_arch = "x86_64")]
use crate::x86_64::{
    AesNiToken, RoundKeys, Vaes256Token, Vaes512Token, aes_ni, block_cipher as bc,
};

/// The key schedules (encryption and decryption) and the back end they run on.
#[derive(Clone)]
enum Engine<P> {
    #[cfg(target_arch = "x86_64")]
    Vaes512(Box2, Vaes512Token),
    #[cfg(target_arch = "x86_64")]
    Vaes256(Box2, Vaes256Token),
    #[cfg(target_arch = "x86_64")]
    AesNi(Box2, AesNiToken),
    Portable(P),
}

/// Encryption and decryption round keys.
#[cfg(target_arch = "x86_64")]
#[derive(Clone)]
struct Box2 {
    enc: RoundKeys,
    dec: RoundKeys,
}

#[cfg(all(target_arch = "x86_64", feature = "zeroize"))]
impl Drop for Box2 {
    fn drop(&mut self) {
        // The whole struct, padding included (stale stack bytes, possibly key material;
        // see `HwKey`'s drop).
        // SAFETY: `Box2` is plain data (vectors and `usize`s, no pointers, no fields with
        // `Drop`), for which all-zero bytes are a valid value.
        unsafe { zeroize::zeroize_flat_type(self) };
    }
}

#[cfg(target_arch = "x86_64")]
fn schedules(key: &[u8], _t: AesNiToken) -> Box2 {
    // SAFETY: the token proves AES-NI and SSSE3.
    unsafe { schedules_impl(key) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,ssse3")]
fn schedules_impl(key: &[u8]) -> Box2 {
    let enc = aes_ni::expand_key(key);
    Box2 {
        dec: aes_ni::decrypt_keys(&enc),
        enc,
    }
}

macro_rules! aes_type {
    ($name:ident, $portable:ty, $key_size:ty, $bits:literal) => {
        #[doc = concat!("AES-", $bits, " on the back end chosen when the key is made.")]
        #[derive(Clone)]
        pub struct $name {
            engine: Engine<$portable>,
        }

        impl $name {
            /// A cipher on a chosen back end, or [`Error::BackendUnavailable`].
            pub fn new_with_backend(key: &Key<Self>, backend: Backend) -> Result<Self, Error> {
                let key: &[u8] = key.as_slice();
                let engine = match backend {
                    #[cfg(target_arch = "x86_64")]
                    Backend::Vaes512 => {
                        let t = Vaes512Token::new().ok_or(Error::BackendUnavailable)?;
                        Engine::Vaes512(schedules(key, t.aesni()), t)
                    }
                    #[cfg(target_arch = "x86_64")]
                    Backend::Vaes256 => {
                        let t = Vaes256Token::new().ok_or(Error::BackendUnavailable)?;
                        Engine::Vaes256(schedules(key, t.aesni()), t)
                    }
                    #[cfg(target_arch = "x86_64")]
                    Backend::AesNi => {
                        let t = AesNiToken::new().ok_or(Error::BackendUnavailable)?;
                        Engine::AesNi(schedules(key, t), t)
                    }
                    Backend::Portable => Engine::Portable(
                        crate::portable::rustcrypto_aes::<$portable>(key)
                            .map_err(|_| Error::InvalidKeyLength)?,
                    ),
                    #[allow(unreachable_patterns)]
                    _ => return Err(Error::BackendUnavailable),
                };
                Ok(Self { engine })
            }

            /// Moves the encryption schedule into a GCM engine on the same back end.
            pub(crate) fn into_gcm_engine(self) -> crate::gcm::Engine {
                match self.engine {
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes512(k, t) => crate::gcm::Engine::vaes512(k.enc.clone(), t),
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes256(k, t) => crate::gcm::Engine::vaes256(k.enc.clone(), t),
                    #[cfg(target_arch = "x86_64")]
                    Engine::AesNi(k, t) => crate::gcm::Engine::aesni(k.enc.clone(), t),
                    Engine::Portable(c) => crate::gcm::Engine::portable(c.into()),
                }
            }

            /// The back end this cipher runs on.
            pub fn backend(&self) -> Backend {
                match self.engine {
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes512(..) => Backend::Vaes512,
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes256(..) => Backend::Vaes256,
                    #[cfg(target_arch = "x86_64")]
                    Engine::AesNi(..) => Backend::AesNi,
                    Engine::Portable(_) => Backend::Portable,
                }
            }

            /// The encryption round keys (`rounds + 1` of them), if this cipher runs on a
            /// hardware back end, which also proves that the CPU has AES-NI: for kernels
            /// outside this crate that interleave a serial AES chain with other work
            /// (tls-cbc-aead hides CBC encryption in its SHA-384 rounds). Not a stable API.
            #[doc(hidden)]
            #[cfg(target_arch = "x86_64")]
            pub fn aesni_round_keys(&self) -> Option<&[core::arch::x86_64::__m128i]> {
                match &self.engine {
                    Engine::Vaes512(k, _) | Engine::Vaes256(k, _) | Engine::AesNi(k, _) => {
                        Some(&k.enc.rk[..=k.enc.rounds])
                    }
                    Engine::Portable(_) => None,
                }
            }

            /// CBC-encrypts whole blocks in place, chaining from `iv`; on return `iv` holds
            /// the last ciphertext block (the chaining value for what follows).
            pub fn cbc_encrypt(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
                match &self.engine {
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes512(k, t) => bc_cbc_encrypt(&k.enc, t.aesni(), iv, blocks),
                    #[cfg(target_arch = "x86_64")]
                    Engine::Vaes256(k, t) => bc_cbc_encrypt(&k.enc, t.aesni(), iv, blocks),
                    #[cfg(target_arch = "x86_64")]
                    Engine::AesNi(k, t) => bc_cbc_encrypt(&k.enc, *t, iv, blocks),
                    Engine::Portable(c) => portable_cbc_encrypt(c, iv, blocks),
                }
            }

            /// CBC-decrypts whole blocks in place, chaining from `iv`; on return `iv` holds
            /// the last ciphertext block. Blocks are decrypted in parallel.
            pub fn cbc_decrypt(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
                match &self.engine {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the token proves VAES and AVX-512.
                    Engine::Vaes512(k, t) => unsafe {
                        bc::cbc_decrypt_vaes512(&k.dec, *t, iv, blocks)
                    },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the token proves VAES, AVX2 and AES-NI.
                    Engine::Vaes256(k, t) => unsafe {
                        bc::cbc_decrypt_vaes256(&k.dec, *t, iv, blocks)
                    },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the token proves AES-NI.
                    Engine::AesNi(k, t) => unsafe { bc::cbc_decrypt_ni(&k.dec, *t, iv, blocks) },
                    Engine::Portable(c) => portable_cbc_decrypt(c, iv, blocks),
                }
            }
        }

        impl KeySizeUser for $name {
            type KeySize = $key_size;
        }

        impl KeyInit for $name {
            fn new(key: &Key<Self>) -> Self {
                Self::new_with_backend(key, Backend::detect())
                    .or_else(|_| Self::new_with_backend(key, Backend::Portable))
                    .expect("the portable back end is always available")
            }
        }

        impl BlockSizeUser for $name {
            type BlockSize = U16;
        }

        impl BlockCipherEncrypt for $name {
            fn encrypt_with_backend(&self, f: impl BlockCipherEncClosure<BlockSize = U16>) {
                match &self.engine {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the token proves the features of the entry point.
                    Engine::Vaes512(k, t) => unsafe { bc::enc_vaes512(&k.enc, *t, f) },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Engine::Vaes256(k, t) => unsafe { bc::enc_vaes256(&k.enc, *t, f) },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Engine::AesNi(k, t) => unsafe { bc::enc_ni(&k.enc, *t, f) },
                    Engine::Portable(c) => c.encrypt_with_backend(f),
                }
            }
        }

        impl BlockCipherDecrypt for $name {
            fn decrypt_with_backend(&self, f: impl BlockCipherDecClosure<BlockSize = U16>) {
                match &self.engine {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the token proves the features of the entry point.
                    Engine::Vaes512(k, t) => unsafe { bc::dec_vaes512(&k.dec, *t, f) },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Engine::Vaes256(k, t) => unsafe { bc::dec_vaes256(&k.dec, *t, f) },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Engine::AesNi(k, t) => unsafe { bc::dec_ni(&k.dec, *t, f) },
                    Engine::Portable(c) => c.decrypt_with_backend(f),
                }
            }
        }

        impl AlgorithmName for $name {
            fn write_alg_name(f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!("AES-", $bits))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("backend", &self.backend())
                    .finish_non_exhaustive()
            }
        }

        #[cfg(feature = "zeroize")]
        impl zeroize::ZeroizeOnDrop for $name {}
    };
}

aes_type!(Aes128, aes::Aes128, U16, "128");
aes_type!(Aes192, aes::Aes192, U24, "192");
aes_type!(Aes256, aes::Aes256, U32, "256");

#[cfg(target_arch = "x86_64")]
fn bc_cbc_encrypt(k: &RoundKeys, t: AesNiToken, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
    // SAFETY: the token proves AES-NI.
    unsafe { bc::cbc_encrypt(k, t, iv, blocks) }
}

fn portable_cbc_encrypt<C: BlockCipherEncrypt<BlockSize = U16>>(
    c: &C,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    for b in blocks.iter_mut() {
        for (x, v) in b.iter_mut().zip(iv.iter()) {
            *x ^= v;
        }
        c.encrypt_block(b.into());
        *iv = *b;
    }
}

fn portable_cbc_decrypt<C: BlockCipherDecrypt<BlockSize = U16>>(
    c: &C,
    iv: &mut [u8; 16],
    blocks: &mut [[u8; 16]],
) {
    const N: usize = 8;
    for chunk in blocks.chunks_mut(N) {
        let mut saved = [[0u8; 16]; N];
        saved[..chunk.len()].copy_from_slice(chunk);
        c.decrypt_blocks(cipher::Array::cast_slice_from_core_mut(chunk));
        for (i, b) in chunk.iter_mut().enumerate() {
            let prev = if i == 0 { *iv } else { saved[i - 1] };
            for (x, v) in b.iter_mut().zip(prev.iter()) {
                *x ^= v;
            }
        }
        *iv = saved[chunk.len() - 1];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::Array;

    /// A tiny deterministic byte generator for test inputs.
    fn bytes(seed: &mut u64, n: usize) -> [u8; 64] {
        let mut out = [0u8; 64];
        for b in out.iter_mut().take(n) {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (*seed >> 56) as u8;
        }
        out
    }

    macro_rules! against_aes_crate {
        ($test:ident, $ours:ty, $theirs:ty, $klen:literal) => {
            #[test]
            fn $test() {
                let mut seed = $klen;
                for backend in Backend::available() {
                    let key = Array::try_from(&bytes(&mut seed, $klen)[..$klen]).unwrap();
                    let ours = <$ours>::new_with_backend(&key, backend).unwrap();
                    assert_eq!(ours.backend(), backend);
                    let theirs = <$theirs as KeyInit>::new(&key);
                    // Block counts that cover single blocks, every parallel width and tails
                    // (under Miri, which is slow, one of each kind: CBC decryption's tails
                    // run in 1, 2, 4 or 8 lanes).
                    let few = |n: &usize| matches!(n, 0 | 1 | 2 | 3 | 7 | 8 | 9 | 16 | 17 | 33);
                    for n in (0..80usize).filter(|n| !cfg!(miri) || few(n)) {
                        let mut blocks: [[u8; 16]; 80] = [[0; 16]; 80];
                        for b in blocks.iter_mut().take(n) {
                            b.copy_from_slice(&bytes(&mut seed, 16)[..16]);
                        }
                        let plain = blocks;
                        let mut a = Array::cast_slice_from_core(&blocks[..n]).to_vec();
                        let mut b = a.clone();
                        ours.encrypt_blocks(&mut a);
                        theirs.encrypt_blocks(&mut b);
                        assert_eq!(a, b, "{backend:?} encrypt {n} blocks");
                        ours.decrypt_blocks(&mut a);
                        assert_eq!(
                            a.as_slice(),
                            Array::cast_slice_from_core(&plain[..n]),
                            "{backend:?} decrypt"
                        );

                        // CBC against the block cipher by hand.
                        let iv0: [u8; 16] = bytes(&mut seed, 16)[..16].try_into().unwrap();
                        let mut expect = plain;
                        let mut chain = iv0;
                        for blk in expect.iter_mut().take(n) {
                            for (x, c) in blk.iter_mut().zip(chain) {
                                *x ^= c;
                            }
                            theirs.encrypt_block(blk.into());
                            chain = *blk;
                        }
                        let mut iv = iv0;
                        ours.cbc_encrypt(&mut iv, &mut blocks[..n]);
                        assert_eq!(blocks[..n], expect[..n], "{backend:?} cbc_encrypt {n}");
                        assert_eq!(iv, chain);
                        let mut iv = iv0;
                        ours.cbc_decrypt(&mut iv, &mut blocks[..n]);
                        assert_eq!(blocks[..n], plain[..n], "{backend:?} cbc_decrypt {n}");
                        assert_eq!(iv, chain);
                    }
                }
            }
        };
    }

    against_aes_crate!(aes128_matches_aes_crate, Aes128, aes::Aes128, 16);
    against_aes_crate!(aes192_matches_aes_crate, Aes192, aes::Aes192, 24);
    against_aes_crate!(aes256_matches_aes_crate, Aes256, aes::Aes256, 32);

    #[test]
    fn fips197_appendix_c1() {
        let key = Array::from(hex_literal::hex!("000102030405060708090a0b0c0d0e0f"));
        for backend in Backend::available() {
            let c = Aes128::new_with_backend(&key, backend).unwrap();
            let mut b = Array::from(hex_literal::hex!("00112233445566778899aabbccddeeff"));
            c.encrypt_block(&mut b);
            assert_eq!(
                b,
                Array::from(hex_literal::hex!("69c4e0d86a7b0430d8cdb78070b4c55a"))
            );
        }
    }
}

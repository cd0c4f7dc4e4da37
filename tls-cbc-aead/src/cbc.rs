//! CBC mode over the record ciphers, in place, with the chaining value kept by the caller.
//!
//! The explicit-IV suites load the chaining value from each record's IV; the implicit-IV
//! suites keep it between records. AES comes from gcm-core, whose CBC decryption runs
//! many blocks in parallel on the widest AES instructions the CPU has (encryption is
//! serial by nature). 3DES is our constant-time 3DES (`tdes.rs`): encryption block by block,
//! decryption in groups of blocks.

use gcm_core::{
    Backend,
    aes::{Aes128, Aes256},
};

/// A block cipher with in-place CBC over whole blocks.
pub(crate) trait CbcCipher {
    /// Bytes per block (16 for AES, 8 for 3DES).
    const BLOCK_LEN: usize;
    /// One block, used for the chaining value.
    type Block: Copy + Default + AsRef<[u8]> + AsMut<[u8]>;
    /// Encrypts `data` (a whole number of blocks); leaves the last ciphertext block in `iv`.
    fn cbc_encrypt(&self, iv: &mut Self::Block, data: &mut [u8]);
    /// Decrypts `data` (a whole number of blocks); leaves the last ciphertext block in `iv`.
    fn cbc_decrypt(&self, iv: &mut Self::Block, data: &mut [u8]);

    /// Whether seal can stitch this cipher into the hash (AES, on AES-NI back ends).
    const STITCHES: bool;

    /// A cipher on back end `backend`, if this CPU has it and the cipher runs on it.
    fn new_on(key: &[u8], backend: Backend) -> Option<Self>
    where
        Self: Sized;
    /// The back end this cipher runs on.
    fn backend(&self) -> Backend;
    /// The best back end this CPU has for the cipher.
    fn best_backend() -> Backend;
    /// Every back end this CPU has for the cipher.
    fn backends() -> impl Iterator<Item = Backend>;

    /// The AES encryption round keys for AES-NI instructions, if this is AES-128 or
    /// AES-256 on a hardware back end (which proves that the CPU has AES-NI): seal then
    /// runs the CBC chain inside the hash rounds (see `x86_64::stitch`).
    #[cfg(target_arch = "x86_64")]
    fn aesni_round_keys(&self) -> Option<crate::x86_64::stitch::AesKeys<'_>> {
        None
    }

    /// Which implementation runs the cipher (for the constant-time harness's report).
    fn engine_name(&self) -> &'static str;

    /// A chaining value from exactly one block of bytes (an IV).
    fn block_from(bytes: &[u8]) -> Self::Block {
        let mut block = Self::Block::default();
        block.as_mut().copy_from_slice(bytes);
        block
    }
}

macro_rules! cbc_via_gcm_core {
    ($ty:ty) => {
        impl CbcCipher for $ty {
            const BLOCK_LEN: usize = 16;
            const STITCHES: bool = true;
            type Block = [u8; 16];

            fn new_on(key: &[u8], backend: Backend) -> Option<Self> {
                <$ty>::new_with_backend(key.try_into().ok()?, backend).ok()
            }
            fn backend(&self) -> Backend {
                <$ty>::backend(self)
            }
            fn best_backend() -> Backend {
                // As `KeyInit::new`: the detected back end, which always builds.
                Backend::detect()
            }
            fn backends() -> impl Iterator<Item = Backend> {
                Backend::available()
            }
            #[cfg(target_arch = "x86_64")]
            fn aesni_round_keys(&self) -> Option<crate::x86_64::stitch::AesKeys<'_>> {
                crate::x86_64::stitch::AesKeys::new(<$ty>::aesni_round_keys(self)?)
            }

            #[inline]
            fn cbc_encrypt(&self, iv: &mut [u8; 16], data: &mut [u8]) {
                let (blocks, rest) = data.as_chunks_mut::<16>();
                debug_assert!(rest.is_empty());
                <$ty>::cbc_encrypt(self, iv, blocks);
            }
            #[inline]
            fn cbc_decrypt(&self, iv: &mut [u8; 16], data: &mut [u8]) {
                let (blocks, rest) = data.as_chunks_mut::<16>();
                debug_assert!(rest.is_empty());
                <$ty>::cbc_decrypt(self, iv, blocks);
            }
            fn engine_name(&self) -> &'static str {
                self.backend().name()
            }
        }
    };
}

cbc_via_gcm_core!(Aes128);
cbc_via_gcm_core!(Aes256);

#[cfg(feature = "des")]
impl CbcCipher for crate::tdes::TdesEde3 {
    const BLOCK_LEN: usize = 8;
    const STITCHES: bool = false;
    type Block = [u8; 8];

    fn new_on(key: &[u8], backend: Backend) -> Option<Self> {
        // Our own 3DES (its CBC kernels chosen by `TdesEde3::new`), not on an AES back
        // end.
        if backend != Backend::Portable {
            return None;
        }
        Some(Self::new(key.try_into().ok()?))
    }
    fn backend(&self) -> Backend {
        Backend::Portable
    }
    fn best_backend() -> Backend {
        Backend::Portable
    }
    fn backends() -> impl Iterator<Item = Backend> {
        [Backend::Portable].into_iter()
    }

    fn cbc_encrypt(&self, iv: &mut [u8; 8], data: &mut [u8]) {
        let (blocks, rest) = data.as_chunks_mut::<8>();
        debug_assert!(rest.is_empty());
        self.cbc_encrypt_blocks(iv, blocks);
    }

    fn engine_name(&self) -> &'static str {
        crate::tdes::TdesEde3::engine_name(self)
    }

    fn cbc_decrypt(&self, iv: &mut [u8; 8], data: &mut [u8]) {
        let (blocks, rest) = data.as_chunks_mut::<8>();
        debug_assert!(rest.is_empty());
        self.cbc_decrypt_blocks(iv, blocks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::{BlockCipherEncrypt, KeyInit};
    use std::{vec, vec::Vec};

    /// CBC encryption and decryption of 0 to 40 blocks against serial CBC encryption
    /// through `encrypt_block` alone.
    fn round_trip<C: CbcCipher>(c: &C, encrypt_block: impl Fn(&mut [u8])) {
        let n = C::BLOCK_LEN;
        let data: Vec<u8> = (0..n * 40).map(|i| (i * 5) as u8).collect();
        for blocks in 0..=40 {
            let mut buf = data[..blocks * n].to_vec();
            let mut iv = C::Block::default();
            iv.as_mut().fill(9);
            c.cbc_encrypt(&mut iv, &mut buf);
            let mut want = data[..blocks * n].to_vec();
            let mut chain = vec![9u8; n];
            for block in want.chunks_mut(n) {
                for (b, v) in block.iter_mut().zip(&chain) {
                    *b ^= v;
                }
                encrypt_block(block);
                chain.copy_from_slice(block);
            }
            assert_eq!(buf, want);
            let after_encrypt = iv;
            iv.as_mut().fill(9);
            c.cbc_decrypt(&mut iv, &mut buf);
            assert_eq!(buf, &data[..blocks * n]);
            assert_eq!(iv.as_ref(), after_encrypt.as_ref());
        }
    }

    #[test]
    fn aes_round_trips() {
        let aes128 = Aes128::new_from_slice(&[7u8; 16]).unwrap();
        round_trip(&aes128, |b| aes128.encrypt_block(b.try_into().unwrap()));
        let aes256 = Aes256::new_from_slice(&[8u8; 32]).unwrap();
        round_trip(&aes256, |b| aes256.encrypt_block(b.try_into().unwrap()));
    }

    #[cfg(feature = "des")]
    #[test]
    fn tdes_round_trips() {
        let tdes = crate::tdes::TdesEde3::new(&[1u8; 24]);
        round_trip(&tdes, |b| tdes.encrypt_block(b.try_into().unwrap()));
    }
}

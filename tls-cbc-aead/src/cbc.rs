//! CBC mode over the record ciphers, in place, with the chaining value kept by the caller.
//!
//! The explicit-IV suites load the chaining value from each record's IV; the implicit-IV
//! suites keep it between records. AES comes from gcm-core, whose CBC decryption runs
//! many blocks in parallel on the widest AES instructions the CPU has (encryption is
//! serial by nature). 3DES is a plain block-by-block loop over RustCrypto `des`.

use gcm_core::aes::{Aes128, Aes256};

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

    /// AES-256 encryption round keys usable with AES-NI instructions, if this is AES-256
    /// running on a hardware back end (which proves that the CPU has AES-NI): seal then
    /// hides the CBC chain in the SHA-384 rounds (see `stitch`).
    #[cfg(target_arch = "x86_64")]
    fn aes256_round_keys(&self) -> Option<&[core::arch::x86_64::__m128i; 15]> {
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
    ($ty:ty $(, $keys:item)?) => {
        impl CbcCipher for $ty {
            const BLOCK_LEN: usize = 16;
            type Block = [u8; 16];
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
            $($keys)?
        }
    };
}

cbc_via_gcm_core!(Aes128);
cbc_via_gcm_core!(
    Aes256,
    #[cfg(target_arch = "x86_64")]
    fn aes256_round_keys(&self) -> Option<&[core::arch::x86_64::__m128i; 15]> {
        self.aesni_round_keys()?.try_into().ok()
    }
);

#[cfg(feature = "des")]
impl CbcCipher for des::TdesEde3 {
    const BLOCK_LEN: usize = 8;
    type Block = [u8; 8];

    fn cbc_encrypt(&self, iv: &mut [u8; 8], data: &mut [u8]) {
        use cipher::BlockCipherEncrypt;
        let (blocks, rest) = data.as_chunks_mut::<8>();
        debug_assert!(rest.is_empty());
        for block in blocks {
            for (b, v) in block.iter_mut().zip(iv.iter()) {
                *b ^= v;
            }
            self.encrypt_block(block.into());
            *iv = *block;
        }
    }

    fn engine_name(&self) -> &'static str {
        "des crate"
    }

    fn cbc_decrypt(&self, iv: &mut [u8; 8], data: &mut [u8]) {
        use cipher::BlockCipherDecrypt;
        let (blocks, rest) = data.as_chunks_mut::<8>();
        debug_assert!(rest.is_empty());
        for block in blocks {
            let ciphertext = *block;
            self.decrypt_block(block.into());
            for (b, v) in block.iter_mut().zip(iv.iter()) {
                *b ^= v;
            }
            *iv = ciphertext;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::{BlockCipherEncrypt, KeyInit};
    use std::vec::Vec;

    /// Serial CBC encryption through the block function alone.
    fn reference_encrypt<C: BlockCipherEncrypt>(c: &C, iv: &[u8], data: &mut [u8], n: usize) {
        let mut chain = iv.to_vec();
        for block in data.chunks_mut(n) {
            for (b, v) in block.iter_mut().zip(&chain) {
                *b ^= v;
            }
            c.encrypt_block(block.try_into().unwrap());
            chain.copy_from_slice(block);
        }
    }

    fn round_trip<C: CbcCipher + BlockCipherEncrypt>(c: &C) {
        let n = C::BLOCK_LEN;
        let data: Vec<u8> = (0..n * 40).map(|i| (i * 5) as u8).collect();
        for blocks in 0..=40 {
            let mut buf = data[..blocks * n].to_vec();
            let mut iv = C::Block::default();
            iv.as_mut().fill(9);
            c.cbc_encrypt(&mut iv, &mut buf);
            let mut want = data[..blocks * n].to_vec();
            reference_encrypt(c, &[9u8; 16][..n], &mut want, n);
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
        round_trip(&Aes128::new_from_slice(&[7u8; 16]).unwrap());
        round_trip(&Aes256::new_from_slice(&[8u8; 32]).unwrap());
    }

    #[cfg(feature = "des")]
    #[test]
    fn tdes_round_trips() {
        round_trip(&des::TdesEde3::new_from_slice(&[1u8; 24]).unwrap());
    }
}

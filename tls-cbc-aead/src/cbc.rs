//! CBC mode over the record ciphers, in place, with the chaining value kept by the caller.
//!
//! The explicit-IV suites load the chaining value from each record's IV; the implicit-IV
//! suites keep it between records. The AES stand-in (RustCrypto `aes`, until gcm-core's
//! AES with its own CBC routines is on `main`) decrypts eight blocks per call so that its
//! parallel back ends are used; CBC encryption is serial by nature.

use aead::array::Array;
use cipher::{BlockCipherDecrypt, BlockCipherEncrypt, BlockSizeUser};

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
}

/// Blocks handed to the cipher per decryption call.
const DECRYPT_BATCH: usize = 8;

fn xor(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// Serial CBC encryption through the `cipher` traits.
fn encrypt_with<C: BlockCipherEncrypt>(cipher: &C, iv: &mut [u8], data: &mut [u8]) {
    let (blocks, rest) = Array::<u8, C::BlockSize>::slice_as_chunks_mut(data);
    debug_assert!(rest.is_empty());
    for block in blocks {
        xor(block, iv);
        cipher.encrypt_block(block);
        iv.copy_from_slice(block);
    }
}

/// CBC decryption through the `cipher` traits, [`DECRYPT_BATCH`] blocks at a time.
fn decrypt_with<C: BlockCipherDecrypt>(cipher: &C, iv: &mut [u8], data: &mut [u8]) {
    let n = C::BlockSize::USIZE;
    let mut saved = [0u8; DECRYPT_BATCH * 16];
    for chunk in data.chunks_mut(DECRYPT_BATCH * n) {
        let len = chunk.len();
        saved[..len].copy_from_slice(chunk);
        let (blocks, rest) = Array::<u8, C::BlockSize>::slice_as_chunks_mut(chunk);
        debug_assert!(rest.is_empty());
        cipher.decrypt_blocks(blocks);
        xor(&mut chunk[..n], iv);
        xor(&mut chunk[n..], &saved[..len - n]);
        iv.copy_from_slice(&saved[len - n..len]);
    }
}

use cipher::typenum::Unsigned;

macro_rules! cbc_via_cipher_traits {
    ($ty:ty, $n:literal) => {
        impl CbcCipher for $ty {
            const BLOCK_LEN: usize = $n;
            type Block = [u8; $n];
            #[inline]
            fn cbc_encrypt(&self, iv: &mut [u8; $n], data: &mut [u8]) {
                const { assert!(<$ty as BlockSizeUser>::BlockSize::USIZE == $n) };
                encrypt_with(self, iv, data);
            }
            #[inline]
            fn cbc_decrypt(&self, iv: &mut [u8; $n], data: &mut [u8]) {
                decrypt_with(self, iv, data);
            }
        }
    };
}

cbc_via_cipher_traits!(aes::Aes128, 16);
cbc_via_cipher_traits!(aes::Aes256, 16);
#[cfg(feature = "des")]
cbc_via_cipher_traits!(des::TdesEde3, 8);

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::KeyInit;
    use std::vec::Vec;

    #[test]
    fn decrypt_inverts_encrypt_across_batches() {
        let aes = aes::Aes128::new_from_slice(&[7u8; 16]).unwrap();
        let data: Vec<u8> = (0..16 * 21).map(|i| i as u8).collect();
        for blocks in 0..=21 {
            let mut buf = data[..blocks * 16].to_vec();
            let mut iv = [9u8; 16];
            aes.cbc_encrypt(&mut iv, &mut buf);
            let after_encrypt = iv;
            let mut iv = [9u8; 16];
            aes.cbc_decrypt(&mut iv, &mut buf);
            assert_eq!(buf, &data[..blocks * 16]);
            assert_eq!(iv, after_encrypt);
        }
    }
}

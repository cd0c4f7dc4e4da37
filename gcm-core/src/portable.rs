//! The portable back end: the RustCrypto `aes` and `ghash` crates, in two passes.
//!
//! It runs on any target and is the reference the fast kernels are tested against (the
//! `aes` crate's own fixsliced software AES is constant-time; so is `ghash`'s `polyval`).
//! It is not stitched: counter mode over up to 8 blocks at a time, then GHASH over the
//! ciphertext. `ghash::GHash` keeps its accumulator inside the keyed object, so each
//! message starts from a clone of the keyed hash; that clone is the one per-message copy
//! of key material in the crate, and only on this back end.

use crate::gcm::{inc32, lengths_block, xor16};
use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use inout::InOutBuf;
use universal_hash::UniversalHash;

/// One of the RustCrypto AES ciphers.
#[derive(Clone)]
pub(crate) enum AnyAes {
    A128(aes::Aes128),
    A192(aes::Aes192),
    A256(aes::Aes256),
}

impl AnyAes {
    fn encrypt_blocks(&self, blocks: &mut [aes::Block]) {
        match self {
            AnyAes::A128(c) => c.encrypt_blocks(blocks),
            AnyAes::A192(c) => c.encrypt_blocks(blocks),
            AnyAes::A256(c) => c.encrypt_blocks(blocks),
        }
    }
}

/// AES round keys and the keyed GHASH.
#[derive(Clone)]
pub(crate) struct Key {
    aes: AnyAes,
    ghash: ghash::GHash,
}

/// A RustCrypto AES cipher keyed with `key`, or an error if `key` has the wrong length.
///
/// Under MemorySanitizer (`cfg(ct_msan)`), the `aes` crate's AES-NI key schedule is run
/// through `ct::msan::opaque`: it uses AESKEYGENASSIST, which the sanitizer does not
/// model (it would report the key and return a clean schedule). Its software schedule,
/// on CPUs without AES-NI, is checked as it is.
pub(crate) fn rustcrypto_aes<C: KeyInit>(key: &[u8]) -> Result<C, cipher::InvalidLength> {
    if key.len() != C::key_size() {
        return Err(cipher::InvalidLength);
    }
    #[cfg(ct_msan)]
    if aes::hardware_accelerated() {
        let mut copy = [0u8; 32];
        copy[..key.len()].copy_from_slice(key);
        return Ok(crate::ct::msan::opaque(copy, |k| {
            C::new(&Array::try_from(&k[..C::key_size()]).expect("length checked above"))
        }));
    }
    Ok(C::new(&Array::try_from(key).expect("length checked above")))
}

/// Counter-mode blocks produced per AES call.
const CTR_BLOCKS: usize = 8;

impl Key {
    /// `key` must be 16, 24 or 32 bytes (checked by the caller).
    pub(crate) fn new(key: &[u8]) -> Self {
        Self::from_cipher(match key.len() {
            16 => AnyAes::A128(rustcrypto_aes(key).expect("16 bytes")),
            24 => AnyAes::A192(rustcrypto_aes(key).expect("24 bytes")),
            _ => AnyAes::A256(rustcrypto_aes(key).expect("32 bytes")),
        })
    }

    /// Keeps an existing cipher (its key schedule is not copied or redone).
    pub(crate) fn from_cipher(aes: AnyAes) -> Self {
        let mut h = [aes::Block::default()];
        aes.encrypt_blocks(&mut h);
        Self {
            ghash: ghash::GHash::new(&h[0]),
            aes,
        }
    }

    pub(crate) fn encrypt_block(&self, block: &[u8; 16]) -> [u8; 16] {
        let mut b = [aes::Block::from(*block)];
        self.aes.encrypt_blocks(&mut b);
        b[0].into()
    }

    /// GHASH from zero over each part, each zero-padded to whole blocks.
    pub(crate) fn ghash(&self, parts: &[&[u8]]) -> [u8; 16] {
        let mut g = self.ghash.clone();
        for p in parts {
            g.update_padded(p);
        }
        g.finalize().into()
    }

    /// XORs the keystream starting at counter block `ctr` into the buffer (32-bit counter).
    pub(crate) fn apply_ctr(&self, ctr: &[u8; 16], mut buf: InOutBuf<'_, '_, u8>) {
        let prefix: [u8; 12] = ctr[..12].try_into().expect("12 bytes");
        let mut counter = u32::from_be_bytes([ctr[12], ctr[13], ctr[14], ctr[15]]);
        let mut ks = [aes::Block::default(); CTR_BLOCKS];
        while !buf.is_empty() {
            let n = buf.len().min(16 * CTR_BLOCKS);
            let blocks = n.div_ceil(16);
            for b in &mut ks[..blocks] {
                b[..12].copy_from_slice(&prefix);
                b[12..].copy_from_slice(&counter.to_be_bytes());
                counter = counter.wrapping_add(1);
            }
            self.aes.encrypt_blocks(&mut ks[..blocks]);
            let (mut head, rest) = buf.split_at(n);
            let flat: &[u8] = Array::slice_as_flattened(&ks[..blocks]);
            head.xor_in2out(&flat[..n]);
            buf = rest;
        }
    }

    /// Encrypts in place or from `buf`'s input to its output; returns the full tag.
    pub(crate) fn seal(
        &self,
        j0: &[u8; 16],
        aad: &[u8],
        mut buf: InOutBuf<'_, '_, u8>,
    ) -> [u8; 16] {
        self.apply_ctr(&inc32(j0), buf.reborrow());
        let lens = lengths_block(aad.len(), buf.len());
        let s = self.ghash(&[aad, buf.get_out(), &lens]);
        xor16(s, self.encrypt_block(j0))
    }

    /// Hashes the ciphertext, then decrypts it; returns the full tag it should carry.
    pub(crate) fn open(&self, j0: &[u8; 16], aad: &[u8], buf: InOutBuf<'_, '_, u8>) -> [u8; 16] {
        let lens = lengths_block(aad.len(), buf.len());
        let s = self.ghash(&[aad, buf.get_in(), &lens]);
        self.apply_ctr(&inc32(j0), buf);
        xor16(s, self.encrypt_block(j0))
    }
}

impl From<aes::Aes128> for AnyAes {
    fn from(c: aes::Aes128) -> Self {
        AnyAes::A128(c)
    }
}

impl From<aes::Aes192> for AnyAes {
    fn from(c: aes::Aes192) -> Self {
        AnyAes::A192(c)
    }
}

impl From<aes::Aes256> for AnyAes {
    fn from(c: aes::Aes256) -> Self {
        AnyAes::A256(c)
    }
}

//! Shared test helpers: a small seeded PRNG and an independent TLS CBC record composition
//! built from RustCrypto `cbc`, `hmac`, `sha1`/`sha2`, `aes` and `des`.

#![allow(dead_code)]

use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit, block_padding::NoPadding};
use hmac::{KeyInit, Mac};

/// SplitMix64: small, seeded and good enough to pick test cases.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform enough in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cipher {
    Aes128,
    Aes256,
    Tdes,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hash {
    Sha1,
    Sha256,
    Sha384,
}

/// One suite described for the reference composition.
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    pub cipher: Cipher,
    pub hash: Hash,
}

impl Suite {
    pub fn mac_len(&self) -> usize {
        match self.hash {
            Hash::Sha1 => 20,
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
    pub fn enc_key_len(&self) -> usize {
        match self.cipher {
            Cipher::Aes128 => 16,
            Cipher::Aes256 => 32,
            Cipher::Tdes => 24,
        }
    }
    pub fn block_len(&self) -> usize {
        match self.cipher {
            Cipher::Tdes => 8,
            _ => 16,
        }
    }

    pub fn hmac(&self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = <M as KeyInit>::new_from_slice(key).unwrap();
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().to_vec()
        }
        match self.hash {
            Hash::Sha1 => run::<hmac::Hmac<sha1::Sha1>>(key, parts),
            Hash::Sha256 => run::<hmac::Hmac<sha2::Sha256>>(key, parts),
            Hash::Sha384 => run::<hmac::Hmac<sha2::Sha384>>(key, parts),
        }
    }

    pub fn cbc_encrypt(&self, key: &[u8], iv: &[u8], data: &[u8]) -> Vec<u8> {
        match self.cipher {
            Cipher::Aes128 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_vec::<NoPadding>(data),
            Cipher::Aes256 => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_vec::<NoPadding>(data),
            Cipher::Tdes => cbc::Encryptor::<des::TdesEde3>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_vec::<NoPadding>(data),
        }
    }

    pub fn cbc_decrypt(&self, key: &[u8], iv: &[u8], data: &[u8]) -> Vec<u8> {
        match self.cipher {
            Cipher::Aes128 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
                .unwrap()
                .decrypt_padded_vec::<NoPadding>(data),
            Cipher::Aes256 => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
                .unwrap()
                .decrypt_padded_vec::<NoPadding>(data),
            Cipher::Tdes => cbc::Decryptor::<des::TdesEde3>::new_from_slices(key, iv)
                .unwrap()
                .decrypt_padded_vec::<NoPadding>(data),
        }
        .unwrap()
    }

    /// `plaintext || MAC || padding` with `pad_len` bytes of padding (length byte included).
    pub fn encode(&self, mac_key: &[u8], ad: &[u8], pt: &[u8], pad_len: usize) -> Vec<u8> {
        assert!((1..=256).contains(&pad_len));
        let len = (pt.len() as u16).to_be_bytes();
        let mut out = pt.to_vec();
        out.extend(self.hmac(mac_key, &[ad, &len, pt]));
        out.extend(std::iter::repeat_n((pad_len - 1) as u8, pad_len));
        out
    }

    /// The minimal padding for a plaintext length.
    pub fn min_pad(&self, pt_len: usize) -> usize {
        self.block_len() - (pt_len + self.mac_len()) % self.block_len()
    }

    /// Splits a suite key into (mac key, cipher key).
    pub fn split_key<'a>(&self, key: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        let (m, rest) = key.split_at(self.mac_len());
        (m, &rest[..self.enc_key_len()])
    }

    /// The reference seal: HMAC, minimal padding, CBC.
    pub fn seal(&self, key: &[u8], iv: &[u8], ad: &[u8], pt: &[u8]) -> Vec<u8> {
        let (mk, ek) = self.split_key(key);
        self.cbc_encrypt(ek, iv, &self.encode(mk, ad, pt, self.min_pad(pt.len())))
    }

    /// The reference open, written the obvious (branching) way: the plaintext if the
    /// record is well formed, with any valid padding, and its MAC matches.
    pub fn open(&self, key: &[u8], iv: &[u8], ad: &[u8], record: &[u8]) -> Option<Vec<u8>> {
        let (mk, ek) = self.split_key(key);
        if ad.len() != 11 || record.is_empty() || !record.len().is_multiple_of(self.block_len()) {
            return None;
        }
        let dec = self.cbc_decrypt(ek, iv, record);
        let pad = *dec.last().unwrap() as usize + 1;
        if pad + self.mac_len() > dec.len() {
            return None;
        }
        let body = dec.len() - pad;
        if dec[body..].iter().any(|&b| b as usize != pad - 1) {
            return None;
        }
        let data = body - self.mac_len();
        let len = (data as u16).to_be_bytes();
        let mac = self.hmac(mk, &[ad, &len, &dec[..data]]);
        (mac == dec[data..body]).then(|| dec[..data].to_vec())
    }
}

/// Random 11-byte associated data shaped like a TLS one.
pub fn random_ad(rng: &mut Rng) -> Vec<u8> {
    let mut ad = rng.next_u64().to_be_bytes().to_vec();
    ad.extend([23, 3, 3]);
    ad[8] = [20u8, 21, 22, 23][rng.below(4)];
    ad[10] = rng.below(4) as u8;
    ad
}

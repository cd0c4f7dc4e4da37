//! The explicit-IV suites (TLS 1.1 and 1.2) as `aead` 0.6 AEADs.
//!
//! They are stateless: the nonce is the record's explicit CBC IV, which the caller sends in
//! clear in front of the record (it is not part of the output). The ciphertext grows by the
//! MAC and 1 to one block of padding, so there is no fixed-size tag: `TagSize` is `U0`,
//! the in-place methods grow and shrink the buffer, and the `*_detached` methods always
//! fail.

use aead::{
    AeadCore, AeadInOut, Buffer, Error, Key, Nonce, Result, Tag, TagPosition,
    consts::{U0, U16, U36, U48, U52, U64, U80},
    inout::InOutBuf,
};

use crate::{
    cbc::CbcCipher,
    digest::{HashAlg, Sha1, Sha256, Sha384},
    engine::{self, EngineUnavailable, Engines},
    hmac_key::HmacKey,
    record,
};

macro_rules! explicit_iv_suite {
    (
        $(#[$attr:meta])*
        $name:ident, $cipher:ty, $hash:ty, enc_key = $enc:literal, key = $key:ty, block = $block:ty
    ) => {
        $(#[$attr])*
        ///
        /// Key: `mac_key || enc_key`. Nonce: the record's explicit IV (one cipher block).
        /// Associated data: exactly the 11 bytes `seq_num || content_type || version`; the
        /// plaintext length is appended by the cipher. Plaintexts of 2^16 bytes or more are
        /// refused. `encrypt_in_place` appends the MAC and minimal padding and encrypts;
        /// `decrypt_in_place` accepts any valid TLS padding and returns one error for every
        /// kind of bad record, leaving the buffer empty. `TagSize` is `U0` because the tag
        /// length varies with the plaintext length; the `*_detached` methods always return
        /// an error.
        ///
        /// Seal and open allocate nothing themselves; seal grows the caller's buffer by
        /// [`Self::MAX_OVERHEAD`] bytes at most, so a buffer with that much spare capacity
        /// is never reallocated. (`Aead::encrypt` sizes its vector by `TagSize`, so it
        /// reallocates once.)
        #[derive(Clone)]
        pub struct $name {
            cipher: $cipher,
            mac: HmacKey<$hash>,
        }

        impl $name {
            /// Bytes of MAC (and of MAC key).
            pub const MAC_LEN: usize = <$hash as HashAlg>::OUTPUT_LEN;
            /// Bytes per cipher block (and of explicit IV).
            pub const BLOCK_LEN: usize = <$cipher as CbcCipher>::BLOCK_LEN;
            /// The most a record can exceed its plaintext: MAC plus a full block of padding.
            pub const MAX_OVERHEAD: usize = Self::MAC_LEN + Self::BLOCK_LEN;

            /// The length of the record that sealing `plaintext_len` bytes produces.
            pub const fn sealed_len(plaintext_len: usize) -> usize {
                let unpadded = plaintext_len + Self::MAC_LEN;
                unpadded + Self::BLOCK_LEN - unpadded % Self::BLOCK_LEN
            }

            /// A key on the engines given instead of the fastest ones (which
            /// `KeyInit::new` picks), or [`EngineUnavailable`] if this CPU cannot run
            /// them or they do not apply to this suite. Every choice seals and opens the
            /// same records.
            pub fn new_with_engines(
                key: &Key<Self>,
                engines: Engines,
            ) -> core::result::Result<Self, EngineUnavailable> {
                const {
                    assert!(<$key as aead::array::typenum::Unsigned>::USIZE
                        == <$hash as HashAlg>::OUTPUT_LEN + $enc)
                };
                let (mac_key, enc_key) = key.split_at(<$hash as HashAlg>::OUTPUT_LEN);
                let (cipher, mac) = engine::build(enc_key, mac_key, engines)?;
                Ok($name { cipher, mac })
            }
        }

        engine::suite_engine_api!($name, $cipher, $hash, $key);

        impl AeadCore for $name {
            type NonceSize = $block;
            type TagSize = U0;
            const TAG_POSITION: TagPosition = TagPosition::Postfix;
        }

        impl AeadInOut for $name {
            /// Always fails: the tag of these records has no fixed size.
            fn encrypt_inout_detached(
                &self,
                _nonce: &Nonce<Self>,
                _associated_data: &[u8],
                _buffer: InOutBuf<'_, '_, u8>,
            ) -> Result<Tag<Self>> {
                Err(Error)
            }

            /// Always fails: the tag of these records has no fixed size.
            fn decrypt_inout_detached(
                &self,
                _nonce: &Nonce<Self>,
                _associated_data: &[u8],
                _buffer: InOutBuf<'_, '_, u8>,
                _tag: &Tag<Self>,
            ) -> Result<()> {
                Err(Error)
            }

            fn encrypt_in_place(
                &self,
                nonce: &Nonce<Self>,
                associated_data: &[u8],
                buffer: &mut dyn Buffer,
            ) -> Result<()> {
                let mut iv = <$cipher as CbcCipher>::block_from(nonce);
                record::seal(&self.cipher, &self.mac, &mut iv, associated_data, buffer)
            }

            fn decrypt_in_place(
                &self,
                nonce: &Nonce<Self>,
                associated_data: &[u8],
                buffer: &mut dyn Buffer,
            ) -> Result<()> {
                let mut iv = <$cipher as CbcCipher>::block_from(nonce);
                record::open(&self.cipher, &self.mac, &mut iv, associated_data, buffer)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }

        #[cfg(feature = "zeroize")]
        impl zeroize::ZeroizeOnDrop for $name {}
    };
}

explicit_iv_suite!(
    /// TLS AES-128-CBC with HMAC-SHA1, explicit IV (e.g. `TLS_RSA_WITH_AES_128_CBC_SHA`).
    Aes128CbcSha1, gcm_core::aes::Aes128, Sha1, enc_key = 16, key = U36, block = U16
);
explicit_iv_suite!(
    /// TLS AES-256-CBC with HMAC-SHA1, explicit IV (e.g. `TLS_RSA_WITH_AES_256_CBC_SHA`).
    Aes256CbcSha1, gcm_core::aes::Aes256, Sha1, enc_key = 32, key = U52, block = U16
);
explicit_iv_suite!(
    /// TLS AES-128-CBC with HMAC-SHA256, explicit IV (e.g. `..._WITH_AES_128_CBC_SHA256`).
    Aes128CbcSha256, gcm_core::aes::Aes128, Sha256, enc_key = 16, key = U48, block = U16
);
explicit_iv_suite!(
    /// TLS AES-256-CBC with HMAC-SHA256, explicit IV (e.g. `..._WITH_AES_256_CBC_SHA256`).
    Aes256CbcSha256, gcm_core::aes::Aes256, Sha256, enc_key = 32, key = U64, block = U16
);
explicit_iv_suite!(
    /// TLS AES-256-CBC with HMAC-SHA384, explicit IV (e.g. `..._WITH_AES_256_CBC_SHA384`).
    Aes256CbcSha384, gcm_core::aes::Aes256, Sha384, enc_key = 32, key = U80, block = U16
);
#[cfg(feature = "des")]
explicit_iv_suite!(
    /// TLS 3DES-EDE-CBC with HMAC-SHA1, explicit IV (`..._WITH_3DES_EDE_CBC_SHA`).
    ///
    /// Constant time as the AES suites: the 3DES block cipher computes its S-boxes
    /// instead of looking them up (see `tdes.rs`), so no table is indexed by key or data.
    DesEde3CbcSha1, crate::tdes::TdesEde3, Sha1, enc_key = 24, key = aead::consts::U44,
    block = aead::consts::U8
);

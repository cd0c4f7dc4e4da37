//! The implicit-IV suites (SSL 3.0 and TLS 1.0): stateful, one instance per direction.
//!
//! The first record is chained from the IV at the end of the key block; each later record
//! from the last ciphertext block of the one before, so records must be sealed and opened
//! in order, each direction with its own instance. Opening a bad record still advances the
//! chain (a TLS connection is closed after one anyway).

use aead::{
    Buffer, Key, Result,
    consts::{U52, U68},
};

use crate::{
    cbc::CbcCipher,
    digest::{HashAlg, Sha1},
    engine::{self, EngineUnavailable, Engines},
    hmac_key::HmacKey,
    record,
};

macro_rules! implicit_iv_suite {
    (
        $(#[$attr:meta])*
        $name:ident, $cipher:ty, $hash:ty, enc_key = $enc:literal, key = $key:ty
    ) => {
        $(#[$attr])*
        ///
        /// Key: `mac_key || enc_key || iv`. Associated data: exactly the 11 bytes
        /// `seq_num || content_type || version`; the plaintext length is appended by the
        /// cipher. Plaintexts of 2^16 bytes or more are refused. Opening accepts any valid
        /// TLS padding and returns one error for every kind of bad record, leaving the
        /// buffer empty.
        #[derive(Clone)]
        pub struct $name {
            cipher: $cipher,
            mac: HmacKey<$hash>,
            iv: <$cipher as CbcCipher>::Block,
        }

        impl $name {
            /// Bytes of MAC (and of MAC key).
            pub const MAC_LEN: usize = <$hash as HashAlg>::OUTPUT_LEN;
            /// Bytes per cipher block (and of IV).
            pub const BLOCK_LEN: usize = <$cipher as CbcCipher>::BLOCK_LEN;
            /// The most a record can exceed its plaintext: MAC plus a full block of padding.
            pub const MAX_OVERHEAD: usize = Self::MAC_LEN + Self::BLOCK_LEN;

            /// Appends MAC and padding to the plaintext in `buffer` and encrypts it,
            /// chaining from the previous record sealed by this instance.
            pub fn seal_in_place(&mut self, ad: &[u8], buffer: &mut dyn Buffer) -> Result<()> {
                record::seal(&self.cipher, &self.mac, &mut self.iv, ad, buffer)
            }

            /// Decrypts and authenticates the record in `buffer`, chaining from the previous
            /// record opened by this instance. On failure `buffer` is left empty.
            pub fn open_in_place(&mut self, ad: &[u8], buffer: &mut dyn Buffer) -> Result<()> {
                record::open(&self.cipher, &self.mac, &mut self.iv, ad, buffer)
            }

            /// The current chaining value: the IV the next record will use.
            pub fn iv(&self) -> &[u8] {
                &self.iv
            }

            /// A key on the engines given instead of the fastest ones (which
            /// `KeyInit::new` picks), or [`EngineUnavailable`] if this CPU cannot run
            /// them or they do not apply to this suite. Every choice seals and opens the
            /// same records.
            pub fn new_with_engines(
                key: &Key<Self>,
                engines: Engines,
            ) -> core::result::Result<Self, EngineUnavailable> {
                const MAC: usize = <$hash as HashAlg>::OUTPUT_LEN;
                const {
                    assert!(<$key as aead::array::typenum::Unsigned>::USIZE
                        == MAC + $enc + <$cipher as CbcCipher>::BLOCK_LEN)
                };
                let (cipher, mac) =
                    engine::build(&key[MAC..MAC + $enc], &key[..MAC], engines)?;
                Ok($name {
                    cipher,
                    mac,
                    iv: <$cipher as CbcCipher>::block_from(&key[MAC + $enc..]),
                })
            }
        }

        engine::suite_engine_api!($name, $cipher, $hash, $key);

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }

        #[cfg(feature = "zeroize")]
        impl Drop for $name {
            fn drop(&mut self) {
                zeroize::Zeroize::zeroize(&mut self.iv);
            }
        }

        #[cfg(feature = "zeroize")]
        impl zeroize::ZeroizeOnDrop for $name {}
    };
}

implicit_iv_suite!(
    /// TLS 1.0 AES-128-CBC with HMAC-SHA1, implicit IV.
    Aes128CbcSha1ImplicitIv, gcm_core::aes::Aes128, Sha1, enc_key = 16, key = U52
);
implicit_iv_suite!(
    /// TLS 1.0 AES-256-CBC with HMAC-SHA1, implicit IV.
    Aes256CbcSha1ImplicitIv, gcm_core::aes::Aes256, Sha1, enc_key = 32, key = U68
);
#[cfg(feature = "des")]
implicit_iv_suite!(
    /// SSL 3.0 / TLS 1.0 3DES-EDE-CBC with HMAC-SHA1, implicit IV.
    ///
    /// Constant time as the AES suites: the 3DES block cipher computes its S-boxes
    /// instead of looking them up (see `tdes.rs`), so no table is indexed by key or data.
    DesEde3CbcSha1ImplicitIv, crate::tdes::TdesEde3, Sha1, enc_key = 24, key = U52
);

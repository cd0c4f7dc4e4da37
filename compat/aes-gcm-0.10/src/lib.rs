//! RustCrypto [`aes-gcm`] 0.10.3's public surface over [`aes_gcm_vaes`]: the same items,
//! type parameters, trait bounds and features, on `aead` 0.5 and `cipher` 0.4. It exists
//! to be patched in with `[patch.crates-io]`, so that every crate of a dependency tree
//! that uses `aes-gcm` 0.10 runs on `aes-gcm-vaes`'s kernels without a change to its
//! source.
//!
//! [`AesGcm`] wraps `aes_gcm_vaes::AesGcm<Cipher04<Aes>, ..>`: keys for the `aes` 0.8 AES
//! types (`Aes128`, `Aes192`, `Aes256` and their `Enc` halves) run on the stitched
//! VAES/AES-NI kernels, any other `cipher` 0.4 block cipher with 16-byte blocks on the
//! generic path (its own block function, our GHASH). Beyond `aes-gcm`, it answers
//! [`AesGcm::engine`] and [`AesGcm::backend`], which tell what a key runs on.
//!
//! Differences from `aes-gcm` 0.10.3, all of them refusals of inputs that NIST SP 800-38D
//! or Wycheproof call invalid: messages longer than 2^36 - 32 bytes (where 0.10.3 allows
//! 2^36, whose last blocks reuse the keystream that masks the tag) and empty nonces
//! (`AesGcm<_, U0>`) are errors.
//!
//! [`aes-gcm`]: https://docs.rs/aes-gcm/0.10.3
#![no_std]
#![forbid(unsafe_code)]

pub use aead::{self, AeadCore, AeadInPlace, Error, Key, KeyInit, KeySizeUser};

#[cfg(feature = "aes")]
pub use aes;

use aead::{
    consts::{U0, U16},
    generic_array::{ArrayLength, GenericArray},
};
use aes_gcm_vaes::{Backend, Cipher04, Engine};
use cipher::{BlockCipher, BlockEncrypt, BlockSizeUser};
use core::fmt;

#[cfg(feature = "aes")]
use aead::consts::U12;

/// Maximum length of associated data.
pub const A_MAX: u64 = 1 << 36;

/// Maximum length of plaintext (as `aes-gcm` 0.10.3 states it; this crate refuses
/// messages longer than 2^36 - 32 bytes, the standard's limit).
pub const P_MAX: u64 = 1 << 36;

/// Maximum length of ciphertext.
pub const C_MAX: u64 = (1 << 36) + 16;

/// AES-GCM nonces.
pub type Nonce<NonceSize> = GenericArray<u8, NonceSize>;

/// AES-GCM tags.
pub type Tag<TagSize = U16> = GenericArray<u8, TagSize>;

/// Trait implemented for valid tag sizes, i.e. `U12`, `U13`, `U14`, `U15` and `U16`.
pub trait TagSize: private::SealedTagSize {}

impl<T: private::SealedTagSize> TagSize for T {}

mod private {
    use aead::{consts, generic_array::ArrayLength};
    use cipher::Unsigned;

    pub trait SealedTagSize: ArrayLength<u8> + Unsigned + aes_gcm_vaes::TagSize {}

    impl SealedTagSize for consts::U12 {}
    impl SealedTagSize for consts::U13 {}
    impl SealedTagSize for consts::U14 {}
    impl SealedTagSize for consts::U15 {}
    impl SealedTagSize for consts::U16 {}
}

/// AES-GCM with a 128-bit key and 96-bit nonce.
#[cfg(feature = "aes")]
pub type Aes128Gcm = AesGcm<aes::Aes128, U12>;

/// AES-GCM with a 256-bit key and 96-bit nonce.
#[cfg(feature = "aes")]
pub type Aes256Gcm = AesGcm<aes::Aes256, U12>;

/// AES-GCM, generic over the block cipher (a `cipher` 0.4 one with 16-byte blocks), the
/// nonce size and the tag size, as in `aes-gcm` 0.10.
pub struct AesGcm<Aes, NonceSize, TagSize = U16>
where
    TagSize: self::TagSize,
{
    inner: aes_gcm_vaes::AesGcm<Cipher04<Aes>, NonceSize, TagSize>,
}

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: self::TagSize,
{
    /// Which code computes this key's GCM (not in `aes-gcm`): the AES kernels, or the
    /// generic path.
    pub fn engine(&self) -> Engine {
        self.inner.engine()
    }

    /// The back end of `gcm_core` this key runs on (not in `aes-gcm`).
    pub fn backend(&self) -> Backend {
        self.inner.backend()
    }
}

impl<Aes, NonceSize, TagSize> Clone for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: Clone,
    TagSize: self::TagSize,
{
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<Aes, NonceSize, TagSize> KeySizeUser for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: KeySizeUser,
    TagSize: self::TagSize,
{
    type KeySize = Aes::KeySize;
}

impl<Aes, NonceSize, TagSize> KeyInit for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockEncrypt + KeyInit,
    TagSize: self::TagSize,
{
    fn new(key: &Key<Self>) -> Self {
        Self {
            inner: KeyInit::new(key),
        }
    }
}

impl<Aes, NonceSize, TagSize> From<Aes> for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockEncrypt,
    TagSize: self::TagSize,
{
    fn from(cipher: Aes) -> Self {
        Self {
            inner: Cipher04(cipher).into(),
        }
    }
}

impl<Aes, NonceSize, TagSize> AeadCore for AesGcm<Aes, NonceSize, TagSize>
where
    NonceSize: ArrayLength<u8>,
    TagSize: self::TagSize,
{
    type NonceSize = NonceSize;
    type TagSize = TagSize;
    type CiphertextOverhead = U0;
}

impl<Aes, NonceSize, TagSize> AeadInPlace for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockCipher + BlockSizeUser<BlockSize = U16> + BlockEncrypt,
    NonceSize: ArrayLength<u8>,
    TagSize: self::TagSize,
{
    fn encrypt_in_place_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
    ) -> Result<Tag<TagSize>, Error> {
        if associated_data.len() as u64 > A_MAX {
            return Err(Error);
        }
        self.inner
            .encrypt_in_place_detached(nonce, associated_data, buffer)
    }

    fn decrypt_in_place_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
        tag: &Tag<TagSize>,
    ) -> Result<(), Error> {
        if associated_data.len() as u64 > A_MAX {
            return Err(Error);
        }
        self.inner
            .decrypt_in_place_detached(nonce, associated_data, buffer, tag)
    }
}

impl<Aes, NonceSize, TagSize> fmt::Debug for AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: self::TagSize,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesGcm")
            .field("engine", &self.engine())
            .finish_non_exhaustive()
    }
}

//! AES-GCM ([NIST SP 800-38D]) with stitched VAES/VPCLMULQDQ kernels on AVX-512 and AVX2,
//! an AES-NI kernel and a portable fallback, behind the public surface of RustCrypto's
//! [`aes-gcm`] 0.11: switching a program over is a change of one `use` line.
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use aes_gcm_vaes::{
//!     aead::{Aead, KeyInit},
//!     Aes256Gcm, Key, Nonce,
//! };
//!
//! let key = Key::<Aes256Gcm>::from([0x42; 32]);
//! let cipher = Aes256Gcm::new(&key);
//! let nonce = Nonce::from([7; 12]); // MUST be unique per message under one key
//! let ciphertext = cipher.encrypt(&nonce, b"plaintext message".as_ref()).unwrap();
//! let plaintext = cipher.decrypt(&nonce, ciphertext.as_ref()).unwrap();
//! assert_eq!(&plaintext, b"plaintext message");
//! # }
//! ```
//!
//! With the `getrandom` feature (on by default), keys and nonces come from the OS:
//!
#![cfg_attr(feature = "getrandom", doc = "```")]
#![cfg_attr(not(feature = "getrandom"), doc = "```ignore")]
//! use aes_gcm_vaes::{aead::{Aead, Generate, KeyInit}, Aes128Gcm, Key, Nonce};
//!
//! let cipher = Aes128Gcm::new(&Key::<Aes128Gcm>::generate());
//! let nonce = Nonce::generate();
//! let sealed = cipher.encrypt(&nonce, &b"random key"[..]).unwrap();
//! assert_eq!(cipher.decrypt(&nonce, sealed.as_ref()).unwrap(), b"random key");
//! ```
//!
//! In place, without `alloc`, into any [`aead::Buffer`] (`arrayvec::ArrayVec` with the
//! `arrayvec` feature, `bytes::BytesMut` with `bytes`), or with a detached tag:
//!
//! ```
//! use aes_gcm_vaes::{aead::{AeadInOut, KeyInit}, Aes128Gcm, Key, Nonce};
//!
//! let cipher = Aes128Gcm::new(&Key::<Aes128Gcm>::from([1; 16]));
//! let nonce = Nonce::from([2; 12]);
//! let mut record = *b"a TLS record, say";
//! let tag = cipher.encrypt_inout_detached(&nonce, b"header", (&mut record[..]).into()).unwrap();
//! cipher.decrypt_inout_detached(&nonce, b"header", (&mut record[..]).into(), &tag).unwrap();
//! assert_eq!(&record, b"a TLS record, say");
//! ```
//!
//! # Back ends
//!
//! The key is expanded, the powers of the hash key are computed and the best back end
//! for the CPU is chosen once, in `new`; see [`gcm_core`] for the kernels. Sealing and
//! opening then borrow the key immutably, allocate nothing and check nothing about the
//! CPU. [`AesGcm::new_with_backend`] pins a [`Backend`] and [`AesGcm::backend`] tells
//! which one a key uses.
//!
//! # Behaviour shared with `aes-gcm`
//!
//! - Nonces of any length from 1 byte (96 bits is the fast path; other lengths go
//!   through GHASH as the standard says); an empty nonce is an error.
//! - Tags of 12 to 16 bytes, and 4 or 8 with the `hazmat` feature.
//! - Messages longer than [`P_MAX`] or associated data longer than [`A_MAX`] are an error.
//! - A failed decryption releases no plaintext: an in-place buffer holds the ciphertext
//!   again, exactly as before the call, and a separate output buffer is zeroed.
//!
//! [NIST SP 800-38D]: https://csrc.nist.gov/publications/detail/sp/800-38d/final
//! [`aes-gcm`]: https://docs.rs/aes-gcm
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use aead::{self, AeadCore, AeadInOut, Error, Key, KeyInit, KeySizeUser};
pub use aes;
pub use gcm_core::{self, Backend};

#[cfg(feature = "aead05")]
mod aead05_compat;
#[cfg(feature = "rustls")]
pub mod rustls;

use aead::{
    TagPosition,
    array::{Array, ArraySize},
    consts::{U12, U16},
    inout::InOutBuf,
};
use core::{fmt, marker::PhantomData};
use gcm_core::GcmKey;

/// Longest associated data, in bytes: 2^61 - 1.
pub const A_MAX: u64 = gcm_core::A_MAX;

/// Longest message, in bytes: 2^36 - 32.
pub const P_MAX: u64 = gcm_core::P_MAX;

/// An AES-GCM nonce of `NonceSize` bytes.
pub type Nonce<NonceSize> = Array<u8, NonceSize>;

/// An AES-GCM tag of `TagSize` bytes.
pub type Tag<TagSize = U16> = Array<u8, TagSize>;

/// AES-GCM with a 128-bit key and a 96-bit nonce.
pub type Aes128Gcm = AesGcm<aes::Aes128, U12>;

/// AES-GCM with a 256-bit key and a 96-bit nonce.
pub type Aes256Gcm = AesGcm<aes::Aes256, U12>;

/// The tag sizes GCM allows: 12 to 16 bytes, and 4 or 8 bytes with the `hazmat` feature
/// (see NIST SP 800-38D Appendix C for the limits short tags need).
pub trait TagSize: private::SealedTagSize {}

impl<T: private::SealedTagSize> TagSize for T {}

/// The AES types that name a key size: `aes::Aes128`, `aes::Aes192`, `aes::Aes256`
/// and this workspace's `gcm_core::aes::Aes128`, `Aes192`, `Aes256`.
pub trait AesKeySize: KeySizeUser + private::SealedAes {}

impl<T: KeySizeUser + private::SealedAes> AesKeySize for T {}

mod private {
    use aead::{array::ArraySize, consts};

    pub trait SealedTagSize: ArraySize {}

    #[cfg(feature = "hazmat")]
    impl SealedTagSize for consts::U4 {}
    #[cfg(feature = "hazmat")]
    impl SealedTagSize for consts::U8 {}
    impl SealedTagSize for consts::U12 {}
    impl SealedTagSize for consts::U13 {}
    impl SealedTagSize for consts::U14 {}
    impl SealedTagSize for consts::U15 {}
    impl SealedTagSize for consts::U16 {}

    pub trait SealedAes {}

    impl SealedAes for aes::Aes128 {}
    impl SealedAes for aes::Aes192 {}
    impl SealedAes for aes::Aes256 {}
    impl SealedAes for gcm_core::aes::Aes128 {}
    impl SealedAes for gcm_core::aes::Aes192 {}
    impl SealedAes for gcm_core::aes::Aes256 {}
}

/// The type parameters, carried without owning values of those types (so `AesGcm` is
/// `Send + Sync` whatever they are).
type Sizes<Aes, NonceSize, TagSize> = PhantomData<fn() -> (Aes, NonceSize, TagSize)>;

/// AES-GCM, generic over the AES key size (named by an AES type), the nonce size and the
/// tag size.
///
/// `Aes` only selects the key size: the cipher itself always runs on `gcm_core`'s
/// kernels. Prefer the [`Aes128Gcm`] and [`Aes256Gcm`] aliases; other nonce sizes (e.g.
/// `AesGcm<aes::Aes128, U16>`) and tag sizes work as in `aes-gcm`.
pub struct AesGcm<Aes, NonceSize, TagSize = U16>
where
    TagSize: crate::TagSize,
{
    key: GcmKey,
    sizes: Sizes<Aes, NonceSize, TagSize>,
}

impl<Aes, NonceSize, TagSize> Clone for AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            sizes: PhantomData,
        }
    }
}

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    Aes: AesKeySize,
    TagSize: crate::TagSize,
{
    /// A key that runs on `backend`; an error if this CPU cannot run it.
    pub fn new_with_backend(key: &Key<Self>, backend: Backend) -> Result<Self, Error> {
        GcmKey::new_with_backend(key, backend)
            .map(Self::wrap)
            .map_err(|_| Error)
    }

    fn wrap(key: GcmKey) -> Self {
        Self {
            key,
            sizes: PhantomData,
        }
    }
}

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    /// The back end this key runs on.
    pub fn backend(&self) -> Backend {
        self.key.backend()
    }

    /// The underlying `gcm_core` key (round keys, hash-key powers, back end).
    pub fn gcm_key(&self) -> &GcmKey {
        &self.key
    }
}

impl<Aes, NonceSize, TagSize> KeySizeUser for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: AesKeySize,
    TagSize: crate::TagSize,
{
    type KeySize = Aes::KeySize;
}

impl<Aes, NonceSize, TagSize> KeyInit for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: AesKeySize,
    TagSize: crate::TagSize,
{
    fn new(key: &Key<Self>) -> Self {
        // The sealed `AesKeySize` admits only 16-, 24- and 32-byte keys, the lengths
        // `GcmKey::new` accepts, so this cannot fail.
        Self::wrap(GcmKey::new(key).expect("AES key sizes are 16, 24 or 32 bytes"))
    }
}

/// Takes over the cipher's key schedule without expanding the key again. From a
/// `gcm_core::aes` cipher the key keeps that cipher's back end; from an `aes` crate cipher,
/// whose round keys are private, it runs on the portable back end.
impl<Aes, NonceSize, TagSize> From<Aes> for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: AesKeySize + Into<GcmKey>,
    TagSize: crate::TagSize,
{
    fn from(cipher: Aes) -> Self {
        Self::wrap(cipher.into())
    }
}

impl<Aes, NonceSize, TagSize> AeadCore for AesGcm<Aes, NonceSize, TagSize>
where
    NonceSize: ArraySize,
    TagSize: crate::TagSize,
{
    type NonceSize = NonceSize;
    type TagSize = TagSize;
    const TAG_POSITION: TagPosition = TagPosition::Postfix;
}

impl<Aes, NonceSize, TagSize> AeadInOut for AesGcm<Aes, NonceSize, TagSize>
where
    NonceSize: ArraySize,
    TagSize: crate::TagSize,
{
    fn encrypt_inout_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
    ) -> aead::Result<Tag<TagSize>> {
        let full = self
            .key
            .seal_inout(nonce, associated_data, buffer)
            .map_err(|_| Error)?;
        Tag::<TagSize>::try_from(&full[..TagSize::USIZE]).map_err(|_| Error)
    }

    fn decrypt_inout_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
        tag: &Tag<TagSize>,
    ) -> aead::Result<()> {
        self.key
            .open_inout(nonce, associated_data, buffer, tag)
            .map_err(|_| Error)
    }
}

impl<Aes, NonceSize, TagSize> fmt::Debug for AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesGcm")
            .field("key_bits", &(self.key.key_len() * 8))
            .field("backend", &self.key.backend())
            .finish_non_exhaustive()
    }
}

/// With the `zeroize` feature, the round keys and hash-key powers are overwritten when
/// the key is dropped.
#[cfg(feature = "zeroize")]
impl<Aes, NonceSize, TagSize> zeroize::ZeroizeOnDrop for AesGcm<Aes, NonceSize, TagSize> where
    TagSize: crate::TagSize
{
}

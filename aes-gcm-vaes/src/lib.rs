//! AES-GCM ([NIST SP 800-38D]) with stitched VAES/VPCLMULQDQ kernels on AVX-512 and AVX2,
//! an AES-NI kernel and a portable fallback, behind the public surface of RustCrypto's
//! [`aes-gcm`] 0.11: switching a program over is a change of one `use` line, and the
//! facades under `compat/` switch a whole dependency tree with one `[patch]` line.
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
//! # Any 128-bit block cipher
//!
//! Like `aes-gcm`, [`AesGcm`] takes any `cipher` 0.5 block cipher with 16-byte blocks.
//! The AES types (`aes` 0.9 `Aes128`/`Aes192`/`Aes256` and `Aes128Enc`/`Aes192Enc`/
//! `Aes256Enc`, [`gcm_core::aes`]'s, and with `aead05` the `aes` 0.8 ones) are recognised
//! when the key is made and run on the kernels above; any other cipher (SM4, ARIA,
//! Camellia...) runs counter mode on its own block function and GHASH on `gcm_core`'s
//! engine. [`AesGcm::engine`] tells which.
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
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use aead::{self, AeadCore, AeadInOut, Error, Key, KeyInit, KeySizeUser};
pub use aes;
pub use gcm_core::{self, Backend};

#[cfg(feature = "aead05")]
mod aead05_compat;
#[allow(unsafe_code)] // a checked move out of a type parameter (`dispatch::take`)
mod dispatch;
mod generic;
#[cfg(feature = "rustls")]
pub mod rustls;

#[cfg(feature = "aead05")]
pub use aead05_compat::Cipher04;

use aead::{
    TagPosition,
    array::{Array, ArraySize},
    consts::{U12, U16},
    inout::InOutBuf,
};
use cipher::{BlockCipherEncrypt, BlockSizeUser};
use core::{fmt, marker::PhantomData, mem::ManuallyDrop};
use gcm_core::GcmKey;
use generic::GenericGcm;

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

/// The AES types, whose keys this crate expands itself: `aes::Aes128`, `Aes192`,
/// `Aes256`, `Aes128Enc`, `Aes192Enc`, `Aes256Enc` and this workspace's
/// `gcm_core::aes::Aes128`, `Aes192`, `Aes256`. Only these take
/// [`AesGcm::new_with_backend`].
pub trait AesKeySize:
    KeySizeUser + KeyInit + BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt + private::SealedAes
{
}

impl<T> AesKeySize for T where
    T: KeySizeUser
        + KeyInit
        + BlockSizeUser<BlockSize = U16>
        + BlockCipherEncrypt
        + private::SealedAes
{
}

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
    impl SealedAes for aes::Aes128Enc {}
    impl SealedAes for aes::Aes192Enc {}
    impl SealedAes for aes::Aes256Enc {}
    impl SealedAes for gcm_core::aes::Aes128 {}
    impl SealedAes for gcm_core::aes::Aes192 {}
    impl SealedAes for gcm_core::aes::Aes256 {}
}

/// The nonce and tag sizes, carried without owning values of those types.
type Sizes<NonceSize, TagSize> = PhantomData<fn() -> (NonceSize, TagSize)>;

/// AES-GCM (or GCM over another 128-bit block cipher), generic over the cipher, the nonce
/// size and the tag size, as in `aes-gcm`.
///
/// For the AES types `Aes` only names the key size: the cipher runs on `gcm_core`'s
/// kernels. Any other block cipher with 16-byte blocks takes the generic path (see the
/// crate documentation). Prefer the [`Aes128Gcm`] and [`Aes256Gcm`] aliases; other nonce
/// sizes (e.g. `AesGcm<aes::Aes128, U16>`) and tag sizes work as in `aes-gcm`.
pub struct AesGcm<Aes, NonceSize, TagSize = U16>
where
    TagSize: crate::TagSize,
{
    // Dropped by hand in `Drop`, so that the whole struct can be wiped afterwards.
    inner: ManuallyDrop<Inner<Aes>>,
    sizes: Sizes<NonceSize, TagSize>,
}

/// What a key runs on, fixed when it is made.
// The AES variant is the larger (round keys and hash-key powers inline); boxing it would
// need a heap this `no_std` crate does not assume, and a key is made once and borrowed.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Inner<C> {
    /// An AES key on `gcm_core`'s kernels.
    Aes(GcmKey),
    /// Any other cipher: its block function for CTR, `gcm_core`'s GHASH.
    Generic(GenericGcm<C>),
}

/// Which code computes a key's GCM: see [`AesGcm::engine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// `gcm_core`'s AES-GCM on this back end (AES and GHASH stitched on the hardware back
    /// ends): every key made from key bytes for an AES type.
    Aes(Backend),
    /// The cipher's own block function for counter mode and `gcm_core`'s GHASH on this
    /// back end: ciphers other than AES, and cipher values whose round keys this crate
    /// cannot take over.
    Generic(Backend),
}

impl<Aes, NonceSize, TagSize> Clone for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: Clone,
    TagSize: crate::TagSize,
{
    fn clone(&self) -> Self {
        Self::wrap(Inner::clone(&self.inner))
    }
}

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    Aes: AesKeySize,
    TagSize: crate::TagSize,
{
    /// A key that runs on `backend`; an error if this CPU cannot run it.
    pub fn new_with_backend(key: &Key<Self>, backend: Backend) -> Result<Self, Error> {
        if !backend.is_available() {
            return Err(Error);
        }
        // Not through `GcmKey::new_with_backend`, whose `Result` cost two copies of the
        // key: see `GcmKey::new_or_portable`, which makes an available back end's key.
        Ok(Self::wrap(Inner::Aes(GcmKey::new_or_portable(
            key, backend,
        ))))
    }
}

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    fn wrap(inner: Inner<Aes>) -> Self {
        Self {
            inner: ManuallyDrop::new(inner),
            sizes: PhantomData,
        }
    }

    /// A key for an AES type from its raw bytes (16, 24 or 32 of them, which the AES
    /// types' key sizes guarantee), on the best back end.
    fn aes_from_key_bytes(key: &[u8]) -> Self {
        Self::wrap(Inner::Aes(GcmKey::new_or_portable(key, Backend::detect())))
    }

    /// The back end of `gcm_core` this key runs on: for AES all of GCM, for another
    /// cipher its GHASH half (see [`AesGcm::engine`]).
    pub fn backend(&self) -> Backend {
        match &*self.inner {
            Inner::Aes(key) => key.backend(),
            Inner::Generic(g) => g.ghash_backend(),
        }
    }

    /// Which code computes this key's GCM: the AES kernels, or the generic path.
    pub fn engine(&self) -> Engine {
        match &*self.inner {
            Inner::Aes(key) => Engine::Aes(key.backend()),
            Inner::Generic(g) => Engine::Generic(g.ghash_backend()),
        }
    }

    /// The underlying `gcm_core` key (round keys, hash-key powers, back end), if this key
    /// runs on the AES kernels.
    pub fn gcm_key(&self) -> Option<&GcmKey> {
        match &*self.inner {
            Inner::Aes(key) => Some(key),
            Inner::Generic(_) => None,
        }
    }
}

impl<Aes, NonceSize, TagSize> KeySizeUser for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: KeySizeUser,
    TagSize: crate::TagSize,
{
    type KeySize = Aes::KeySize;
}

impl<Aes, NonceSize, TagSize> KeyInit for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt + KeyInit,
    TagSize: crate::TagSize,
{
    fn new(key: &Key<Self>) -> Self {
        if dispatch::is_aes::<Aes>() {
            Self::aes_from_key_bytes(key)
        } else {
            Aes::new(key).into()
        }
    }
}

/// Takes over the cipher's key schedule without expanding the key again. From a
/// `gcm_core::aes` cipher the key keeps that cipher's back end; from `aes::Aes128`,
/// `Aes192` or `Aes256`, whose round keys are private, it runs on the portable back end;
/// any other cipher value (including `aes::Aes128Enc` and friends) takes the generic path.
/// Build from the raw key for the fast kernels.
impl<Aes, NonceSize, TagSize> From<Aes> for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
    TagSize: crate::TagSize,
{
    fn from(cipher: Aes) -> Self {
        Self::wrap(match dispatch::into_gcm_key(cipher) {
            Ok(key) => Inner::Aes(key),
            Err(cipher) => Inner::Generic(GenericGcm::new(cipher)),
        })
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

impl<Aes, NonceSize, TagSize> AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
    TagSize: crate::TagSize,
{
    /// Seals from the input of `buffer` to its output and returns the tag truncated to
    /// `TagSize`: the one body behind both `aead` generations' traits.
    fn seal(
        &self,
        nonce: &[u8],
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
    ) -> Result<Tag<TagSize>, Error> {
        // The generic path sits behind a call of its own (`#[inline(never)]` in
        // `generic`), so that its stack buffers do not weigh on the AES path's frame.
        let full = match &*self.inner {
            Inner::Aes(key) => key.seal_inout(nonce, associated_data, buffer),
            Inner::Generic(g) => return g.seal(nonce, associated_data, buffer).and_then(truncate),
        };
        full.map_err(|_| Error).and_then(truncate)
    }

    /// Opens from the input of `buffer` to its output if `tag` authenticates it.
    fn open(
        &self,
        nonce: &[u8],
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
        tag: &[u8],
    ) -> Result<(), Error> {
        match &*self.inner {
            Inner::Aes(key) => key
                .open_inout(nonce, associated_data, buffer, tag)
                .map_err(|_| Error),
            Inner::Generic(g) => g.open(nonce, associated_data, buffer, tag),
        }
    }
}

/// The first `T` bytes of a full tag.
fn truncate<T: TagSize>(full: [u8; 16]) -> Result<Tag<T>, Error> {
    Tag::<T>::try_from(&full[..T::USIZE]).map_err(|_| Error)
}

impl<Aes, NonceSize, TagSize> AeadInOut for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
    NonceSize: ArraySize,
    TagSize: crate::TagSize,
{
    fn encrypt_inout_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
    ) -> aead::Result<Tag<TagSize>> {
        self.seal(nonce, associated_data, buffer)
    }

    fn decrypt_inout_detached(
        &self,
        nonce: &Nonce<NonceSize>,
        associated_data: &[u8],
        buffer: InOutBuf<'_, '_, u8>,
        tag: &Tag<TagSize>,
    ) -> aead::Result<()> {
        self.open(nonce, associated_data, buffer, tag)
    }
}

impl<Aes, NonceSize, TagSize> fmt::Debug for AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("AesGcm");
        match &*self.inner {
            Inner::Aes(key) => d
                .field("key_bits", &(key.key_len() * 8))
                .field("backend", &key.backend()),
            Inner::Generic(_) => d.field("engine", &self.engine()),
        };
        d.finish_non_exhaustive()
    }
}

/// Drops the key; with the `zeroize` feature, then overwrites every byte it occupied.
///
/// The parts wipe themselves (round keys, hash-key powers, the cipher of the generic path
/// if it implements `ZeroizeOnDrop`), but the enum that holds them has bytes no part owns:
/// padding after its tag and, for the smaller variant, the rest of the larger one's room.
/// A key is built on the stack and moved, so those bytes can carry copies of key material
/// from where it was built.
#[allow(unsafe_code)]
impl<Aes, NonceSize, TagSize> Drop for AesGcm<Aes, NonceSize, TagSize>
where
    TagSize: crate::TagSize,
{
    fn drop(&mut self) {
        // SAFETY: `inner` is dropped here, once, and not used again: `AesGcm` has no other
        // path that drops it, and `self` is not read after this function.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        #[cfg(feature = "zeroize")]
        {
            let len = core::mem::size_of::<Self>();
            let start = (self as *mut Self).cast::<core::mem::MaybeUninit<u8>>();
            // SAFETY: the `len` bytes of `*self` are ours to write through this exclusive
            // borrow, and any bytes, padding included, are valid `MaybeUninit<u8>`s.
            // After this nothing reads them as an `AesGcm` (`inner` is gone, `sizes` is
            // zero-sized).
            let bytes = unsafe { core::slice::from_raw_parts_mut(start, len) };
            zeroize::Zeroize::zeroize(bytes);
        }
    }
}

/// With the `zeroize` feature, the round keys and hash-key powers (or the cipher, which
/// must wipe itself, and the GHASH key) are overwritten when the key is dropped, and so is
/// every other byte of the key (see `Drop`).
#[cfg(feature = "zeroize")]
impl<Aes, NonceSize, TagSize> zeroize::ZeroizeOnDrop for AesGcm<Aes, NonceSize, TagSize>
where
    Aes: zeroize::ZeroizeOnDrop,
    TagSize: crate::TagSize,
{
}

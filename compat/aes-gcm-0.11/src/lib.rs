//! RustCrypto [`aes-gcm`] 0.11.1's public surface over [`aes_gcm_vaes`]: the same items,
//! the same type parameters and bounds, the same features. It exists to be patched in
//! with `[patch.crates-io]`, so that every crate of a dependency tree that uses `aes-gcm`
//! 0.11 runs on `aes-gcm-vaes`'s kernels without a change to its source.
//!
//! [`AesGcm`] is `aes_gcm_vaes::AesGcm` itself: AES keys (`aes` 0.9 `Aes128`, `Aes192`,
//! `Aes256` and their `Enc` halves) run on the stitched VAES/AES-NI kernels, any other
//! block cipher with 16-byte blocks on the generic path (its own block function, our
//! GHASH). Beyond `aes-gcm`, it answers [`AesGcm::engine`] and [`AesGcm::backend`], which
//! tell what a key runs on.
//!
//! Differences from `aes-gcm` 0.11.1, all of them refusals of inputs the standard or
//! Wycheproof call invalid: an empty nonce (`AesGcm<_, U0>`) is an error where `aes-gcm`
//! computes a tag.
//!
//! [`aes-gcm`]: https://docs.rs/aes-gcm/0.11.1
#![no_std]
#![forbid(unsafe_code)]

pub use aead::{self, AeadCore, AeadInOut, Error, Key, KeyInit, KeySizeUser};

#[cfg(feature = "aes")]
pub use aes;

pub use aes_gcm_vaes::{A_MAX, AesGcm, Nonce, P_MAX, Tag, TagSize};

#[cfg(feature = "aes")]
pub use aes_gcm_vaes::{Aes128Gcm, Aes256Gcm};

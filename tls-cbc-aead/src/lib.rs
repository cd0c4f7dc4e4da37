//! TLS 1.0–1.2 CBC-then-HMAC record ciphers, with BoringSSL's semantics and a constant-time
//! open (the Lucky 13 countermeasures of BoringSSL's `tls_cbc.cc`, rewritten in Rust).
//!
//! A TLS CBC record is `CBC(plaintext || HMAC(ad || len16 || plaintext) || padding)`. This
//! crate offers it as an AEAD:
//!
//! * explicit IV (TLS 1.1/1.2), stateless, through the `aead` 0.6 traits:
//!   [`Aes128CbcSha1`], [`Aes256CbcSha1`], [`Aes128CbcSha256`], [`Aes256CbcSha256`],
//!   [`Aes256CbcSha384`] and, with feature `des`, `DesEde3CbcSha1`;
//! * implicit IV (SSL 3.0/TLS 1.0), one stateful instance per direction:
//!   [`Aes128CbcSha1ImplicitIv`], [`Aes256CbcSha1ImplicitIv`] and, with `des`,
//!   `DesEde3CbcSha1ImplicitIv`.
//!
//! The associated data is the 11 bytes `seq_num || content_type || version`; the cipher
//! appends the plaintext length itself. Opening reveals, through its timing and memory
//! accesses, only the record length, whether the record was accepted and, if so, the
//! plaintext length; sealing reveals only the lengths. That holds for 3DES too, which
//! runs on this crate's own constant-time 3DES (S-boxes computed, or with AVX-512 VBMI
//! permuted inside vector registers; never looked up in memory).
//!
//! ```
//! use tls_cbc_aead::{Aes128CbcSha256, aead::{AeadInOut, KeyInit, Nonce}};
//!
//! let key = [0x42u8; 48]; // mac_key (32) || enc_key (16), from the TLS key block
//! let cipher = Aes128CbcSha256::new_from_slice(&key).unwrap();
//! let iv = Nonce::<Aes128CbcSha256>::from([7u8; 16]); // sent in clear before the record
//! let ad = [0, 0, 0, 0, 0, 0, 0, 1, 23, 3, 3]; // seq_num || type || version
//!
//! let mut record = b"GET / HTTP/1.1\r\n".to_vec();
//! cipher.encrypt_in_place(&iv, &ad, &mut record).unwrap();
//! assert_eq!(record.len(), Aes128CbcSha256::sealed_len(16));
//!
//! cipher.decrypt_in_place(&iv, &ad, &mut record).unwrap();
//! assert_eq!(record, b"GET / HTTP/1.1\r\n");
//! ```
//!
//! Each key runs on the fastest engines this CPU has, chosen once when it is made: AES on
//! gcm-core's back ends; HMAC on this crate's SHA-NI SHA-1/SHA-256 (SHA-1's message
//! schedule in AVX-512VL on Intel's cores from Golden Cove on), on CPUs without SHA-NI
//! its AVX2 SHA-1/SHA-256 (the schedule on AVX-512VL where the CPU has it), and its
//! AVX-512VL or AVX2 SHA-512 for SHA-384, else on the
//! RustCrypto crates; and on x86_64 with AES-NI a
//! seal that runs the serial CBC encryption inside the hash rounds (`x86_64::stitch`).
//! 3DES is this crate's own (`tdes`): CBC decryption many blocks at a time on the
//! widest vectors the CPU has, CBC encryption on AVX-512 VBMI where it has that.
//! `new_with_engines` on each suite forces a choice ([`Engines`]); every choice seals
//! and opens the same records, and the tests run every choice the CPU has.
//!
//! Constant time is checked under valgrind memcheck by `tests/ct_valgrind.rs`, run through
//! `ct-check.sh`, on every engine choice valgrind's CPU model leaves: AES-NI and portable
//! AES, the RustCrypto hashes, the AVX2 SHA-1/SHA-256 engine and the AVX2 SHA-512 one,
//! plain and stitched. valgrind runs neither SHA-NI nor AVX-512. The workspace's
//! MemorySanitizer harness (`ct/`, run by `.ci/ct-msan.sh`) runs natively and checks
//! seal and open of every suite on every engine choice the CPU has: the SHA-NI
//! SHA-1/SHA-256, AVX-512VL SHA-1/SHA-256 and SHA-512 engines and every stitched seal
//! included.
//!
//! Features: `alloc` (default, `aead`'s `Vec` support), `std`, `des`, `zeroize`
//! (key-holding types become `ZeroizeOnDrop`) and `ct-check` (valgrind annotations, see
//! [`ct_check`]; the MemorySanitizer build uses them through `--cfg ct_msan` instead).
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "std", test))]
extern crate std;

mod cbc;
mod copy_mac;
mod ct;
pub mod ct_check;
mod digest;
mod engine;
mod explicit;
mod hmac_key;
mod implicit;
mod padding;
mod record;
#[cfg(feature = "des")]
mod tdes;
#[cfg(target_arch = "x86_64")]
mod x86_64;

pub use aead::{self, AeadCore, AeadInOut, Error, Key, KeyInit, KeySizeUser, Nonce};
pub use engine::{Backend, EngineUnavailable, Engines, HashEngine};
#[cfg(feature = "des")]
pub use explicit::DesEde3CbcSha1;
pub use explicit::{
    Aes128CbcSha1, Aes128CbcSha256, Aes256CbcSha1, Aes256CbcSha256, Aes256CbcSha384,
};
#[cfg(feature = "des")]
pub use implicit::DesEde3CbcSha1ImplicitIv;
pub use implicit::{Aes128CbcSha1ImplicitIv, Aes256CbcSha1ImplicitIv};
pub use record::{AD_LEN, MAX_PLAINTEXT_LEN};

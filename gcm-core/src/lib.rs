//! The AES-GCM engine: AES key schedules, the GHASH field arithmetic and the CPU-specific
//! kernels that run both, chosen once when a key is made.
//!
//! # Design
//!
//! A [`GcmKey`] owns everything that depends only on the key: the AES round keys, the
//! powers of the hash key `H` that the wide GHASH kernels multiply by, and the [`Backend`]
//! chosen for this CPU. It is built once and then used through `&self`: sealing and
//! opening allocate nothing, lock nothing and copy nothing of the key. The per-message
//! state (the counter, the GHASH accumulator, the lengths) lives on the stack of the call.
//!
//! The back ends, best first:
//!
//! | [`Backend`] | needs | bulk loop |
//! |---|---|---|
//! | `Vaes512` | VAES, VPCLMULQDQ, AVX-512 F/BW/VL | 16 blocks (4 × 512-bit) per iteration, AES-CTR and GHASH stitched, masked tails |
//! | `Vaes256` | VAES, VPCLMULQDQ, AVX2 | 16 blocks (8 × 256-bit) per iteration, stitched, Karatsuba multiplies |
//! | `AesNi` | AES-NI, PCLMULQDQ, SSSE3, SSE4.1 | 16 blocks (2 × 8 × 128-bit) per reduction, stitched; a one-reduction path for a few blocks |
//! | `Portable` | nothing | the RustCrypto `aes` and `ghash` crates, two passes |
//!
//! CPU features, vendor, family and model are read once per process (CPUID and XGETBV, so
//! that `no_std` builds detect too) and the choice is made once per key; the hot path only matches on the enum stored
//! in the key. [`GcmKey::new_with_backend`] pins a back end, which is how the tests run
//! every kernel this CPU has against every other.
//!
//! The modules [`aes`] and [`ghash`] expose the same machinery as drop-in replacements for
//! `aes::Aes128`/`Aes192`/`Aes256` (the `cipher` 0.5 block cipher traits) and
//! `ghash::GHash` (the `universal-hash` 0.6 trait).
//!
//! # Safety model
//!
//! `unsafe` is confined to `x86_64/` (raw loads and stores, and calls into
//! `#[target_feature]` kernels, each justified by a feature token stored in the key) and
//! to the CPUID probe in `cpu`. Everything else is safe code.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

#[allow(unsafe_code)] // the dispatch calls `#[target_feature]` entry points
pub mod aes;
mod backend;
mod cpu;
#[doc(hidden)]
pub mod ct;
mod error;
#[allow(unsafe_code)] // the dispatch calls `#[target_feature]` kernels
mod gcm;
#[allow(unsafe_code)] // the dispatch calls `#[target_feature]` kernels
pub mod ghash;
mod portable;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86_64;

pub use backend::Backend;
pub use error::Error;
pub use gcm::{A_MAX, GcmKey, P_MAX, TAG_LEN};
pub use inout::InOutBuf;

#[doc(hidden)]
pub use backend::{
    avoids_zmm as __avoids_zmm, select_for_cpu as __select_for_cpu,
    select_for_features as __select_for_features,
};
#[doc(hidden)]
pub use cpu::{Cpu as __Cpu, CpuFeatures as __CpuFeatures, Vendor as __Vendor};

/// The CPU this process runs on, as the back-end choice sees it (vendor, display family
/// and model, feature bits): for tools that report where a measurement came from.
#[doc(hidden)]
pub fn __this_cpu() -> cpu::Cpu {
    cpu::cpu()
}

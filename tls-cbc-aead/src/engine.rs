//! Which implementation a key runs, chosen once when the key is made: the AES back end
//! (gcm-core's), the hash compression of the HMAC, and whether seal stitches the CBC
//! chain into the hash.
//!
//! `KeyInit::new` picks the fastest this CPU has; `new_with_engines` on each suite forces
//! a choice, so that a test (or a benchmark) can run every implementation the CPU has,
//! not only the one it would pick.

use core::fmt;

pub use gcm_core::Backend;

use crate::{cbc::CbcCipher, digest::HashAlg, hmac_key::HmacKey};

/// The compression function a key's HMAC runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum HashEngine {
    /// The RustCrypto `sha1` / `sha2` crates' compression (which picks its own back end,
    /// SHA-NI or AVX2 among them, on each call). Runs anywhere.
    RustCrypto = 0,
    /// This crate's SHA-1 or SHA-256 on the SHA extensions (x86_64 with SHA-NI and
    /// SSE4.1). Seal can stitch AES-CBC into it.
    ShaNi,
    /// This crate's SHA-512 (for SHA-384) on AVX2 and BMI1/BMI2. Seal can stitch AES-CBC
    /// into it.
    Sha512Avx2,
    /// This crate's SHA-512 (for SHA-384) on AVX-512VL, AVX2 and BMI1/BMI2. Seal can
    /// stitch AES-CBC into it.
    Sha512Avx512,
}

impl HashEngine {
    /// Every engine, fastest first.
    pub const ALL: [HashEngine; 4] = [
        HashEngine::Sha512Avx512,
        HashEngine::Sha512Avx2,
        HashEngine::ShaNi,
        HashEngine::RustCrypto,
    ];

    /// A short lowercase name: `rustcrypto`, `sha-ni`, `sha512-avx2` or `sha512-avx512`.
    pub const fn name(self) -> &'static str {
        match self {
            HashEngine::RustCrypto => "rustcrypto",
            HashEngine::ShaNi => "sha-ni",
            HashEngine::Sha512Avx2 => "sha512-avx2",
            HashEngine::Sha512Avx512 => "sha512-avx512",
        }
    }
}

impl fmt::Display for HashEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The implementation choices of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Engines {
    /// The block cipher's back end. AES suites run on gcm-core's back ends; the 3DES
    /// suites only on [`Backend::Portable`] (RustCrypto `des`).
    pub cipher: Backend,
    /// The HMAC hash's compression function.
    pub hash: HashEngine,
    /// Whether seal runs the CBC encryption inside the hash rounds: needs an AES back end
    /// on AES-NI (any but `Portable`) and a hash engine that has a stitched seal.
    pub stitched_seal: bool,
}

impl fmt::Display for Engines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seal = if self.stitched_seal {
            "stitched"
        } else {
            "plain"
        };
        write!(f, "{}/{}/{seal}", self.cipher, self.hash)
    }
}

/// The error of `new_with_engines`: this CPU cannot run the engines asked for, or they do
/// not apply to the suite (a SHA-512 engine for a SHA-1 suite, a stitched seal without
/// AES-NI, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineUnavailable;

impl fmt::Display for EngineUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("engine not available for this suite on this CPU")
    }
}

impl core::error::Error for EngineUnavailable {}

/// How an engine's scalar rounds are written for this CPU's core, chosen with the engine
/// when a key is made. Only the SHA-512 engines have two builds (see
/// `x86_64::sha512::round!`); the others run the same code for either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoundTuning {
    /// The fewest operations a round, for cores whose integer ALUs bound the rounds:
    /// AMD's (Zen 3 and Zen 4 have four ALUs and rotate on two of them).
    FewestOps,
    /// The shortest chain of dependent steps a round, for cores with ALUs to spare:
    /// Intel's (five ALUs since Golden Cove), and any other vendor's.
    ShortChain,
}

impl RoundTuning {
    /// The tunings that give `engine` different code: both for the SHA-512 engines, one
    /// for the others (for the tests that run every build).
    #[cfg(test)]
    pub(crate) fn builds_of(engine: HashEngine) -> &'static [RoundTuning] {
        match engine {
            HashEngine::Sha512Avx2 | HashEngine::Sha512Avx512 => {
                &[RoundTuning::FewestOps, RoundTuning::ShortChain]
            }
            _ => &[RoundTuning::ShortChain],
        }
    }

    /// The tuning for the CPU this process runs on (or the other one, while the
    /// constant-time harness asks for it: `ct_check::swap_round_tuning`).
    pub(crate) fn for_this_cpu() -> Self {
        let tuning = Self::for_vendor(gcm_core::__this_cpu().vendor);
        match (tuning, crate::ct_check::round_tuning_swapped()) {
            (_, false) => tuning,
            (RoundTuning::FewestOps, true) => RoundTuning::ShortChain,
            (RoundTuning::ShortChain, true) => RoundTuning::FewestOps,
        }
    }

    /// The tuning for a CPU of `vendor`: by vendor, not by model, because every core
    /// measured of one vendor wants the same form (see `x86_64::sha512::round!`).
    pub(crate) fn for_vendor(vendor: gcm_core::__Vendor) -> Self {
        match vendor {
            gcm_core::__Vendor::Amd => RoundTuning::FewestOps,
            _ => RoundTuning::ShortChain,
        }
    }
}

/// The fastest engines this CPU has for cipher `C` and hash `H`.
pub(crate) fn best<C: CbcCipher, H: HashAlg>() -> Engines {
    let cipher = C::best_backend();
    let hash = H::best_engine();
    Engines {
        cipher,
        hash,
        stitched_seal: can_stitch::<C, H>(cipher, hash),
    }
}

/// Engines that run on every CPU.
pub(crate) fn portable() -> Engines {
    Engines {
        cipher: Backend::Portable,
        hash: HashEngine::RustCrypto,
        stitched_seal: false,
    }
}

/// Whether seal can stitch with these engines on this CPU.
fn can_stitch<C: CbcCipher, H: HashAlg>(cipher: Backend, hash: HashEngine) -> bool {
    C::STITCHES && cipher != Backend::Portable && H::stitches(hash)
}

/// Every combination of engines this CPU can run for `C` and `H`.
pub(crate) fn available<C: CbcCipher, H: HashAlg>() -> impl Iterator<Item = Engines> {
    C::backends().flat_map(|cipher| {
        HashEngine::ALL
            .into_iter()
            .filter(|&hash| H::is_available(hash))
            .flat_map(move |hash| {
                [false, true]
                    .into_iter()
                    .filter(move |&s| !s || can_stitch::<C, H>(cipher, hash))
                    .map(move |stitched_seal| Engines {
                        cipher,
                        hash,
                        stitched_seal,
                    })
            })
    })
}

/// The cipher and HMAC key of a suite on `engines`, checked against this CPU.
pub(crate) fn build<C: CbcCipher, H: HashAlg>(
    enc_key: &[u8],
    mac_key: &[u8],
    engines: Engines,
) -> Result<(C, HmacKey<H>), EngineUnavailable> {
    if !H::is_available(engines.hash)
        || (engines.stitched_seal && !can_stitch::<C, H>(engines.cipher, engines.hash))
    {
        return Err(EngineUnavailable);
    }
    let cipher = C::new_on(enc_key, engines.cipher).ok_or(EngineUnavailable)?;
    Ok((
        cipher,
        HmacKey::new(
            mac_key,
            engines.hash,
            RoundTuning::for_this_cpu(),
            engines.stitched_seal,
        ),
    ))
}

/// The engines a suite's key was made with.
pub(crate) fn of<C: CbcCipher, H: HashAlg>(cipher: &C, mac: &HmacKey<H>) -> Engines {
    Engines {
        cipher: cipher.backend(),
        hash: mac.engine(),
        stitched_seal: mac.seal_path == crate::record::SealPath::Stitched,
    }
}

#[cfg(test)]
mod tests {
    use super::RoundTuning;
    use gcm_core::__Vendor as Vendor;

    #[test]
    fn round_tuning_by_vendor() {
        assert_eq!(RoundTuning::for_vendor(Vendor::Amd), RoundTuning::FewestOps);
        assert_eq!(
            RoundTuning::for_vendor(Vendor::Intel),
            RoundTuning::ShortChain
        );
        assert_eq!(
            RoundTuning::for_vendor(Vendor::Other),
            RoundTuning::ShortChain
        );
    }
}

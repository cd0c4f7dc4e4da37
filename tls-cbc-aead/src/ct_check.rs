//! Annotations for checking constant time under valgrind memcheck (feature `ct-check`) or
//! MemorySanitizer (`--cfg ct_msan`, the build of `.ci/ct-msan.sh`).
//!
//! Both checkers report a conditional jump or a memory address that depends on undefined
//! ("poisoned") bytes. Marking secret data undefined therefore turns them into checkers
//! for secret-dependent branches and indices; a value that may legitimately become public
//! (the accept bit, the plaintext length) is marked defined again at the point where it is
//! declassified. The requests themselves live in one place, `gcm_core::ct`, which picks
//! the checker the build is for; in other builds every function here is empty.
//!
//! [`KeyEngines`] (from each suite's `ct_engines`) says which implementations a key
//! chose, so that the MemorySanitizer harness can list what it covered.

/// Tells memcheck that `bytes` hold secret data: any branch or address computed from them
/// is reported.
#[inline]
pub fn mark_secret(bytes: &[u8]) {
    gcm_core::ct::poison(bytes);
}

/// Tells memcheck that `bytes` may be branched on from now on.
#[inline]
pub fn mark_public(bytes: &[u8]) {
    gcm_core::ct::unpoison(bytes);
}

/// Declassifies one value in place: it goes through `gcm_core::ct::declassify`, which
/// marks it defined and reloads it from memory, so no register copy that memcheck still
/// sees as secret is used afterwards.
#[inline]
pub fn declassify<T: Copy>(value: &mut T) {
    *value = gcm_core::ct::declassify(*value);
}

/// Whether the program runs under valgrind (always false without the feature).
#[inline]
pub fn running_on_valgrind() -> bool {
    gcm_core::ct::running_on_valgrind()
}

/// Whether the constant-time harness hides any of the CPU feature bits `bits` (only
/// possible in a MemorySanitizer build; see `gcm_core::ct::hide_cpu_features`).
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn hidden(bits: u32) -> bool {
    gcm_core::ct::hidden_cpu_features() & bits != 0
}

/// How many passes of other round forms [`swap_round_tuning`] has: with the usual choice,
/// enough to run every form of the SHA-512 engines (see `RoundTuning`) on any CPU.
pub const ROUND_TUNING_PASSES: u8 = 2;

/// Makes keys made from now on run the SHA-512 engines' rounds in other forms than this
/// CPU gets: in pass `k` (1 to [`ROUND_TUNING_PASSES`]) each form is moved `k` places
/// along the three, so that the constant-time harness checks every form on any CPU; and
/// in the odd passes open's secret-length finish steps the other way (pairs or single
/// blocks, see `FinishSteps`). Pass 0 restores the usual choice. Only in a
/// MemorySanitizer build (returns true); elsewhere it does nothing and returns false.
pub fn swap_round_tuning(pass: u8) -> bool {
    #[cfg(ct_msan)]
    {
        ROUND_TUNING_PASS.store(
            pass.min(ROUND_TUNING_PASSES),
            core::sync::atomic::Ordering::Relaxed,
        );
        true
    }
    #[cfg(not(ct_msan))]
    {
        let _ = pass;
        false
    }
}

#[cfg(ct_msan)]
static ROUND_TUNING_PASS: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// The pass [`swap_round_tuning`] set (always 0 outside the sanitizer build).
#[inline]
pub(crate) fn round_tuning_pass() -> u8 {
    #[cfg(ct_msan)]
    return ROUND_TUNING_PASS.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(ct_msan))]
    0
}

/// What a key chose when it was made, as the constant-time harness reports it: its
/// [`Engines`](crate::Engines), the names of what runs behind them, and the build of
/// open (which follows the CPU, not the engines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyEngines {
    /// The engines, as the suite's `engines()` gives them.
    pub engines: crate::Engines,
    /// The block cipher: a `gcm_core` back end (`vaes512`, `vaes256`, `aesni`,
    /// `portable`), or our 3DES's CBC decryption kernel (`3des-avx512`, `3des-avx2`,
    /// `3des-baseline`), with `-vbmi` added when its CBC encryption runs on AVX-512 VBMI.
    pub cipher: &'static str,
    /// The hash compression: `sha1 crate`, `sha2 crate`, or this crate's engine by its
    /// [`HashEngine`](crate::HashEngine) name (`sha-ni`, `sha512-avx2`,
    /// `sha512-avx512`).
    pub hash: &'static str,
    /// The form of the hash rounds of open and of the plain hashes, where the engine has
    /// several builds (the SHA-512 engines): `fewest-ops`, `short-chain` or (AVX-512
    /// engine) `split-lanes`; `-` for the other engines.
    pub rounds: &'static str,
    /// The form of the stitched seal's hash rounds, as [`Self::rounds`]; `-` also when
    /// the seal is plain.
    pub stitched_rounds: &'static str,
    /// Seal: `plain`, or `stitched` (CBC encryption run inside the hash rounds).
    pub seal: &'static str,
    /// Open: `baseline`, or `avx2` (the same code built for AVX2).
    pub open: &'static str,
}

impl KeyEngines {
    pub(crate) fn of<C: crate::cbc::CbcCipher, H: crate::digest::HashAlg>(
        cipher: &C,
        mac: &crate::hmac_key::HmacKey<H>,
    ) -> Self {
        use crate::engine::{HashEngine, RoundTuning};
        use crate::record::{OpenPath, SealPath};
        let rounds = |tuning| match (mac.engine(), tuning) {
            (HashEngine::Sha512Avx2 | HashEngine::Sha512Avx512, RoundTuning::FewestOps) => {
                "fewest-ops"
            }
            (HashEngine::Sha512Avx2 | HashEngine::Sha512Avx512, RoundTuning::ShortChain) => {
                "short-chain"
            }
            (HashEngine::Sha512Avx512, RoundTuning::SplitLanes) => "split-lanes",
            _ => "-",
        };
        // What seal runs: stitched only when the cipher hands out AES-NI round keys as
        // well (see `record::seal`).
        let seal = match mac.seal_path {
            SealPath::Plain => "plain",
            #[cfg(target_arch = "x86_64")]
            SealPath::Stitched if cipher.aesni_round_keys().is_some() => "stitched",
            SealPath::Stitched => "plain",
        };
        KeyEngines {
            engines: crate::engine::of(cipher, mac),
            cipher: cipher.engine_name(),
            hash: H::engine_name(mac.engine()),
            rounds: rounds(mac.tuning()),
            stitched_rounds: if seal == "stitched" {
                rounds(mac.stitch_tuning())
            } else {
                "-"
            },
            seal,
            open: match mac.open_path {
                OpenPath::Baseline => "baseline",
                #[cfg(target_arch = "x86_64")]
                OpenPath::Avx2 => "avx2",
            },
        }
    }
}

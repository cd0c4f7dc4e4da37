//! Constant-time harness under MemorySanitizer (`.ci/ct-msan.sh` builds and runs it).
//!
//! MemorySanitizer tracks, bit for bit, which memory and registers hold "uninitialised"
//! data and reports any branch, and any load or store address, that depends on it. Mark
//! the secrets uninitialised (poisoned) and it becomes a constant-time checker, like
//! valgrind's memcheck, but one that runs the code natively, VAES, AVX-512 and SHA-NI
//! included, which valgrind cannot execute.
//!
//! What runs (each group prints a line; see the module docs for what is secret):
//! 1. controls, which must be reported: a branch on a secret, a table indexed by a
//!    secret, a tag compared with `==`, and VPTERNLOG without its shadow-propagating
//!    wrapper;
//! 2. `gcm_core::GcmKey` on every back end this CPU has, forced with `new_with_backend`:
//!    key set-up, seal and open over every length class, nonce kind, tag length, in place
//!    and separate, good and bad tags; the block cipher and GHASH types likewise;
//! 3. under each CPU profile of [`PROFILES`] (features hidden from detection, so that
//!    the code CPUs without them run is chosen): `aes-gcm-vaes`'s AEAD types and every
//!    TLS CBC suite, whose keys say which engines they chose;
//! 4. coverage: every back end and engine this CPU can run must have been run; what it
//!    cannot run is listed as such.
//!
//! Any report in 2 or 3, an output that should carry secrets but comes out clean (the
//! sanitizer would have lost track of them: a blind spot), or a wrong result fails the
//! run (exit 1).

mod check;
mod controls;
mod gcm;
mod tls;

use std::process::ExitCode;

use gcm_core::{__CpuFeatures as F, Backend, ct};
use tls_cbc_aead::ct_check::Engines;

use check::{Expect, Ledger, Rng};

/// A CPU profile: the features hidden from detection, so that keys made under it choose
/// what a CPU without them would run. Hiding only takes features away, so a profile can
/// never select code this CPU cannot run; on a CPU that lacks a feature anyway, two
/// profiles just coincide. New engines that detection picks are covered by adding the
/// profile that selects them here.
struct Profile {
    name: &'static str,
    hide: u32,
}

const PROFILES: [Profile; 5] = [
    Profile {
        name: "this CPU",
        hide: 0,
    },
    Profile {
        name: "no AVX-512 (e.g. Zen 3)",
        hide: F::AVX512F,
    },
    Profile {
        name: "no VAES (e.g. Cascade Lake)",
        hide: F::VAES,
    },
    Profile {
        name: "no AVX2 (e.g. Westmere)",
        hide: F::AVX2,
    },
    Profile {
        name: "no AES-NI, no AVX2",
        hide: F::AES | F::AVX2,
    },
];

/// The engines of every TLS key made, for the coverage check.
#[derive(Default)]
struct Seen(Vec<(&'static str, Engines)>);

impl Seen {
    fn add(&mut self, suite: &'static str, e: Engines) {
        if !self.0.contains(&(suite, e)) {
            self.0.push((suite, e));
        }
    }

    fn any(&self, f: impl Fn(&'static str, &Engines) -> bool) -> bool {
        self.0.iter().any(|(s, e)| f(s, e))
    }
}

fn main() -> ExitCode {
    if !ct::MEMORY_SANITIZER {
        say!(
            "ct-msan: this build is not instrumented; run .ci/ct-msan.sh (nightly, \
             -Zsanitizer=memory --cfg ct_msan)"
        );
        return ExitCode::from(2);
    }
    let mut ledger = Ledger::default();
    let available: Vec<Backend> = Backend::available().collect();
    say!(
        "ct-msan: detected back end {}; available: {}",
        Backend::detect().name(),
        available
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    third_party_notes();

    say!("ct-msan: -- controls (each must be reported)");
    controls::run(&mut ledger);

    say!("ct-msan: -- AES-GCM, block cipher and GHASH, each back end forced");
    for backend in Backend::ALL {
        if !backend.is_available() {
            say!(
                "ct-msan: {:<44} {:<28} not on this CPU",
                "gcm-core",
                backend.name()
            );
            continue;
        }
        let name = backend.name();
        ledger.group(Expect::Clean, "GcmKey: set-up, seal, open", name, || {
            gcm::gcm(backend)
        });
        ledger.group(
            Expect::Clean,
            "gcm_core::aes::Aes128/192/256, ghash::GHash",
            name,
            || gcm::primitives(backend),
        );
    }

    say!("ct-msan: -- under each CPU profile: aes-gcm-vaes AEADs, TLS CBC suites");
    let mut seen = Seen::default();
    let mut gcm_by_detection = Vec::new();
    for (i, profile) in PROFILES.iter().enumerate() {
        if !ct::hide_cpu_features(profile.hide) {
            ledger.fail("hiding CPU features", "unsupported in this build");
            break;
        }
        let detected = Backend::detect();
        say!(
            "ct-msan: profile \"{}\": AES-GCM detection picks {}",
            profile.name,
            detected.name()
        );
        gcm_by_detection.push(detected);
        let seed = 100 * i as u64;
        ledger.group(
            Expect::Clean,
            "aes-gcm-vaes Aes128Gcm/Aes256Gcm",
            detected.name(),
            || {
                let mut rng = Rng::new(seed);
                gcm::aead_api(&mut rng) + gcm::from_rustcrypto_aes(&mut rng)
            },
        );
        tls_suites(&mut ledger, &mut seen, seed);
    }
    ct::hide_cpu_features(0);

    say!("ct-msan: -- coverage");
    coverage(&mut ledger, &available, &gcm_by_detection, &seen);
    if ledger.finish() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs every TLS CBC suite under the current profile.
fn tls_suites(ledger: &mut Ledger, seen: &mut Seen, seed: u64) {
    let mut seed = seed;
    // One group per suite: `tls::$run::<Suite>` returns its operations and engines.
    macro_rules! suites {
        ($kind:ident, $run:ident: $($t:ty),*) => {$({
            let mut engines = None;
            let name = <$t as tls::$kind>::NAME;
            seed += 1;
            ledger.group(Expect::Clean, name, "", || {
                let (ops, e) = tls::$run::<$t>(seed);
                engines = Some(e);
                ops
            });
            if let Some(e) = engines {
                print_engines(e);
                seen.add(name, e);
            }
        })*};
    }
    use tls_cbc_aead::*;
    suites!(Suite, suite:
        Aes128CbcSha1, Aes256CbcSha1, Aes128CbcSha256, Aes256CbcSha256, Aes256CbcSha384,
        DesEde3CbcSha1);
    suites!(ImplicitSuite, implicit_suite:
        Aes128CbcSha1ImplicitIv, Aes256CbcSha1ImplicitIv, DesEde3CbcSha1ImplicitIv);
}

fn print_engines(e: Engines) {
    say!(
        "ct-msan:     engines: cipher {}, hash {}, seal {}, open {}",
        e.cipher,
        e.hash,
        e.seal,
        e.open
    );
}

/// What the third-party crates run here, and how the sanitizer sees it.
fn third_party_notes() {
    #[cfg(target_arch = "x86_64")]
    {
        let shani = std::is_x86_feature_detected!("sha");
        say!(
            "ct-msan: sha1 crate: {}",
            if shani && !cfg!(sha1_backend = "soft") {
                "SHA-NI, run through ct::msan::opaque (SHA1RNDS4 is not modelled): \
                 its inside is not checked here"
            } else {
                "software compression, checked"
            }
        );
        say!(
            "ct-msan: sha2 crate: {}, checked",
            if cfg!(sha2_backend = "soft") {
                "software compressions (built so)"
            } else if shani {
                "SHA-256 on SHA-NI, SHA-512 on AVX2 or software (modelled instructions)"
            } else {
                "software SHA-256, SHA-512 on AVX2 or software (modelled instructions)"
            }
        );
    }
    say!(
        "ct-msan: aes crate (portable back end): {}",
        if aes::hardware_accelerated() {
            "AES-NI; its key schedule (AESKEYGENASSIST, not modelled) runs through \
             ct::msan::opaque, the rest is checked"
        } else {
            "software (fixsliced), checked"
        }
    );
    say!(
        "ct-msan: polyval crate (GHASH of the portable back end): {}",
        if cfg!(polyval_backend = "soft") {
            "software (built so), checked"
        } else {
            "CLMUL where the CPU has it (modelled), checked"
        }
    );
}

/// Every back end and engine this CPU can run must have run; the others are listed.
fn coverage(ledger: &mut Ledger, available: &[Backend], by_detection: &[Backend], seen: &Seen) {
    for b in Backend::ALL {
        let state = if available.contains(&b) {
            "forced: covered"
        } else {
            "not on this CPU"
        };
        say!("ct-msan: gcm-core back end {:<10} {state}", b.name());
    }
    for b in available {
        if !by_detection.contains(b) {
            say!(
                "ct-msan: note: no profile makes detection pick {}",
                b.name()
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    let (sha512_x86, avx2) = {
        use std::is_x86_feature_detected as has;
        let avx2 = has!("avx2");
        let avx512vl = has!("avx512f") && has!("avx512vl");
        (avx2 && has!("bmi1") && has!("bmi2") && avx512vl, avx2)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (sha512_x86, avx2) = (false, false);
    let aes_ni = available.contains(&Backend::AesNi);

    // (what, whether this CPU can run it, whether some key ran it)
    let engines: [(&'static str, bool, bool); 8] = [
        (
            "TLS cipher on every gcm-core back end",
            true,
            available
                .iter()
                .all(|b| seen.any(|_, e| e.cipher == b.name())),
        ),
        (
            "TLS cipher 3DES (des crate)",
            true,
            seen.any(|_, e| e.cipher == "des crate"),
        ),
        (
            "SHA-1 (sha1 crate)",
            true,
            seen.any(|_, e| e.hash == "sha1 crate"),
        ),
        (
            "SHA-256/384 (sha2 crate)",
            true,
            seen.any(|_, e| e.hash == "sha2 crate"),
        ),
        (
            "SHA-384 on sha512_x86 (AVX-512VL)",
            sha512_x86,
            seen.any(|_, e| e.hash == "sha512_x86"),
        ),
        (
            "stitched AES-256-CBC-SHA384 seal",
            sha512_x86 && aes_ni,
            seen.any(|s, e| e.seal == "stitched" && s == "AES-256-CBC-SHA384"),
        ),
        ("open, AVX2 build", avx2, seen.any(|_, e| e.open == "avx2")),
        (
            "open, baseline build",
            true,
            seen.any(|_, e| e.open == "baseline"),
        ),
    ];
    for (what, runs_here, covered) in engines {
        let state = match (runs_here, covered) {
            (true, true) => "covered",
            (false, false) => "not on this CPU",
            (true, false) => "NOT COVERED although this CPU has it",
            (false, true) => "covered (unexpectedly)",
        };
        say!("ct-msan: {what:<44} {state}");
        if runs_here && !covered {
            ledger.fail(what, "coverage");
        }
    }
}

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
//!    secret, 3DES through RustCrypto `des`'s S-box tables with a secret key, a tag
//!    compared with `==`, and VPTERNLOG without its shadow-propagating wrapper;
//! 2. `gcm_core::GcmKey` on every back end this CPU has, forced with `new_with_backend`:
//!    key set-up, seal and open over every length class, nonce kind, tag length, in place
//!    and separate, good and bad tags; the block cipher and GHASH types likewise;
//! 3. under each CPU profile of [`PROFILES`] (features hidden from detection, so that
//!    the code CPUs without them run is chosen): `aes-gcm-vaes`'s AEAD types and every
//!    TLS CBC suite, whose keys say which engines they chose;
//! 4. every TLS CBC engine choice this CPU offers that no profile picked, forced with
//!    `new_with_engines` (a hash engine with the plain seal, say);
//! 5. QUIC packet and header protection (`aes_gcm_vaes::rustls::quic`) through rustls's
//!    QUIC key API, under each profile's AES back end;
//! 6. coverage: every back end and engine this CPU can run must have been run; what it
//!    cannot run is listed as such.
//!
//! Any report in 2 or 3, an output that should carry secrets but comes out clean (the
//! sanitizer would have lost track of them: a blind spot), or a wrong result fails the
//! run (exit 1).

mod check;
mod controls;
mod gcm;
mod quic;
mod tls;

use std::process::ExitCode;

use gcm_core::{__CpuFeatures as F, Backend, ct};
use tls_cbc_aead::ct_check::KeyEngines;
use tls_cbc_aead::{Engines, HashEngine};

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

const PROFILES: [Profile; 6] = [
    Profile {
        name: "this CPU",
        hide: 0,
    },
    // VAES-256; SHA-NI and the AVX2 SHA-512, stitched.
    Profile {
        name: "no AVX-512 (e.g. Zen 3)",
        hide: F::AVX512F,
    },
    // AES-NI; SHA-1/SHA-256 on the avx512 engine, stitched; AVX-512 SHA-512.
    Profile {
        name: "no VAES, no SHA-NI (e.g. Cascade Lake)",
        hide: F::VAES | F::SHA,
    },
    // AES-NI; SHA-1/SHA-256 on the avx2 engine, stitched; AVX2 SHA-512.
    Profile {
        name: "no VAES, no SHA-NI, no AVX-512 (e.g. Haswell to Comet Lake)",
        hide: F::VAES | F::SHA | F::AVX512F,
    },
    // AES-NI in SSE encoding; SHA-NI, stitched; SHA-384 on the sha2 crate; baseline open.
    Profile {
        name: "no AVX (e.g. Goldmont)",
        hide: F::AVX | F::AVX2,
    },
    // Portable AES; SHA-NI, plain seal (no AES-NI to stitch).
    Profile {
        name: "no AES-NI, no AVX2",
        hide: F::AES | F::AVX2,
    },
];

/// The engines of every TLS key made, for the coverage check; and, per suite, every
/// engine choice this CPU offers.
#[derive(Default)]
struct Seen {
    keys: Vec<(&'static str, KeyEngines)>,
    offered: Vec<(&'static str, Vec<Engines>)>,
}

impl Seen {
    fn add(&mut self, suite: &'static str, e: KeyEngines) {
        if !self.keys.contains(&(suite, e)) {
            self.keys.push((suite, e));
        }
    }

    fn any(&self, f: impl Fn(&'static str, &KeyEngines) -> bool) -> bool {
        self.keys.iter().any(|(s, e)| f(s, e))
    }

    /// Whether a key of `suite` ran on `engines` (with either build of open).
    fn ran(&self, suite: &str, engines: Engines) -> bool {
        self.any(|s, e| s == suite && e.engines == engines)
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
        quic::run(&mut ledger, detected, seed);
    }
    ct::hide_cpu_features(0);

    say!("ct-msan: -- TLS CBC: the engine choices no profile picked, forced");
    forced_tls_suites(&mut ledger, &mut seen);

    say!(
        "ct-msan: -- TLS CBC: the SHA-512 engines' rounds and finish steps as other CPUs get them"
    );
    if tls_cbc_aead::ct_check::swap_round_tuning(0) {
        for pass in 1..=tls_cbc_aead::ct_check::ROUND_TUNING_PASSES {
            say!("ct-msan: other round forms, pass {pass}");
            tls_cbc_aead::ct_check::swap_round_tuning(pass);
            other_round_form(&mut ledger, &mut seen, pass);
        }
        tls_cbc_aead::ct_check::swap_round_tuning(0);
    } else {
        ledger.fail("swapping the round tuning", "unsupported in this build");
    }

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
    for (i, suite) in tls::SUITES.iter().enumerate() {
        let mut engines = None;
        ledger.group(Expect::Clean, suite.name, "", || {
            let (ops, e) = (suite.run)(seed + 1 + i as u64, None);
            engines = Some(e);
            ops
        });
        if let Some(e) = engines {
            print_engines(e);
            seen.add(suite.name, e);
        }
    }
}

/// Runs, for every TLS CBC suite, the engine choices this CPU offers that the profiles
/// did not pick (with this CPU's build of open): one group per suite.
fn forced_tls_suites(ledger: &mut Ledger, seen: &mut Seen) {
    let mut seed = 10_000;
    for suite in &tls::SUITES {
        let name = suite.name;
        let offered = (suite.available)();
        let missing: Vec<Engines> = offered
            .iter()
            .copied()
            .filter(|&e| !seen.ran(name, e))
            .collect();
        seen.offered.push((name, offered));
        if missing.is_empty() {
            say!("ct-msan: {name:<44} every engine choice ran under the profiles");
            continue;
        }
        run_forced(ledger, seen, suite, &missing, "forced", &mut seed);
    }
}

/// Runs every engine choice on a SHA-512 engine again, with the rounds in the forms of
/// pass `pass` of `swap_round_tuning` (which is on), and in odd passes open's
/// secret-length finish stepping the other way (pairs or single blocks): one group per
/// suite.
fn other_round_form(ledger: &mut Ledger, seen: &mut Seen, pass: u8) {
    let mut seed = 20_000 * u64::from(pass);
    for suite in &tls::SUITES {
        let sha512 =
            |e: &Engines| matches!(e.hash, HashEngine::Sha512Avx2 | HashEngine::Sha512Avx512);
        let choices: Vec<Engines> = (suite.available)().into_iter().filter(sha512).collect();
        if choices.is_empty() {
            continue;
        }
        run_forced(ledger, seen, suite, &choices, "other round form", &mut seed);
    }
}

/// Runs a key of `suite` on each of `choices` (forced) in one group, and records what
/// each key ran; `seed` steps once a key.
fn run_forced(
    ledger: &mut Ledger,
    seen: &mut Seen,
    suite: &tls::SuiteRun,
    choices: &[Engines],
    how: &str,
    seed: &mut u64,
) {
    let mut ran = Vec::new();
    let on = leak(format!("{} choices, {how}", choices.len()));
    ledger.group(Expect::Clean, suite.name, on, || {
        choices
            .iter()
            .map(|&e| {
                *seed += 1;
                let (ops, k) = (suite.run)(*seed, Some(e));
                ran.push(k);
                ops
            })
            .sum()
    });
    for k in ran {
        print_engines(k);
        seen.add(suite.name, k);
    }
}

/// A name made at run time, for a group line. std formatted it (uninstrumented), so the
/// `String` and its bytes are declassified before the harness reads them.
fn leak(mut name: String) -> &'static str {
    check::declassify_value(&mut name);
    let name: &'static str = name.leak();
    ct::unpoison(name.as_bytes());
    name
}

fn print_engines(e: KeyEngines) {
    say!(
        "ct-msan:     engines: cipher {}, hash {} (rounds {}), seal {} (rounds {}), open {}",
        e.cipher,
        e.hash,
        e.rounds,
        e.seal,
        e.stitched_rounds,
        e.open
    );
}

/// What the third-party crates and the SHA-NI engines run here, and how the sanitizer
/// sees it.
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
                "SHA-256 on SHA-NI (its instructions approximated lane by lane by the \
                 sanitizer), SHA-512 on AVX2 or software"
            } else {
                "software SHA-256, SHA-512 on AVX2 or software (modelled instructions)"
            }
        );
        if shani {
            say!(
                "ct-msan: tls-cbc-aead SHA-NI engines: each SHA instruction through \
                 ct::msan::opaque (result poisoned whole iff an operand is); the code \
                 around them, the stitched AES rounds included, checked"
            );
        }
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

/// Which hash a TLS CBC suite's MAC uses, from its name.
fn hash_of(suite: &str) -> &'static str {
    if suite.contains("SHA384") {
        "SHA-384"
    } else if suite.contains("SHA256") {
        "SHA-256"
    } else {
        "SHA-1"
    }
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

    // What this CPU can run, from std's detection (not the library's, which is what is
    // being checked).
    // std is not instrumented: its answers are declassified before use.
    #[cfg(target_arch = "x86_64")]
    macro_rules! has {
        ($($f:tt),*) => { $(ct::declassify(std::is_x86_feature_detected!($f)))&&* };
    }
    #[cfg(target_arch = "x86_64")]
    let (shani, shani_avx512, sha512_avx2, sha512_avx512, avx2) = {
        let shani = has!("sha", "ssse3", "sse4.1");
        let avx2 = has!("avx2");
        let avx512vl = avx2 && has!("avx512f", "avx512vl");
        let sha512_avx2 = avx2 && has!("bmi1", "bmi2");
        let sha512_avx512 = sha512_avx2 && avx512vl;
        (shani, shani && avx512vl, sha512_avx2, sha512_avx512, avx2)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (shani, shani_avx512, sha512_avx2, sha512_avx512, avx2) =
        (false, false, false, false, false);
    let aes_ni = available.contains(&Backend::AesNi);
    let runs = |hash: HashEngine| match hash {
        HashEngine::ShaNi => shani,
        HashEngine::ShaNiAvx512 => shani_avx512,
        // The SHA-1/SHA-256 AVX2 engine needs what the SHA-512 one does (AVX2, BMI1,
        // BMI2), and its AVX-512VL variant what the AVX-512 SHA-512 one does.
        HashEngine::Sha512Avx2 | HashEngine::Avx2 => sha512_avx2,
        HashEngine::Sha512Avx512 | HashEngine::Avx512 => sha512_avx512,
        _ => true,
    };
    // A key of some suite with hash `hash_name` ran on `engine` (seal and open).
    let hash_ran = |hash_name: &str, engine: HashEngine| {
        seen.any(|s, e| hash_of(s) == hash_name && e.engines.hash == engine)
    };
    let stitched_ran = |suite: &str, engine: HashEngine| {
        seen.any(|s, e| s == suite && e.engines.hash == engine && e.seal == "stitched")
    };

    // (what, whether this CPU can run it, whether some key ran it)
    let mut rows: Vec<(&'static str, bool, bool)> = vec![(
        "TLS cipher on every gcm-core back end",
        true,
        available
            .iter()
            .all(|b| seen.any(|_, e| e.cipher == b.name())),
    )];
    // Our 3DES's CBC decryption kernels: AVX-512 where the key would pick it (not on the
    // Intel cores that avoid 512-bit vectors), AVX2, and the baseline one, which the
    // profiles without AVX-512 and without AVX reach. Its CBC encryption: on AVX-512
    // VBMI likewise, and portable, which the profile without AVX-512 reaches. A 3DES
    // key's cipher name is its decryption kernel's, `-vbmi` added for VBMI encryption.
    #[cfg(target_arch = "x86_64")]
    let (tdes_avx512, tdes_vbmi) = {
        let avx512 =
            avx2 && has!("avx512f", "avx512vl") && !gcm_core::__avoids_zmm(gcm_core::__this_cpu());
        (
            avx512,
            avx512 && has!("avx512bw", "avx512vbmi", "avx512bitalg"),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (tdes_avx512, tdes_vbmi) = (false, false);
    for (kernel, runs) in [
        ("3des-avx512", tdes_avx512),
        ("3des-avx2", avx2),
        ("3des-baseline", true),
    ] {
        rows.push((
            leak(format!("TLS cipher 3DES, decryption kernel {kernel}")),
            runs,
            seen.any(|_, e| e.cipher.strip_suffix("-vbmi").unwrap_or(e.cipher) == kernel),
        ));
    }
    for (kernel, runs) in [("vbmi", tdes_vbmi), ("portable", true)] {
        rows.push((
            leak(format!("TLS cipher 3DES, encryption kernel {kernel}")),
            runs,
            seen.any(|_, e| {
                e.cipher.starts_with("3des-") && e.cipher.ends_with("-vbmi") == (kernel == "vbmi")
            }),
        ));
    }
    for (hash, engine, label) in [
        ("SHA-1", HashEngine::RustCrypto, "sha1 crate"),
        ("SHA-1", HashEngine::ShaNi, "sha-ni (SHA-NI)"),
        (
            "SHA-1",
            HashEngine::ShaNiAvx512,
            "sha-ni-avx512 (SHA-NI, AVX-512VL)",
        ),
        ("SHA-256", HashEngine::RustCrypto, "sha2 crate"),
        ("SHA-256", HashEngine::ShaNi, "sha-ni (SHA-NI)"),
        (
            "SHA-256",
            HashEngine::ShaNiAvx512,
            "sha-ni-avx512 (SHA-NI, AVX-512VL)",
        ),
        ("SHA-1", HashEngine::Avx2, "avx2 (AVX2, BMI2)"),
        ("SHA-256", HashEngine::Avx2, "avx2 (AVX2, BMI2)"),
        ("SHA-1", HashEngine::Avx512, "avx512 (AVX-512VL, BMI2)"),
        ("SHA-256", HashEngine::Avx512, "avx512 (AVX-512VL, BMI2)"),
        ("SHA-384", HashEngine::RustCrypto, "sha2 crate"),
        (
            "SHA-384",
            HashEngine::Sha512Avx2,
            "sha512-avx2 (AVX2, BMI2)",
        ),
        (
            "SHA-384",
            HashEngine::Sha512Avx512,
            "sha512-avx512 (AVX-512VL)",
        ),
    ] {
        rows.push((
            leak(format!("{hash} on {label}: seal and open")),
            runs(engine),
            hash_ran(hash, engine),
        ));
    }
    for (suite, engine) in [
        ("AES-128-CBC-SHA1", HashEngine::ShaNi),
        ("AES-256-CBC-SHA1", HashEngine::ShaNi),
        ("AES-128-CBC-SHA1, implicit IV", HashEngine::ShaNi),
        ("AES-256-CBC-SHA1, implicit IV", HashEngine::ShaNi),
        ("AES-128-CBC-SHA1", HashEngine::ShaNiAvx512),
        ("AES-256-CBC-SHA1", HashEngine::ShaNiAvx512),
        ("AES-128-CBC-SHA1, implicit IV", HashEngine::ShaNiAvx512),
        ("AES-256-CBC-SHA1, implicit IV", HashEngine::ShaNiAvx512),
        ("AES-128-CBC-SHA256", HashEngine::ShaNi),
        ("AES-256-CBC-SHA256", HashEngine::ShaNi),
        ("AES-128-CBC-SHA256", HashEngine::ShaNiAvx512),
        ("AES-256-CBC-SHA256", HashEngine::ShaNiAvx512),
        ("AES-128-CBC-SHA1", HashEngine::Avx2),
        ("AES-256-CBC-SHA1", HashEngine::Avx2),
        ("AES-128-CBC-SHA1, implicit IV", HashEngine::Avx2),
        ("AES-256-CBC-SHA1, implicit IV", HashEngine::Avx2),
        ("AES-128-CBC-SHA256", HashEngine::Avx2),
        ("AES-256-CBC-SHA256", HashEngine::Avx2),
        ("AES-128-CBC-SHA1", HashEngine::Avx512),
        ("AES-256-CBC-SHA1", HashEngine::Avx512),
        ("AES-128-CBC-SHA1, implicit IV", HashEngine::Avx512),
        ("AES-256-CBC-SHA1, implicit IV", HashEngine::Avx512),
        ("AES-128-CBC-SHA256", HashEngine::Avx512),
        ("AES-256-CBC-SHA256", HashEngine::Avx512),
        ("AES-256-CBC-SHA384", HashEngine::Sha512Avx2),
        ("AES-256-CBC-SHA384", HashEngine::Sha512Avx512),
    ] {
        rows.push((
            leak(format!("stitched seal: {suite}, {engine}")),
            runs(engine) && aes_ni,
            stitched_ran(suite, engine),
        ));
    }
    for (engine, forms) in [
        (HashEngine::Sha512Avx2, &["fewest-ops", "short-chain"][..]),
        (
            HashEngine::Sha512Avx512,
            &["fewest-ops", "short-chain", "split-lanes"][..],
        ),
    ] {
        for &rounds in forms {
            // The plain seal (and every open) runs `rounds`, the stitched seal
            // `stitched_rounds`: the two differ on some CPUs (see `Tunings`).
            let plain = seen
                .any(|_, e| e.engines.hash == engine && e.rounds == rounds && e.seal == "plain");
            let stitched = seen.any(|_, e| {
                e.engines.hash == engine && e.stitched_rounds == rounds && e.seal == "stitched"
            });
            rows.push((
                leak(format!(
                    "SHA-384 on {engine}, rounds {rounds}: plain and stitched seal"
                )),
                runs(engine),
                plain && (!aes_ni || stitched),
            ));
        }
    }
    rows.push((
        "stitched seal on every AES-NI back end",
        aes_ni && (shani || sha512_avx2),
        available
            .iter()
            .filter(|&&b| b != Backend::Portable)
            .all(|b| seen.any(|_, e| e.seal == "stitched" && e.engines.cipher == *b)),
    ));
    rows.push((
        "plain seal on every stitching hash engine",
        true,
        [
            HashEngine::ShaNi,
            HashEngine::ShaNiAvx512,
            HashEngine::Avx2,
            HashEngine::Avx512,
            HashEngine::Sha512Avx2,
            HashEngine::Sha512Avx512,
        ]
        .into_iter()
        .filter(|&h| runs(h))
        .all(|h| seen.any(|_, e| e.engines.hash == h && e.seal == "plain")),
    ));
    rows.push(("open, AVX2 build", avx2, seen.any(|_, e| e.open == "avx2")));
    rows.push((
        "open, baseline build",
        true,
        seen.any(|_, e| e.open == "baseline"),
    ));
    let offered: usize = seen.offered.iter().map(|(_, o)| o.len()).sum();
    rows.push(quic::coverage_row(by_detection));
    rows.push((
        leak(format!("TLS CBC: all {offered} engine choices offered")),
        true,
        !seen.offered.is_empty()
            && seen
                .offered
                .iter()
                .all(|(s, o)| o.iter().all(|&e| seen.ran(s, e))),
    ));

    for (what, runs_here, covered) in rows {
        let state = match (runs_here, covered) {
            (true, true) => "covered",
            (false, false) => "not on this CPU",
            (true, false) => "NOT COVERED although this CPU has it",
            (false, true) => "covered (unexpectedly)",
        };
        say!("ct-msan: {what:<60} {state}");
        if runs_here && !covered {
            ledger.fail(what, "coverage");
        }
    }
}

//! `speed`: throughput of our AES-GCM in the format of BoringSSL's `bssl speed`, optionally
//! interleaved with peer implementations (`--peers`), the AES-CTR roofline (`--roofline`) and
//! TLS CBC-HMAC records (`--tls-cbc`), with tables, CSV and an SVG chart at the end.
//!
//! Run `speed --help` for the options. Times are thread CPU time (see `benches::clock`).

use std::process::ExitCode;

use benches::clock::{ForBudget, Sample, median};
use benches::gcm::Subject;
use benches::report::{Kind, Results};
use benches::{Alg, DEFAULT_SIZES, Op, ours, peers};

const HELP: &str = "\
speed: AES-GCM throughput, printed like `bssl speed`

usage: speed [options]
  --filter STR       only run tests whose name contains STR (case-insensitive), where a
                     name is e.g. \"AES-128-GCM seal\" or \"AES-128-CBC-SHA1 open\"
  --chunks A,B,...   message sizes in bytes (default 16,64,256,512,1350,4096,8192,16384;
                     TLS CBC default 16,256,1350,8192,16384)
  --timeout SECS     CPU seconds per measurement (default 1, or 0.1 with --peers)
  --rounds N         rounds per figure, median reported (default 1, or 7 with
                     --peers); each round measures every size in turn
  --backend NAME     force our back end: vaes512, vaes256, aesni or portable (with
                     --tls-cbc, also the AES suites' cipher engine)
  --all-backends     also measure ours with every other back end this CPU has
  --core             also measure gcm_core::GcmKey called directly (ours-core), to see
                     what the aead trait layer of aes-gcm-vaes costs
  --peers            also measure RustCrypto aes-gcm, ring, aws-lc-rs, graviola and
                     OpenSSL (those built in), taking turns at each size
  --only-peers A,B   with --peers, only these of them (e.g. aws-lc-rs,openssl: the
                     peers that OPENSSL_ia32cap holds to their AES-NI code)
  --roofline         also measure our AES-CTR-only loop (same AES code, no GHASH)
  --tls-cbc          TLS CBC-HMAC records: ours (feature tls-cbc), OpenSSL's composition
                     and OpenSSL's stitched ciphers
  --hash-engine NAME with --tls-cbc, run ours on this hash engine (e.g. avx2, the SHA-1 /
                     SHA-256 engine for CPUs without SHA-NI) with its fastest seal, in the
                     suites that have it (on its own, e.g. beside an OpenSSL held to its
                     code for such CPUs by OPENSSL_ia32cap; with --backend aesni,
                     CBC on the back end such CPUs take too)
  --tls-engines      with --tls-cbc, also measure ours on every other hash engine and
                     seal path this CPU has (same AES back end)
  --no-gcm           skip the AES-GCM measurements (with --tls-cbc)
  --no-key-setup     skip the key set-up figures
  --csv FILE         write every figure as CSV
  --plot FILE        write an SVG chart of MB/s against message size
  --markdown FILE    write the tables as Markdown
  -h, --help         this text
";

struct Opts {
    filter: Option<String>,
    chunks: Option<Vec<usize>>,
    timeout: Option<f64>,
    rounds: Option<usize>,
    backend: Option<ours::Backend>,
    all_backends: bool,
    core: bool,
    peers: bool,
    only_peers: Option<Vec<String>>,
    roofline: bool,
    tls_cbc: bool,
    tls_engines: bool,
    hash_engine: Option<&'static str>,
    gcm: bool,
    key_setup: bool,
    csv: Option<String>,
    plot: Option<String>,
    markdown: Option<String>,
}

#[cfg(feature = "peer-openssl")]
use benches::tls_cbc::parse_hash_engine;

/// `--hash-engine` applies to the TLS CBC measurements, which need OpenSSL's side.
#[cfg(not(feature = "peer-openssl"))]
fn parse_hash_engine(name: &str) -> Result<&'static str, String> {
    Err(format!(
        "--hash-engine {name:?}: needs the peer-openssl feature (--tls-cbc)"
    ))
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        filter: None,
        chunks: None,
        timeout: None,
        rounds: None,
        backend: None,
        all_backends: false,
        core: false,
        peers: false,
        only_peers: None,
        roofline: false,
        tls_cbc: false,
        tls_engines: false,
        hash_engine: None,
        gcm: true,
        key_setup: true,
        csv: None,
        plot: None,
        markdown: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--filter" => o.filter = Some(value()?.to_lowercase()),
            "--chunks" => {
                let v = value()?;
                let sizes = v
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--chunks {s:?}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if sizes.is_empty() {
                    return Err("--chunks needs at least one size".into());
                }
                o.chunks = Some(sizes);
            }
            "--timeout" => {
                let v = value()?;
                let t: f64 = v.parse().map_err(|e| format!("--timeout {v:?}: {e}"))?;
                if !(t > 0.0 && t < 3600.0) {
                    return Err(format!("--timeout {t} out of range"));
                }
                o.timeout = Some(t);
            }
            "--rounds" => {
                let v = value()?;
                let r: usize = v.parse().map_err(|e| format!("--rounds {v:?}: {e}"))?;
                o.rounds = Some(r.max(1));
            }
            "--backend" => o.backend = Some(ours::parse_backend(&value()?)?),
            "--all-backends" => o.all_backends = true,
            "--core" => o.core = true,
            "--peers" => o.peers = true,
            "--only-peers" => {
                let v = value()?;
                let names: Vec<String> = v.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(bad) = names.iter().find(|n| !peers::names().contains(&n.as_str())) {
                    return Err(format!(
                        "--only-peers {bad:?}: not a peer in this build ({})",
                        peers::names().join(", ")
                    ));
                }
                o.only_peers = Some(names);
            }
            "--roofline" => o.roofline = true,
            "--tls-cbc" => o.tls_cbc = true,
            "--tls-engines" => o.tls_engines = true,
            "--hash-engine" => o.hash_engine = Some(parse_hash_engine(&value()?)?),
            "--no-gcm" => o.gcm = false,
            "--no-key-setup" => o.key_setup = false,
            "--csv" => o.csv = Some(value()?),
            "--plot" => o.plot = Some(value()?),
            "--markdown" => o.markdown = Some(value()?),
            "-h" | "--help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other:?} (try --help)")),
        }
    }
    if let Some(b) = o.backend {
        if !b.is_available() {
            return Err(format!(
                "back end {} is not available on this CPU",
                b.name()
            ));
        }
        if o.all_backends {
            return Err("--backend and --all-backends exclude each other".into());
        }
    }
    Ok(o)
}

impl Opts {
    /// Whether `--only-peers` (if given) lists the peer `name`.
    fn peer_wanted(&self, name: &str) -> bool {
        self.only_peers
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| n == name))
    }

    fn wanted(&self, name: &str) -> bool {
        match &self.filter {
            None => true,
            Some(f) => name.to_lowercase().contains(f),
        }
    }

    fn budget_ns(&self) -> u64 {
        let secs = self.timeout.unwrap_or(if self.peers { 0.1 } else { 1.0 });
        (secs * 1e9) as u64
    }

    fn rounds(&self) -> usize {
        self.rounds.unwrap_or(if self.peers { 7 } else { 1 })
    }
}

/// What the CPU is: its model string, and the vendor, family and model the back-end choice
/// sees, with the microarchitecture where it is one this project has measured or lists.
fn cpu_description() -> String {
    let cpu = gcm_core::__this_cpu();
    let (vendor, family, model) = (cpu.vendor, cpu.family, cpu.model);
    let arch = match (vendor, family, model) {
        (gcm_core::__Vendor::Amd, 0x19, 0x00..=0x0f | 0x20..=0x2f | 0x40..=0x5f) => " (Zen 3)",
        (gcm_core::__Vendor::Amd, 0x19, 0x10..=0x1f | 0x60..=0x7f | 0xa0..=0xaf) => " (Zen 4)",
        (gcm_core::__Vendor::Amd, 0x1a, _) => " (Zen 5)",
        (gcm_core::__Vendor::Intel, 6, 0x55) => " (Skylake-SP / Cascade Lake)",
        (gcm_core::__Vendor::Intel, 6, 0x6a | 0x6c) => " (Ice Lake-SP)",
        (gcm_core::__Vendor::Intel, 6, 0x7d | 0x7e) => " (Ice Lake)",
        (gcm_core::__Vendor::Intel, 6, 0x8c | 0x8d) => " (Tiger Lake)",
        (gcm_core::__Vendor::Intel, 6, 0x97 | 0x9a) => " (Alder Lake)",
        (gcm_core::__Vendor::Intel, 6, 0xb7 | 0xba | 0xbf) => " (Raptor Lake)",
        (gcm_core::__Vendor::Intel, 6, 0x8f) => " (Sapphire Rapids)",
        (gcm_core::__Vendor::Intel, 6, 0xcf) => " (Emerald Rapids)",
        (gcm_core::__Vendor::Intel, 6, 0xad | 0xae) => " (Granite Rapids)",
        // A hypervisor may report another model (seen: 0xa7, Rocket Lake, on a Xeon with
        // AMX); AVX512-FP16 says Sapphire Rapids or later whatever the model.
        (gcm_core::__Vendor::Intel, ..)
            if cpu.features.has(gcm_core::__CpuFeatures::AVX512FP16) =>
        {
            " (AVX512-FP16: Sapphire Rapids or later)"
        }
        _ => "",
    };
    let clock = benches::clock::core_clock_ghz()
        .map(|g| format!("; core clock about {g:.2} GHz (dependent adds, thread CPU time)"))
        .unwrap_or_default();
    format!(
        "{} [{vendor:?} family {family:#x} model {model:#x}{arch}]{clock}",
        cpu_model()
    )
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Ours for `alg` as the options ask: the default back end (or the forced one), with
/// `--core` the same through `GcmKey` directly, then with `--all-backends` each other
/// available back end forced.
fn our_subjects(o: &Opts, alg: Alg) -> Vec<Box<dyn Subject>> {
    let mut v = vec![ours::subject(alg, o.backend)];
    if o.core {
        v.push(ours::core_subject(alg, o.backend));
    }
    if o.backend.is_some() {
        return v;
    }
    if o.all_backends {
        let default = ours::backend_in_use(alg);
        for b in ours::available_backends() {
            if b != default {
                v.push(ours::subject(alg, Some(b)));
            }
        }
    }
    v
}

/// The samples of one operation: `rounds` rounds, each measuring every size in turn and,
/// at each size, every column (`measure(column, size)`) in turn. Returns them by size,
/// then column, then round.
///
/// The round is the outer loop so that a figure's rounds are spread over the whole sweep,
/// not taken back to back: on a shared machine a slow phase of a few seconds then lands in
/// a few rounds of many figures, which their medians discard, rather than in every round
/// of one figure, which moves it (seen on the Zen 5 development host: one implementation's
/// cell off by 20-30% with 11 back-to-back rounds). The columns still take turns at each
/// size, so the ratios between them come from the same moments.
fn sweep(
    rounds: usize,
    sizes: &[usize],
    columns: usize,
    mut measure: impl FnMut(usize, usize) -> Sample,
) -> Vec<Vec<Vec<Sample>>> {
    let mut samples = vec![vec![Vec::with_capacity(rounds); columns]; sizes.len()];
    for _ in 0..rounds {
        for (by_column, &len) in samples.iter_mut().zip(sizes) {
            for (column, rounds_so_far) in by_column.iter_mut().enumerate() {
                rounds_so_far.push(measure(column, len));
            }
        }
    }
    samples
}

fn print_median_line(prefix: &str, samples: &[Sample], what: &str, len: usize, op: &str) {
    let rates: Vec<f64> = samples.iter().map(|s| s.mb_per_s(len)).collect();
    let m = median(&rates);
    // The round whose rate is nearest the median stands for the whole measurement.
    if let Some(s) = samples.iter().min_by(|a, b| {
        (a.mb_per_s(len) - m)
            .abs()
            .total_cmp(&(b.mb_per_s(len) - m).abs())
    }) {
        println!("{prefix}{}", s.bssl_line(what, len, op));
    }
}

/// Key set-up time of every subject (and of `gcm_core::GcmKey` unless it is a subject):
/// the subjects take turns within each of `rounds` rounds and the median round is
/// reported, as for seal and open, so that a disturbance of a shared machine moves one
/// round rather than a figure (measured once each, one run put our AES-128 key at 209 ns
/// against 157 for the same key through `GcmKey`).
fn key_setup(o: &Opts, alg: Alg, subs: &[Box<dyn Subject>]) {
    let rounds = o.rounds();
    let budget = (o.budget_ns().min(200_000_000) / rounds as u64).max(5_000_000);
    let mut ns: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); subs.len() + 1];
    let mut core_size = 0;
    for _ in 0..rounds {
        for (s, times) in subs.iter().zip(ns.iter_mut()) {
            times.push(s.key_setup(budget).ns_per_op());
        }
        if !o.core {
            let (k, size) = ours::gcm_key_setup(alg, o.backend, budget);
            ns[subs.len()].push(k.ns_per_op());
            core_size = size;
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (s, times) in subs.iter().zip(ns.iter_mut()) {
        println!(
            "{} key set-up: {:<12} {:>8.1} ns/key, size_of key object {} bytes",
            alg.name(),
            s.name(),
            median(times),
            s.key_size()
        );
    }
    if !o.core {
        println!(
            "{} key set-up: {:<12} {:>8.1} ns/key, size_of key object {} bytes (gcm_core::GcmKey)",
            alg.name(),
            "ours-core",
            median(&mut ns[subs.len()]),
            core_size
        );
    }
}

fn run_gcm(o: &Opts, results: &mut Results) -> Result<(), String> {
    let sizes = o.chunks.clone().unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    let rounds = o.rounds();
    let budget = o.budget_ns();
    for alg in Alg::ALL {
        let ops: Vec<Op> = Op::ALL
            .into_iter()
            .filter(|op| o.wanted(&format!("{} {}", alg.name(), op.name())))
            .collect();
        if ops.is_empty() {
            continue;
        }
        let mut subs = our_subjects(o, alg);
        if o.peers {
            subs.extend(
                peers::subjects(alg)
                    .into_iter()
                    .filter(|p| o.peer_wanted(p.name())),
            );
        }
        benches::gcm::cross_check(alg, &mut subs, &sizes)?;
        if o.key_setup {
            key_setup(o, alg, &subs);
        }
        let several = subs.len() > 1 || o.roofline;
        let ctr_name = match alg {
            Alg::Aes128Gcm => "AES-128-CTR",
            Alg::Aes256Gcm => "AES-256-CTR",
        };
        for &op in &ops {
            // The roofline is the same for both directions: it is measured with the first,
            // as one more column of the sweep.
            let roofline = o.roofline && op == ops[0];
            let columns = subs.len() + usize::from(roofline);
            let swept = sweep(rounds, &sizes, columns, |i, len| match subs.get_mut(i) {
                Some(s) => s.measure(op, len, budget),
                None => ours::ctr_roofline(alg, o.backend, len, ForBudget(budget)),
            });
            for (&len, mut samples) in sizes.iter().zip(swept) {
                let roof = if roofline {
                    samples.pop().unwrap_or_default()
                } else {
                    Vec::new()
                };
                for (s, smp) in subs.iter().zip(&samples) {
                    let prefix = if several {
                        format!("{:>12}: ", s.name())
                    } else {
                        String::new()
                    };
                    print_median_line(&prefix, smp, alg.name(), len, op.name());
                    let kind = if s.is_ours() { Kind::Ours } else { Kind::Peer };
                    for x in smp {
                        results.add_round(
                            alg.name(),
                            op.name(),
                            s.name(),
                            kind,
                            len,
                            x.mb_per_s(len),
                        );
                    }
                }
                if !roof.is_empty() {
                    print_median_line(
                        &format!("{:>12}: ", "roofline"),
                        &roof,
                        ctr_name,
                        len,
                        "encrypt",
                    );
                    for x in &roof {
                        for op in &ops {
                            // One name for both key sizes: one legend entry in the chart.
                            results.add_round(
                                alg.name(),
                                op.name(),
                                "AES-CTR only",
                                Kind::Roofline,
                                len,
                                x.mb_per_s(len),
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(feature = "peer-openssl")]
fn run_tls_cbc(o: &Opts, results: &mut Results) -> Result<(), String> {
    use benches::tls_cbc::{
        CbcAlg, Forced, TLS_SIZES, can_force, cross_check, our_engines, subjects,
    };
    let sizes = o.chunks.clone().unwrap_or_else(|| TLS_SIZES.to_vec());
    if !cfg!(feature = "tls-cbc") {
        println!("(built without the tls-cbc feature: OpenSSL side only)");
    }
    for alg in CbcAlg::ALL {
        let ops: Vec<Op> = Op::ALL
            .into_iter()
            .filter(|op| o.wanted(&format!("{} {}", alg.name(), op.name())))
            .collect();
        if ops.is_empty() {
            continue;
        }
        let forced = Forced {
            hash: o.hash_engine,
            cipher: o.backend,
        };
        if !can_force(alg, forced) {
            println!(
                "{}: cannot run on the forced engines on this CPU, skipped",
                alg.name()
            );
            continue;
        }
        cross_check(alg, &sizes, o.tls_engines, forced)?;
        if let Some(e) = our_engines(alg, forced) {
            println!(
                "{}: ours on {e} (cipher engine / hash engine / seal)",
                alg.name()
            );
        }
        let mut subs = subjects(alg, o.tls_engines, forced);
        for &op in &ops {
            let swept = sweep(o.rounds(), &sizes, subs.len(), |i, len| {
                subs[i].measure(op, len, o.budget_ns())
            });
            for (&len, samples) in sizes.iter().zip(&swept) {
                for (s, smp) in subs.iter().zip(samples) {
                    print_median_line(
                        &format!("{:>12}: ", s.name()),
                        smp,
                        alg.name(),
                        len,
                        op.name(),
                    );
                    let kind = if s.is_ours() { Kind::Ours } else { Kind::Peer };
                    for x in smp {
                        results.add_round(
                            alg.name(),
                            op.name(),
                            s.name(),
                            kind,
                            len,
                            x.mb_per_s(len),
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(not(feature = "peer-openssl"))]
fn run_tls_cbc(_: &Opts, _: &mut Results) -> Result<(), String> {
    Err("--tls-cbc needs the peer-openssl feature (and tls-cbc for our side)".into())
}

fn write(path: &str, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("writing {path}: {e}"))
}

fn run(o: &Opts) -> Result<(), String> {
    let available: Vec<&str> = ours::available_backends()
        .iter()
        .map(|b| b.name())
        .collect();
    println!("CPU: {}", cpu_description());
    println!(
        "our back end: {} ({}; available: {}); peers built in: {}",
        o.backend.unwrap_or_else(ours::default_backend).name(),
        if o.backend.is_some() {
            "forced"
        } else {
            "chosen for this CPU"
        },
        available.join(", "),
        peers::names()
            .into_iter()
            .filter(|p| o.peer_wanted(p))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if std::env::var_os("OPENSSL_ia32cap").is_some() {
        // aws-lc-rs and OpenSSL read it and may be held to older code than the CPU has.
        println!(
            "OPENSSL_ia32cap={} (the capabilities aws-lc-rs and OpenSSL may use)",
            std::env::var("OPENSSL_ia32cap").unwrap_or_default()
        );
    }
    println!(
        "timing: thread CPU time, {} s per measurement, {} round(s), median; AES-GCM AD {} bytes, in place, detached tag, 1 MB = 10^6 bytes",
        o.budget_ns() as f64 / 1e9,
        o.rounds(),
        benches::AD.len()
    );
    let mut results = Results::default();
    if o.gcm {
        run_gcm(o, &mut results)?;
    }
    if o.tls_cbc {
        run_tls_cbc(o, &mut results)?;
    }
    // A table only adds something when there is more than one line in it.
    let mut names: Vec<&str> = results
        .entries
        .iter()
        .map(|e| e.implementation.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let several = names.len() > 1;
    if several {
        print!("{}", results.text());
    }
    if let Some(p) = &o.csv {
        write(p, &results.csv())?;
    }
    if let Some(p) = &o.markdown {
        write(p, &results.markdown())?;
    }
    if let Some(p) = &o.plot {
        let title = format!(
            "AES-GCM throughput, {} (thread CPU time, MB/s)",
            cpu_model()
        );
        write(p, &results.svg(&title))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("speed: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("speed: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_follow_the_mode() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.budget_ns(), o.rounds()), (1_000_000_000, 1));
        let o = parse(&args("--peers")).unwrap();
        assert_eq!((o.budget_ns(), o.rounds()), (100_000_000, 7));
        let o = parse(&args("--peers --timeout 0.5 --rounds 3")).unwrap();
        assert_eq!((o.budget_ns(), o.rounds()), (500_000_000, 3));
    }

    #[test]
    fn sweep_takes_every_size_in_each_round() {
        let mut order = Vec::new();
        let samples = sweep(2, &[16, 64], 3, |column, len| {
            order.push((column, len));
            Sample {
                ops: order.len() as u64,
                ns: 1,
            }
        });
        // Round by round: both sizes, and at each size every column in turn.
        let one_round = [(0, 16), (1, 16), (2, 16), (0, 64), (1, 64), (2, 64)];
        assert_eq!(order, [one_round, one_round].concat());
        // Returned by size, then column, then round: the call numbers say which.
        let ops: Vec<Vec<Vec<u64>>> = samples
            .iter()
            .map(|by_column| {
                by_column
                    .iter()
                    .map(|r| r.iter().map(|s| s.ops).collect())
                    .collect()
            })
            .collect();
        assert_eq!(
            ops,
            [[[1, 7], [2, 8], [3, 9]], [[4, 10], [5, 11], [6, 12]],]
        );
    }

    #[test]
    fn only_peers_names_built_in_peers() {
        let o = parse(&args("--peers --only-peers rustcrypto")).unwrap();
        assert!(o.peer_wanted("rustcrypto"));
        assert!(!o.peer_wanted("openssl"));
        assert!(parse(&args("--peers")).unwrap().peer_wanted("openssl"));
        assert!(parse(&args("--peers --only-peers no-such-peer")).is_err());
    }

    #[test]
    fn chunks_and_filter() {
        let o = parse(&args("--chunks 16,1350,16384 --filter AES-128-GCM")).unwrap();
        assert_eq!(o.chunks, Some(vec![16, 1350, 16384]));
        assert!(o.wanted("AES-128-GCM seal"));
        assert!(!o.wanted("AES-256-GCM seal"));
    }

    #[test]
    fn bad_input_is_refused() {
        for bad in [
            "--chunks 16,x",
            "--timeout 0",
            "--timeout",
            "--backend nope",
            "--frobnicate",
            "--backend portable --all-backends",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }
}

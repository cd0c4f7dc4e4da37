//! `hash-floor`: how close our TLS CBC-HMAC records come to the bare hash they carry.
//!
//! Open is bound by hashing (the CBC decryption is parallel and cheap), and a stitched
//! seal hides its serial CBC chain inside the hash rounds, so both should cost little
//! more than the hash of the bytes the MAC covers. This tool sets each of our AES suites,
//! on every hash engine this CPU runs (and one AES back end), against OpenSSL's one-shot
//! SHA-1 / SHA-256 / SHA-384 of as many bytes (`openssl::sha`, the same code its HMAC
//! runs): a ratio near 1 says the record's cost is the hash, and the hash against
//! OpenSSL's is what is left to win.
//!
//! It times each call alone and keeps the fastest of many, the three kinds of call
//! interleaved in one loop: on a shared machine the median of a timed window moves by
//! 10-20% from run to run, the fastest call of thousands by well under 1%, so small
//! differences between builds or engines show. (`speed` measures throughput the way a
//! user sees it; this measures the code.) OpenSSL picks its own code for the CPU; to
//! compare our engines for CPUs without SHA-NI against its code for them, mask SHA-NI:
//! `OPENSSL_ia32cap=:~0x0000000020000000 hash-floor --hash-engine avx2 --backend aesni`.
//!
//! Usage: `hash-floor [--backend NAME] [--hash-engine NAME] [--chunks A,B,...]
//! [--calls N]`; defaults: the AES back end keys take on this CPU, every hash engine,
//! 1350 and 16384 bytes, 2000 calls of each kind.

use std::hint::black_box;
use std::time::Instant;

use benches::ours::parse_backend;
use tls_cbc_aead::{
    AD_LEN, AeadInOut, Aes128CbcSha1, Aes128CbcSha256, Aes256CbcSha1, Aes256CbcSha256,
    Aes256CbcSha384, Backend, Engines, HashEngine, Key, KeyInit, Nonce,
};

struct Options {
    backend: Option<Backend>,
    hash: Option<String>,
    chunks: Vec<usize>,
    calls: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        backend: None,
        hash: None,
        chunks: vec![1350, 16384],
        calls: 2000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--backend" => o.backend = Some(parse_backend(&value()?)?),
            "--hash-engine" => o.hash = Some(value()?),
            "--chunks" => {
                o.chunks = value()?
                    .split(',')
                    .map(|s| s.parse().map_err(|_| format!("bad size {s:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--calls" => {
                o.calls = value()?
                    .parse()
                    .ok()
                    .filter(|&n: &usize| n > 0)
                    .ok_or("--calls needs a whole number above 0")?;
            }
            "--help" | "-h" => {
                return Err("usage: hash-floor [--backend NAME] [--hash-engine NAME] \
                            [--chunks A,B,...] [--calls N]"
                    .into());
            }
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    if o.backend.is_some_and(|b| !b.is_available()) {
        return Err("this CPU cannot run the --backend asked for".into());
    }
    if let Some(h) = &o.hash
        && !HashEngine::ALL.iter().any(|e| e.name() == h)
    {
        let names: Vec<&str> = HashEngine::ALL.iter().map(|e| e.name()).collect();
        return Err(format!(
            "unknown hash engine {h:?}; one of {}",
            names.join(", ")
        ));
    }
    Ok(o)
}

/// Our suites as this tool needs them: keys on given engines, and OpenSSL's hash of the
/// MAC's algorithm.
trait Suite: AeadInOut + KeyInit {
    const NAME: &'static str;
    fn with_engines(e: Engines) -> Option<Self>;
    fn engines_here() -> Vec<Engines>;
    fn default_cipher() -> Backend;
    fn openssl_hash(data: &[u8]) -> u8;
}

macro_rules! suite {
    ($t:ty, $name:literal, $hash:path) => {
        impl Suite for $t {
            const NAME: &'static str = $name;
            fn with_engines(e: Engines) -> Option<Self> {
                <$t>::new_with_engines(&Key::<$t>::default(), e).ok()
            }
            fn engines_here() -> Vec<Engines> {
                <$t>::available_engines().collect()
            }
            fn default_cipher() -> Backend {
                <$t>::best_engines().cipher
            }
            fn openssl_hash(data: &[u8]) -> u8 {
                $hash(data)[0]
            }
        }
    };
}

suite!(Aes128CbcSha1, "AES-128-CBC-SHA1", openssl::sha::sha1);
suite!(Aes256CbcSha1, "AES-256-CBC-SHA1", openssl::sha::sha1);
suite!(Aes128CbcSha256, "AES-128-CBC-SHA256", openssl::sha::sha256);
suite!(Aes256CbcSha256, "AES-256-CBC-SHA256", openssl::sha::sha256);
suite!(Aes256CbcSha384, "AES-256-CBC-SHA384", openssl::sha::sha384);

/// Fastest open, seal and OpenSSL hash of `len` bytes, in nanoseconds, over `calls`
/// rounds of the three.
fn fastest<A: Suite>(key: &A, len: usize, calls: usize) -> [u128; 3] {
    let nonce = Nonce::<A>::try_from(&[7u8; 16][..]).expect("one block of IV");
    let ad = [1u8; AD_LEN];
    let mut record = vec![0x42u8; len];
    key.encrypt_in_place(&nonce, &ad, &mut record)
        .expect("seal");
    let sealed = record.clone();
    let covered = vec![0x42u8; AD_LEN + 2 + len];
    let mut best = [u128::MAX; 3];
    for _ in 0..calls {
        record.clear();
        record.extend_from_slice(&sealed);
        let t = Instant::now();
        let opened = key.decrypt_in_place(&nonce, &ad, &mut record);
        best[0] = best[0].min(t.elapsed().as_nanos());
        assert!(opened.is_ok() && record.len() == len, "{} open", A::NAME);

        record.fill(0x42);
        let t = Instant::now();
        key.encrypt_in_place(&nonce, &ad, &mut record)
            .expect("seal");
        best[1] = best[1].min(t.elapsed().as_nanos());
        assert_eq!(record, sealed, "{} seal", A::NAME);

        let t = Instant::now();
        black_box(A::openssl_hash(black_box(&covered)));
        best[2] = best[2].min(t.elapsed().as_nanos());
    }
    best
}

/// Measures suite `A` on every engine choice `o` selects; returns how many it measured.
fn run<A: Suite>(o: &Options) -> usize {
    let mut measured = 0;
    let cipher = o.backend.unwrap_or_else(A::default_cipher);
    for e in A::engines_here() {
        if e.cipher != cipher || o.hash.as_deref().is_some_and(|h| h != e.hash.name()) {
            continue;
        }
        let Some(key) = A::with_engines(e) else {
            continue;
        };
        measured += 1;
        for &len in &o.chunks {
            let [open, seal, hash] = fastest(&key, len, o.calls);
            println!(
                "{:<19} {:<32} {len:>6} B: open {open:>7} ns, seal {seal:>7} ns, \
                 openssl hash {hash:>7} ns; open/hash {:.3}, seal/hash {:.3}",
                A::NAME,
                e.to_string(),
                open as f64 / hash as f64,
                seal as f64 / hash as f64,
            );
        }
    }
    measured
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!(
        "fastest of {} calls each (ns); engines as cipher/hash/seal; OpenSSL hashes {} + \
         len bytes, what the MAC covers",
        o.calls,
        AD_LEN + 2
    );
    let measured = run::<Aes128CbcSha1>(&o)
        + run::<Aes256CbcSha1>(&o)
        + run::<Aes128CbcSha256>(&o)
        + run::<Aes256CbcSha256>(&o)
        + run::<Aes256CbcSha384>(&o);
    if measured == 0 {
        eprintln!("no suite runs on the engines asked for on this CPU");
        std::process::exit(1);
    }
}

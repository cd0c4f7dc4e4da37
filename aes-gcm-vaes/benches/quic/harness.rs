//! QUIC speed through rustls 0.23's `quic` API, for comparing crypto providers on what a
//! QUIC stack asks of them:
//!
//! - **packet protection**: `seal+mask` (`PacketKey::encrypt_in_place`, then
//!   `HeaderProtectionKey::encrypt_in_place` on the sample) and `unmask+open` (the
//!   reverse) of 1-RTT packets of 1200 and 1350 bytes on the wire (11-byte short header,
//!   16-byte tag), keyed through each provider's own suite (`quic_suite().keys(..)`);
//! - **quinn bulk transfer**: 64 MiB (`MIB`) over 127.0.0.1 on one stream, client and
//!   server endpoints on one current-thread tokio runtime, so one thread's CPU time is
//!   everything both ends spend: packet protection, quinn, the UDP system calls.
//!
//! Every figure is thread CPU time (`CLOCK_THREAD_CPUTIME_ID`, so time lost to other jobs
//! on a shared machine does not count). Contenders take turns round by round (`ROUNDS`,
//! default 9) and the median is reported. Before anything is timed, every contender's
//! protected packets are checked to be byte-identical.
//!
//! Shared by `benches/quic.rs` (ours and ring) and the stand-alone
//! `benches/rustls-awslc` crate (which adds aws-lc-rs without building it here).

use std::hint::black_box;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::quic::{DirectionalKeys, Suite, Version};
use rustls::{CipherSuite, Side, SupportedCipherSuite, Tls13CipherSuite};

// The `speed` tool's clock (thread CPU time) and median, not copied.
#[path = "../../../benches/src/clock.rs"]
#[allow(dead_code, unused_imports)]
mod clock;

use clock::{median, thread_cpu_ns};

/// One provider under test.
pub struct Contender {
    pub name: &'static str,
    pub provider: fn() -> CryptoProvider,
}

/// Our provider and rustls's ring provider, the contenders every run has.
#[allow(deprecated)] // rustls 0.23.48+: ring's provider lacks post-quantum groups
pub fn ours_and_ring() -> [Contender; 2] {
    [
        Contender {
            name: "aes-gcm-vaes",
            provider: aes_gcm_vaes::rustls::provider,
        },
        Contender {
            name: "ring",
            provider: rustls::crypto::ring::default_provider,
        },
    ]
}

const SUITES: [(CipherSuite, &str); 2] = [
    (CipherSuite::TLS13_AES_128_GCM_SHA256, "AES-128-GCM"),
    (CipherSuite::TLS13_AES_256_GCM_SHA384, "AES-256-GCM"),
];
const PACKET_SIZES: [usize; 2] = [1200, 1350];

/// Short header: form/fixed bits and a 2-byte packet number length, an 8-byte connection
/// ID, a 2-byte packet number.
const PN_OFFSET: usize = 9;
const HEADER: usize = PN_OFFSET + 2;
const TAG: usize = 16;
/// Packets per timed batch: ~330 KiB of 1350-byte packets, in L2 like a receive batch.
const BATCH: usize = 256;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn tls13(provider: &CryptoProvider, suite: CipherSuite) -> Option<&'static Tls13CipherSuite> {
    provider
        .cipher_suites
        .iter()
        .find_map(|s| s.tls13().filter(|t| t.common.suite == suite))
}

/// The contender's QUIC keys for `suite`: the sender's and the receiver's.
fn keys(c: &Contender, suite: CipherSuite) -> (DirectionalKeys, DirectionalKeys) {
    let quic = tls13(&(c.provider)(), suite)
        .and_then(|s| s.quic_suite())
        .unwrap_or_else(|| panic!("{} has no QUIC {suite:?}", c.name));
    let cid = [0x5a; 8];
    let tx = quic.keys(&cid, Side::Client, Version::V1).local;
    let rx = quic.keys(&cid, Side::Server, Version::V1).remote;
    (tx, rx)
}

/// Seals and masks `packet` (header, payload, room for the tag) as packet `pn`.
fn protect(tx: &DirectionalKeys, pn: u64, packet: &mut [u8]) {
    packet[0] = 0x41;
    packet[PN_OFFSET..HEADER].copy_from_slice(&(pn as u16).to_be_bytes());
    let (header, rest) = packet.split_at_mut(HEADER);
    let (payload, tag) = rest.split_at_mut(rest.len() - TAG);
    let t = tx.packet.encrypt_in_place(pn, header, payload).unwrap();
    tag.copy_from_slice(t.as_ref());
    let (header, sample) = packet.split_at_mut(PN_OFFSET + 4);
    let (first, rest) = header.split_at_mut(1);
    tx.header
        .encrypt_in_place(&sample[..16], &mut first[0], &mut rest[PN_OFFSET - 1..])
        .unwrap();
}

/// Unmasks and opens `packet` as packet `pn`; returns the plaintext length.
fn unprotect(rx: &DirectionalKeys, pn: u64, packet: &mut [u8]) -> usize {
    let (header, sample) = packet.split_at_mut(PN_OFFSET + 4);
    let (first, rest) = header.split_at_mut(1);
    rx.header
        .decrypt_in_place(&sample[..16], &mut first[0], &mut rest[PN_OFFSET - 1..])
        .unwrap();
    let (header, payload) = packet.split_at_mut(HEADER);
    rx.packet
        .decrypt_in_place(pn, header, payload)
        .unwrap()
        .len()
}

fn packets(size: usize) -> Vec<Vec<u8>> {
    (0..BATCH)
        .map(|i| (0..size).map(|j| (i * 131 + j * 7) as u8).collect())
        .collect()
}

/// Thread CPU nanoseconds per packet to seal and mask, over at least `budget_ns`.
fn time_seal(tx: &DirectionalKeys, size: usize, budget_ns: u64) -> f64 {
    let mut bufs = packets(size);
    let (mut ns, mut n, mut pn) = (0u64, 0u64, 0u64);
    for b in bufs.iter_mut() {
        protect(tx, pn, b); // warm up
    }
    while ns < budget_ns {
        let start = thread_cpu_ns();
        for b in bufs.iter_mut() {
            protect(tx, pn, black_box(b));
            pn += 1;
        }
        ns += thread_cpu_ns() - start;
        n += BATCH as u64;
    }
    black_box(&bufs);
    ns as f64 / n as f64
}

/// Thread CPU nanoseconds per packet to unmask and open, over at least `budget_ns`. Each
/// batch is copied back from sealed originals before the clock starts.
fn time_open(tx: &DirectionalKeys, rx: &DirectionalKeys, size: usize, budget_ns: u64) -> f64 {
    let mut sealed = packets(size);
    for (pn, b) in sealed.iter_mut().enumerate() {
        protect(tx, pn as u64, b);
    }
    let mut work = sealed.clone();
    let (mut ns, mut n) = (0u64, 0u64);
    let mut first = true;
    while ns < budget_ns {
        for (w, s) in work.iter_mut().zip(&sealed) {
            w.copy_from_slice(s);
        }
        let start = thread_cpu_ns();
        for (pn, w) in work.iter_mut().enumerate() {
            black_box(unprotect(rx, pn as u64, black_box(w)));
        }
        let elapsed = thread_cpu_ns() - start;
        if !std::mem::take(&mut first) {
            ns += elapsed; // the first batch warms up
            n += BATCH as u64;
        }
    }
    ns as f64 / n as f64
}

/// Every contender must produce the same protected packets (they derive the same keys
/// from the same connection ID) and open each other's.
fn check_agreement(contenders: &[Contender]) {
    for (suite, _) in SUITES {
        let keys: Vec<_> = contenders.iter().map(|c| keys(c, suite)).collect();
        for size in PACKET_SIZES {
            let mut reference: Option<Vec<u8>> = None;
            for (c, (tx, _)) in contenders.iter().zip(&keys) {
                let mut p = packets(size).swap_remove(3);
                protect(tx, 77, &mut p);
                match &reference {
                    None => reference = Some(p),
                    Some(r) => assert!(*r == p, "{} disagrees on {suite:?}", c.name),
                }
            }
            for (c, (_, rx)) in contenders.iter().zip(&keys) {
                let mut p = reference.clone().unwrap();
                let len = unprotect(rx, 77, &mut p);
                assert_eq!(len, size - HEADER - TAG, "{}", c.name);
                let original = packets(size).swap_remove(3);
                let body = HEADER..size - TAG;
                assert!(
                    p[body.clone()] == original[body],
                    "{} opens wrongly",
                    c.name
                );
                assert_eq!(
                    p[..HEADER],
                    [[0x41].as_slice(), &original[1..PN_OFFSET], &[0, 77]].concat()
                );
            }
        }
    }
}

fn print_table<const N: usize>(
    contenders: &[Contender],
    title: &str,
    columns: [String; N],
    ns: &[[f64; N]],
    bytes: [usize; N],
) {
    println!(
        "\n{title}: ns per packet, MB/s of packet, and each time / ours (x >= 1: ours faster)"
    );
    print!("  {:<12}", "provider");
    for c in &columns {
        print!(" {c:>28}");
    }
    println!();
    for (i, c) in contenders.iter().enumerate() {
        print!("  {:<12}", c.name);
        for j in 0..N {
            let t = ns[i][j];
            let mbs = bytes[j] as f64 / t * 1e3;
            print!(" {t:>8.1} {mbs:>8.0} ({:>5.2}x)", t / ns[0][j]);
        }
        println!();
    }
}

/// Packet protection table for every suite, size and direction.
pub fn packet_protection(contenders: &[Contender]) {
    check_agreement(contenders);
    let rounds = env_or("ROUNDS", 9);
    let budget = env_or("BUDGET_MS", 50) as u64 * 1_000_000;
    println!(
        "QUIC packet protection through rustls::quic, {rounds} rounds of {} ms thread CPU \
         time per cell, contenders interleaved, medians",
        budget / 1_000_000
    );
    for (suite, name) in SUITES {
        let keys: Vec<_> = contenders.iter().map(|c| keys(c, suite)).collect();
        // [contender][column][round], columns: seal 1200, open 1200, seal 1350, open 1350.
        let mut samples = vec![[(); 4].map(|_| Vec::new()); contenders.len()];
        for _ in 0..rounds {
            for (i, (tx, rx)) in keys.iter().enumerate() {
                for (k, size) in PACKET_SIZES.into_iter().enumerate() {
                    samples[i][2 * k].push(time_seal(tx, size, budget));
                    samples[i][2 * k + 1].push(time_open(tx, rx, size, budget));
                }
            }
        }
        let ns: Vec<[f64; 4]> = samples
            .iter()
            .map(|s| s.each_ref().map(|v| median(v)))
            .collect();
        let columns =
            PACKET_SIZES.map(|s| [format!("seal+mask {s} B"), format!("unmask+open {s} B")]);
        let [[a, b], [c, d]] = columns;
        print_table(
            contenders,
            name,
            [a, b, c, d],
            &ns,
            [1200, 1200, 1350, 1350],
        );
    }
}

// ---------------------------------------------------------------------------------------
// quinn

fn quinn_configs(c: &Contender, suite: CipherSuite) -> (quinn::ServerConfig, quinn::ClientConfig) {
    let base = (c.provider)();
    let initial: Suite = tls13(&base, CipherSuite::TLS13_AES_128_GCM_SHA256)
        .and_then(|s| s.quic_suite())
        .expect("an Initial suite");
    let chosen = tls13(&base, suite).expect("suite");
    // The Initial suite stays offered after the chosen one (rustls 0.23.48 and later
    // refuse QUIC without it); both ends prefer the chosen one, so it carries the data.
    let mut suites = vec![SupportedCipherSuite::Tls13(chosen)];
    if suite != CipherSuite::TLS13_AES_128_GCM_SHA256 {
        suites.push(SupportedCipherSuite::Tls13(initial.suite));
    }
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..base
    });
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let server_tls = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let client_tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
    let server = QuicServerConfig::with_initial(Arc::new(server_tls), initial).unwrap();
    let client = QuicClientConfig::with_initial(Arc::new(client_tls), initial).unwrap();
    (
        quinn::ServerConfig::with_crypto(Arc::new(server)),
        quinn::ClientConfig::new(Arc::new(client)),
    )
}

/// One transfer of `bytes` client -> server; returns thread CPU and wall nanoseconds
/// from the stream's first byte to the server's last.
fn quinn_transfer(c: &Contender, suite: CipherSuite, bytes: usize) -> (u64, u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (server_config, client_config) = quinn_configs(c, suite);
        let server =
            quinn::Endpoint::server(server_config, "127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = server.local_addr().unwrap();
        let receiver = tokio::spawn(async move {
            let conn = server.accept().await.unwrap().await.unwrap();
            let mut recv = conn.accept_uni().await.unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0;
            while let Some(n) = recv.read(&mut buf).await.unwrap() {
                got += n;
            }
            let end = (thread_cpu_ns(), std::time::Instant::now());
            conn.close(0u32.into(), b"");
            server.wait_idle().await;
            (got, end)
        });
        let client = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let conn = client
            .connect_with(client_config, addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let mut send = conn.open_uni().await.unwrap();
        let chunk = vec![0xa5u8; 64 * 1024];
        let start = (thread_cpu_ns(), std::time::Instant::now());
        let mut sent = 0;
        while sent < bytes {
            let n = chunk.len().min(bytes - sent);
            send.write_all(&chunk[..n]).await.unwrap();
            sent += n;
        }
        send.finish().unwrap();
        let (got, end) = receiver.await.unwrap();
        assert_eq!(got, bytes);
        conn.closed().await;
        client.wait_idle().await;
        (end.0 - start.0, (end.1 - start.1).as_nanos() as u64)
    })
}

/// quinn bulk transfer table for every suite.
pub fn quinn_bulk(contenders: &[Contender]) {
    let mib = env_or("MIB", 64);
    let rounds = env_or("QUINN_ROUNDS", 5);
    let bytes = mib << 20;
    println!(
        "\nquinn 0.11 bulk transfer over 127.0.0.1, {mib} MiB one way per run, client and \
         server on one thread; {rounds} rounds, contenders interleaved, medians"
    );
    for (suite, name) in SUITES {
        let mut cpu = vec![Vec::new(); contenders.len()];
        let mut wall = vec![Vec::new(); contenders.len()];
        quinn_transfer(&contenders[0], suite, 4 << 20); // warm up
        for _ in 0..rounds {
            for (i, c) in contenders.iter().enumerate() {
                let (c_ns, w_ns) = quinn_transfer(c, suite, bytes);
                cpu[i].push(bytes as f64 / c_ns as f64 * 1e3);
                wall[i].push(bytes as f64 / w_ns as f64 * 1e3);
            }
        }
        println!("\n{name}: MB/s of stream data (ratio of ours to each)");
        println!(
            "  {:<12} {:>22} {:>22}",
            "provider", "per CPU second", "wall clock"
        );
        let (c0, w0) = (median(&cpu[0]), median(&wall[0]));
        for (i, c) in contenders.iter().enumerate() {
            let (cm, wm) = (median(&cpu[i]), median(&wall[i]));
            println!(
                "  {:<12} {cm:>13.0} ({:>5.2}x) {wm:>13.0} ({:>5.2}x)",
                c.name,
                c0 / cm,
                w0 / wm
            );
        }
    }
}

/// Both parts; `QUINN=0` skips the transfer.
pub fn run(contenders: &[Contender]) {
    println!(
        "aes-gcm-vaes back end: {}",
        aes_gcm_vaes::Backend::detect().name()
    );
    packet_protection(contenders);
    if env_or("QUINN", 1) != 0 {
        quinn_bulk(contenders);
    }
}

//! Bulk transfer through an in-memory rustls 0.23 connection, for comparing crypto
//! providers on the AEAD alone: the handshake is done before timing starts, the
//! client sends full 16 KiB records, and the server decrypts them and reads the
//! plaintext out. Shared by `benches/rustls_transfer.rs` (ours against ring) and the
//! stand-alone `benches/rustls-awslc` crate (which adds aws-lc-rs).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::version::TLS13;
use rustls::{
    CipherSuite, ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection,
};

/// One provider under test.
pub struct Contender {
    pub name: &'static str,
    pub provider: fn() -> CryptoProvider,
}

const RECORD: usize = 16 * 1024;

struct Pair {
    client: ClientConnection,
    server: ServerConnection,
    wire: Vec<u8>,
    sink: Vec<u8>,
}

fn pair(contender: &Contender, suite: CipherSuite) -> Pair {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let mut provider = (contender.provider)();
    provider.cipher_suites.retain(|s| s.suite() == suite);
    assert_eq!(
        provider.cipher_suites.len(),
        1,
        "{} lacks {suite:?}",
        contender.name
    );
    let provider = Arc::new(provider);

    let mut roots = RootCertStore::empty();
    roots.add(cert.der().clone()).expect("root");
    let client_config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&TLS13])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let key_der: PrivateKeyDer<'static> = PrivatePkcs8KeyDer::from(key.serialize_der()).into();
    let server_config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&TLS13])
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .expect("server cert");

    let mut p = Pair {
        client: ClientConnection::new(Arc::new(client_config), "localhost".try_into().unwrap())
            .unwrap(),
        server: ServerConnection::new(Arc::new(server_config)).unwrap(),
        wire: Vec::with_capacity(4 * RECORD),
        sink: vec![0u8; 4 * RECORD],
    };
    while p.client.is_handshaking() || p.server.is_handshaking() {
        p.client_to_server();
        p.server_to_client();
    }
    p.server_to_client(); // session tickets
    assert_eq!(
        p.client.negotiated_cipher_suite().map(|s| s.suite()),
        Some(suite)
    );
    p
}

impl Pair {
    /// Returns the number of plaintext bytes the server read out.
    fn client_to_server(&mut self) -> usize {
        self.wire.clear();
        while self.client.wants_write() {
            self.client.write_tls(&mut self.wire).unwrap();
        }
        let mut got = 0;
        let mut rest = &self.wire[..];
        while !rest.is_empty() {
            self.server.read_tls(&mut rest).unwrap();
            self.server.process_new_packets().unwrap();
            loop {
                match self.server.reader().read(&mut self.sink) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        got
    }

    fn server_to_client(&mut self) {
        self.wire.clear();
        while self.server.wants_write() {
            self.server.write_tls(&mut self.wire).unwrap();
        }
        let mut rest = &self.wire[..];
        while !rest.is_empty() {
            self.client.read_tls(&mut rest).unwrap();
            self.client.process_new_packets().unwrap();
        }
    }

    /// Client seals `total` bytes in full records; the server opens and reads them.
    fn transfer(&mut self, total: usize, data: &[u8]) -> Duration {
        let start = Instant::now();
        let mut received = 0;
        while received < total {
            self.client.writer().write_all(data).unwrap();
            received += self.client_to_server();
        }
        start.elapsed()
    }

    /// Client seals `total` bytes; the records are dropped (sealing cost alone).
    fn seal_only(&mut self, total: usize, data: &[u8]) -> Duration {
        let start = Instant::now();
        let mut sent = 0;
        while sent < total {
            self.client.writer().write_all(data).unwrap();
            self.wire.clear();
            while self.client.wants_write() {
                self.client.write_tls(&mut self.wire).unwrap();
            }
            sent += data.len();
        }
        start.elapsed()
    }
}

fn mb_per_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Runs every contender on both TLS 1.3 AES-GCM suites and prints a table of median
/// throughputs (MB/s of plaintext, 10^6 bytes) and each one's ratio to the first
/// contender. `MIB` and `RUNS` in the environment change the amount measured.
pub fn run(contenders: &[Contender]) {
    let mib: usize = std::env::var("MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let total = mib << 20;
    let data = vec![0xa5u8; RECORD];
    println!(
        "rustls 0.23 in-memory transfer, TLS 1.3, {RECORD}-byte records, {mib} MiB per run, median of {runs}"
    );
    for suite in [
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ] {
        let mut transfer: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        let mut seal: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        // Contenders take turns run by run, so a noisy neighbour hits them alike.
        for _ in 0..runs {
            for (i, c) in contenders.iter().enumerate() {
                let mut p = pair(c, suite);
                p.transfer(RECORD * 64, &data); // warm up
                transfer[i].push(mb_per_s(total, p.transfer(total, &data)));
                let mut p = pair(c, suite);
                seal[i].push(mb_per_s(total, p.seal_only(total, &data)));
            }
        }
        let t: Vec<f64> = transfer.into_iter().map(median).collect();
        let s: Vec<f64> = seal.into_iter().map(median).collect();
        println!("\n{suite:?}");
        println!(
            "  {:<14} {:>16} {:>10} {:>16} {:>10}",
            "provider", "seal+open MB/s", "ratio", "seal-only MB/s", "ratio"
        );
        for (i, c) in contenders.iter().enumerate() {
            println!(
                "  {:<14} {:>16.0} {:>10.2} {:>16.0} {:>10.2}",
                c.name,
                t[i],
                t[i] / t[0],
                s[i],
                s[i] / s[0]
            );
        }
    }
}

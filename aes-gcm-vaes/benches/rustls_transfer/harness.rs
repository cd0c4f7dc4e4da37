//! Bulk transfer through an in-memory rustls 0.23 connection, for comparing crypto
//! providers on the AEAD alone: the handshake is done before timing starts, the
//! client sends full 16 KiB records, and the server decrypts them and reads the
//! plaintext out. Alongside, the record layer alone: each provider's
//! `MessageEncrypter`/`MessageDecrypter` for the suite, keyed with the traffic keys of
//! a real handshake, sealing and opening 16 KiB records with no connection around them. Shared by `benches/rustls_transfer.rs` (ours against ring) and the
//! stand-alone `benches/rustls-awslc` crate (which adds aws-lc-rs).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::crypto::cipher::{
    InboundOpaqueMessage, MessageDecrypter, MessageEncrypter, OutboundPlainMessage,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::version::TLS13;
use rustls::{
    CipherSuite, ClientConfig, ClientConnection, ConnectionTrafficSecrets, ContentType,
    ProtocolVersion, RootCertStore, ServerConfig, ServerConnection, SupportedCipherSuite,
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
    let mut client_config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&TLS13])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let key_der: PrivateKeyDer<'static> = PrivatePkcs8KeyDer::from(key.serialize_der()).into();
    let mut server_config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&TLS13])
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .expect("server cert");
    client_config.enable_secret_extraction = true;
    server_config.enable_secret_extraction = true;

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

/// The suite's encrypter and decrypter from `contender`, keyed with the client-to-server
/// traffic key of a fresh handshake (the only way to get a 16-byte `AeadKey`).
fn record_layer(
    contender: &Contender,
    suite: CipherSuite,
) -> (Box<dyn MessageEncrypter>, Box<dyn MessageDecrypter>) {
    let p = pair(contender, suite);
    let aead = match p.client.negotiated_cipher_suite() {
        Some(SupportedCipherSuite::Tls13(s)) => s.aead_alg,
        _ => panic!("TLS 1.3 expected"),
    };
    let key_iv = |s: ConnectionTrafficSecrets| match s {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv }
        | ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (key, iv),
        _ => panic!("AES-GCM expected"),
    };
    let (key, iv) = key_iv(p.client.dangerous_extract_secrets().expect("secrets").tx.1);
    let encrypter = aead.encrypter(key, iv);
    let (key, iv) = key_iv(p.server.dangerous_extract_secrets().expect("secrets").rx.1);
    (encrypter, aead.decrypter(key, iv))
}

fn plain(data: &[u8]) -> OutboundPlainMessage<'_> {
    OutboundPlainMessage {
        typ: ContentType::ApplicationData,
        version: ProtocolVersion::TLSv1_2,
        payload: data.into(),
    }
}

/// Seals `count` records (sequence numbers 0 up) and drops them.
fn seal_records(enc: &mut dyn MessageEncrypter, data: &[u8], count: usize) -> Duration {
    let start = Instant::now();
    for seq in 0..count as u64 {
        std::hint::black_box(enc.encrypt(plain(data), seq).unwrap());
    }
    start.elapsed()
}

/// Opens `count` records, timing only the opening: they are sealed beforehand, a
/// batch at a time so the records stay in cache as they would in a connection's
/// receive buffer. Sequence numbers start at `first_seq`: aws-lc-rs refuses to seal
/// with a TLS 1.3 sequence number it has already used, so these must follow those
/// `seal_records` used.
fn open_records(
    enc: &mut dyn MessageEncrypter,
    dec: &mut dyn MessageDecrypter,
    data: &[u8],
    first_seq: u64,
    count: usize,
) -> Duration {
    const BATCH: u64 = 32;
    let mut elapsed = Duration::ZERO;
    let mut seq = first_seq;
    let end = first_seq + count as u64;
    let mut records: Vec<Vec<u8>> = Vec::with_capacity(BATCH as usize);
    while seq < end {
        let batch = seq..(seq + BATCH).min(end);
        records.clear();
        for s in batch.clone() {
            records.push(
                enc.encrypt(plain(data), s)
                    .unwrap()
                    .payload
                    .as_ref()
                    .to_vec(),
            );
        }
        let start = Instant::now();
        for (s, record) in batch.clone().zip(records.iter_mut()) {
            let msg = InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                record,
            );
            std::hint::black_box(dec.decrypt(msg, s).unwrap());
        }
        elapsed += start.elapsed();
        seq = batch.end;
    }
    elapsed
}

fn mb_per_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e6
}

/// The best run: on a shared machine other processes only ever slow a run down, so
/// the fastest is the closest to what the code can do.
fn best(v: Vec<f64>) -> f64 {
    v.into_iter().fold(0.0, f64::max)
}

/// Runs every contender on both TLS 1.3 AES-GCM suites and prints a table of the best
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
        "rustls 0.23 in-memory transfer, TLS 1.3, {RECORD}-byte records, {mib} MiB per run, best of {runs}"
    );
    for c in contenders {
        let p = pair(c, CipherSuite::TLS13_AES_128_GCM_SHA256);
        let kx = p.client.negotiated_key_exchange_group().map(|g| g.name());
        println!("  {}: handshakes with key exchange {kx:?}", c.name);
    }
    for suite in [
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ] {
        let n = contenders.len();
        let mut transfer: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut seal: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut rec_seal: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut rec_open: Vec<Vec<f64>> = vec![Vec::new(); n];
        let records = total / RECORD;
        // Contenders take turns run by run, so a noisy neighbour hits them alike.
        for _ in 0..runs {
            for (i, c) in contenders.iter().enumerate() {
                let mut p = pair(c, suite);
                p.transfer(RECORD * 64, &data); // warm up
                transfer[i].push(mb_per_s(total, p.transfer(total, &data)));
                let mut p = pair(c, suite);
                seal[i].push(mb_per_s(total, p.seal_only(total, &data)));
                let (mut enc, mut dec) = record_layer(c, suite);
                rec_seal[i].push(mb_per_s(total, seal_records(enc.as_mut(), &data, records)));
                // The same encrypter makes the records for its decrypter, continuing
                // the sequence numbers where sealing stopped.
                rec_open[i].push(mb_per_s(
                    total,
                    open_records(enc.as_mut(), dec.as_mut(), &data, records as u64, records),
                ));
            }
        }
        let columns: [(&str, Vec<f64>); 4] = [
            (
                "connection seal+open",
                transfer.into_iter().map(best).collect(),
            ),
            ("connection seal", seal.into_iter().map(best).collect()),
            ("record seal", rec_seal.into_iter().map(best).collect()),
            ("record open", rec_open.into_iter().map(best).collect()),
        ];
        println!("\n{suite:?}: MB/s (ratio to {})", contenders[0].name);
        print!("  {:<14}", "provider");
        for (name, _) in &columns {
            print!(" {name:>22}");
        }
        println!();
        for (i, c) in contenders.iter().enumerate() {
            print!("  {:<14}", c.name);
            for (_, v) in &columns {
                print!(" {:>14.0} ({:>5.2})", v[i], v[i] / v[0]);
            }
            println!();
        }
    }
}

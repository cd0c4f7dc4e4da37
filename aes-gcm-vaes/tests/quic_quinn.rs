//! QUIC end to end with quinn over 127.0.0.1, in process: our provider on both ends and
//! against rustls's ring provider on either end, AES-128 and AES-256, megabytes each way
//! on one bidirectional stream, and a forced key update.
//!
//! Then against an independent QUIC stack in another process, aioquic
//! (`tests/data/aioquic_peer.py`: Python, its own key schedule and header protection, AES
//! from OpenSSL through pyca/cryptography): its client against our server and our client
//! against its server, each suite forced on its side, streams echoed and compared, key updates
//! from both sides. Without aioquic those cases say so and pass, unless
//! `AIOQUIC_REQUIRED` is set, as CI sets it.
//!
//! A fallback to ring's packet protection must not pass unnoticed, so our side runs
//! through a wrapper around the `quic` algorithm that `aes_gcm_vaes::rustls::provider()`
//! puts in its suites (checked to be this crate's): it counts every packet it seals,
//! opens, masks and unmasks, and the number of keys that sealed anything (one more per
//! key update). The same wrapper, told to damage one header-protection bit, must make
//! the handshake fail, against ring and against aioquic on the other end.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ClientConfig, Endpoint, ServerConfig, TransportConfig};
use rustls::crypto::cipher::{AeadKey, Iv};
use rustls::crypto::{CryptoProvider, ring};
use rustls::quic::{self as rq, Suite, Tag};
use rustls::{CipherSuite, CipherSuiteCommon, Error, SupportedCipherSuite, Tls13CipherSuite};

mod rustls_support;

use rustls_support::peer::{Peer, TempDir, cert_files, tools_present};
use rustls_support::{Identity, KeyKind, pattern};

const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------
// The counting (or sabotaging) wrapper around our QUIC algorithm

#[derive(Default, Debug)]
struct Counters {
    packet_keys: AtomicUsize,
    /// Packet keys that sealed at least one packet.
    sealing_keys: AtomicUsize,
    seals: AtomicUsize,
    opens: AtomicUsize,
    masks: AtomicUsize,
    unmasks: AtomicUsize,
}

impl Counters {
    fn get(&self, c: fn(&Self) -> &AtomicUsize) -> usize {
        c(self).load(Relaxed)
    }
}

struct Counting {
    inner: &'static dyn rq::Algorithm,
    counters: &'static Counters,
    /// Flip a bit of the packet number after masking it.
    sabotage: bool,
}

impl rq::Algorithm for Counting {
    fn packet_key(&self, key: AeadKey, iv: Iv) -> Box<dyn rq::PacketKey> {
        self.counters.packet_keys.fetch_add(1, Relaxed);
        Box::new(CountingPacketKey {
            inner: self.inner.packet_key(key, iv),
            counters: self.counters,
            sealed_any: AtomicBool::new(false),
        })
    }

    fn header_protection_key(&self, key: AeadKey) -> Box<dyn rq::HeaderProtectionKey> {
        Box::new(CountingHeaderKey {
            inner: self.inner.header_protection_key(key),
            counters: self.counters,
            sabotage: self.sabotage,
        })
    }

    fn aead_key_len(&self) -> usize {
        self.inner.aead_key_len()
    }
}

struct CountingPacketKey {
    inner: Box<dyn rq::PacketKey>,
    counters: &'static Counters,
    sealed_any: AtomicBool,
}

impl rq::PacketKey for CountingPacketKey {
    fn encrypt_in_place(&self, pn: u64, header: &[u8], payload: &mut [u8]) -> Result<Tag, Error> {
        self.counters.seals.fetch_add(1, Relaxed);
        if !self.sealed_any.swap(true, Relaxed) {
            self.counters.sealing_keys.fetch_add(1, Relaxed);
        }
        self.inner.encrypt_in_place(pn, header, payload)
    }

    fn decrypt_in_place<'a>(
        &self,
        pn: u64,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> Result<&'a [u8], Error> {
        self.counters.opens.fetch_add(1, Relaxed);
        self.inner.decrypt_in_place(pn, header, payload)
    }

    fn tag_len(&self) -> usize {
        self.inner.tag_len()
    }

    fn confidentiality_limit(&self) -> u64 {
        self.inner.confidentiality_limit()
    }

    fn integrity_limit(&self) -> u64 {
        self.inner.integrity_limit()
    }
}

struct CountingHeaderKey {
    inner: Box<dyn rq::HeaderProtectionKey>,
    counters: &'static Counters,
    sabotage: bool,
}

impl rq::HeaderProtectionKey for CountingHeaderKey {
    fn encrypt_in_place(&self, sample: &[u8], first: &mut u8, pn: &mut [u8]) -> Result<(), Error> {
        self.counters.masks.fetch_add(1, Relaxed);
        self.inner.encrypt_in_place(sample, first, pn)?;
        if self.sabotage {
            pn[0] ^= 1;
        }
        Ok(())
    }

    fn decrypt_in_place(&self, sample: &[u8], first: &mut u8, pn: &mut [u8]) -> Result<(), Error> {
        self.counters.unmasks.fetch_add(1, Relaxed);
        self.inner.decrypt_in_place(sample, first, pn)
    }

    fn sample_len(&self) -> usize {
        self.inner.sample_len()
    }
}

/// Our provider's TLS 1.3 suite, after checking that its QUIC algorithm is this crate's.
fn our_suite(suite: CipherSuite) -> &'static Tls13CipherSuite {
    let s = aes_gcm_vaes::rustls::provider()
        .cipher_suites
        .into_iter()
        .find(|s| s.suite() == suite)
        .and_then(|s| s.tls13())
        .expect("TLS 1.3 AES-GCM suite in our provider");
    let ours = match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => aes_gcm_vaes::rustls::quic::AES_128_GCM,
        _ => aes_gcm_vaes::rustls::quic::AES_256_GCM,
    };
    assert!(std::ptr::addr_eq(s.quic.unwrap(), ours));
    #[allow(deprecated)] // rustls 0.23.48+: ring's provider lacks post-quantum groups
    let ring = ring::default_provider()
        .cipher_suites
        .into_iter()
        .find_map(|r| r.tls13().filter(|r| r.common.suite == suite))
        .unwrap();
    assert!(!std::ptr::addr_eq(s.quic.unwrap(), ring.quic.unwrap()));
    s
}

/// `suite` with its QUIC algorithm wrapped, leaked (rustls wants `'static` suites), and
/// the algorithm it wraps.
fn wrapped(
    suite: CipherSuite,
    counters: &'static Counters,
    sabotage: bool,
) -> (Suite, &'static dyn rq::Algorithm) {
    let s = our_suite(suite);
    let quic: &'static Counting = Box::leak(Box::new(Counting {
        inner: s.quic.unwrap(),
        counters,
        sabotage,
    }));
    let suite: &'static Tls13CipherSuite = Box::leak(Box::new(Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: s.common.suite,
            hash_provider: s.common.hash_provider,
            confidentiality_limit: s.common.confidentiality_limit,
        },
        hkdf_provider: s.hkdf_provider,
        aead_alg: s.aead_alg,
        quic: Some(quic),
    }));
    (Suite { suite, quic }, quic.inner)
}

// ---------------------------------------------------------------------------------------
// Endpoints

/// One end: which provider, which suite, and for ours the counters of the connection's
/// suite and of the Initial suite (the same for AES-128).
#[derive(Clone, Copy)]
struct End {
    ours: bool,
    aes256: bool,
    sabotage: bool,
    counters: &'static Counters,
    initial_counters: &'static Counters,
}

impl End {
    fn new(ours: bool, aes256: bool) -> Self {
        let counters: &'static Counters = Box::leak(Box::default());
        Self {
            ours,
            aes256,
            sabotage: false,
            counters,
            initial_counters: if aes256 {
                Box::leak(Box::default())
            } else {
                counters
            },
        }
    }

    fn suite_name(&self) -> CipherSuite {
        if self.aes256 {
            CipherSuite::TLS13_AES_256_GCM_SHA384
        } else {
            CipherSuite::TLS13_AES_128_GCM_SHA256
        }
    }

    /// The provider cut down to the connection's suite, and the suite Initial packets
    /// use. For AES-256 the provider keeps the AES-128 suite too, after it: Initial
    /// packets are AES-128-GCM (RFC 9001 §5.2), and rustls 0.23.48 and later refuse a
    /// QUIC configuration whose provider lacks that suite, whatever `with_initial` is
    /// given. Both ends prefer AES-256, so it protects everything after the Initial
    /// packets (which `check_counts` sees in the counters).
    fn provider(&self) -> (Arc<CryptoProvider>, Suite) {
        let name = self.suite_name();
        let (base, suites, initial) = if self.ours {
            let (suite, _) = wrapped(name, self.counters, self.sabotage);
            if self.aes256 {
                let (ours, inner) = wrapped(
                    CipherSuite::TLS13_AES_128_GCM_SHA256,
                    self.initial_counters,
                    self.sabotage,
                );
                // The same algorithm quinn users get from the crate for `with_initial`.
                let public = aes_gcm_vaes::rustls::quic::initial_suite();
                assert!(std::ptr::addr_eq(public.quic, inner));
                (
                    aes_gcm_vaes::rustls::provider(),
                    vec![suite.suite, ours.suite],
                    ours,
                )
            } else {
                (aes_gcm_vaes::rustls::provider(), vec![suite.suite], suite)
            }
        } else {
            #[allow(deprecated)] // as above
            let p = ring::default_provider();
            let find = |n| {
                p.cipher_suites
                    .iter()
                    .find_map(|s| s.tls13().filter(|s| s.common.suite == n))
                    .unwrap()
            };
            let aes128 = find(CipherSuite::TLS13_AES_128_GCM_SHA256);
            let suites = if self.aes256 {
                vec![find(name), aes128]
            } else {
                vec![aes128]
            };
            (p, suites, aes128.quic_suite().unwrap())
        };
        let provider = CryptoProvider {
            cipher_suites: suites
                .into_iter()
                .map(SupportedCipherSuite::Tls13)
                .collect(),
            ..base
        };
        (Arc::new(provider), initial)
    }
}

/// A fresh ECDSA certificate for `localhost`, as the rustls tests make.
fn identity() -> Identity {
    rustls_support::identity(KeyKind::Ecdsa)
}

/// The application protocol both ends offer (aioquic requires one).
const ALPN: &[u8] = b"aes-gcm-vaes-test";

fn transport(idle: Duration) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.max_idle_timeout(Some(idle.try_into().unwrap()));
    // Loopback: without this, the first probe timeout assumes a 333 ms round trip and a
    // failed handshake takes three of them to time out whatever the idle timeout.
    t.initial_rtt(Duration::from_millis(5));
    Arc::new(t)
}

/// A server endpoint on 127.0.0.1 for `provider`; `initial: None` lets quinn find the
/// Initial suite in the provider, as it does for a stock configuration.
fn server_with(
    provider: Arc<CryptoProvider>,
    initial: Option<Suite>,
    id: &Identity,
    idle: Duration,
) -> Endpoint {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![id.cert_der.clone()], id.key_der())
        .unwrap();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = match initial {
        Some(initial) => QuicServerConfig::with_initial(Arc::new(tls), initial).unwrap(),
        None => QuicServerConfig::try_from(tls).unwrap(),
    };
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(transport(idle));
    Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

/// A client configuration trusting `id`, as `server_with`.
fn client_with(
    provider: Arc<CryptoProvider>,
    initial: Option<Suite>,
    id: &Identity,
    idle: Duration,
) -> ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(id.cert_der.clone()).unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = match initial {
        Some(initial) => QuicClientConfig::with_initial(Arc::new(tls), initial).unwrap(),
        None => QuicClientConfig::try_from(tls).unwrap(),
    };
    let mut config = ClientConfig::new(Arc::new(crypto));
    config.transport_config(transport(idle));
    config
}

fn server_endpoint(end: &End, id: &Identity, idle: Duration) -> Endpoint {
    let (provider, initial) = end.provider();
    server_with(provider, Some(initial), id, idle)
}

fn client_config(end: &End, id: &Identity, idle: Duration) -> ClientConfig {
    let (provider, initial) = end.provider();
    client_with(provider, Some(initial), id, idle)
}

// ---------------------------------------------------------------------------------------
// The exchange

struct Outcome {
    client: quinn::ConnectionStats,
    server: quinn::ConnectionStats,
}

/// Data for stream `index` in one direction.
fn stream_data(index: u64, to_server: bool, len: usize) -> Vec<u8> {
    pattern(len, 2 * index + u64::from(to_server))
}

/// The server's side of every round: the client's first 8 bytes say how much to send
/// back; the rest of its data is read while the answer is written.
async fn serve(conn: quinn::Connection) -> quinn::ConnectionStats {
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        let index = recv.id().index();
        let mut len = [0u8; 8];
        recv.read_exact(&mut len).await.expect("round header");
        let down = stream_data(index, false, u64::from_be_bytes(len) as usize);
        let reader = async {
            let got = recv.read_to_end(64 * MIB).await.expect("server read");
            let want = stream_data(index, true, got.len());
            assert!(got == want, "client -> server bytes differ");
            got.len()
        };
        let writer = async {
            send.write_all(&down).await.expect("server write");
            send.finish().expect("server finish");
            send.stopped().await.expect("server stream acknowledged");
        };
        tokio::join!(reader, writer);
    }
    conn.stats()
}

/// One round on a new bidirectional stream: `up` bytes to the server and `down` back,
/// at the same time; returns once both have arrived intact and been acknowledged.
async fn round(conn: &quinn::Connection, up: usize, down: usize) {
    let (mut send, mut recv) = conn.open_bi().await.expect("stream");
    let index = send.id().index();
    let up_data = stream_data(index, true, up);
    let writer = async {
        send.write_all(&(down as u64).to_be_bytes())
            .await
            .expect("round header");
        send.write_all(&up_data).await.expect("client write");
        send.finish().expect("client finish");
        send.stopped().await.expect("client stream acknowledged");
    };
    let reader = async {
        let got = recv.read_to_end(down + 1).await.expect("client read");
        assert!(
            got == stream_data(index, false, down),
            "server -> client bytes differ"
        );
    };
    tokio::join!(writer, reader);
}

/// Sealing keys used so far: Initial, Handshake and 1-RTT, plus one per key update.
fn sealing_keys(end: &End) -> usize {
    let mut n = end.counters.get(|c| &c.sealing_keys);
    if end.aes256 {
        n += end.initial_counters.get(|c| &c.sealing_keys);
    }
    n
}

/// Connects, then two rounds of `mib` MiB each way. With `key_update`, the client forces
/// a key update between them, and our ends must show exactly one more sealing key for
/// it. (quinn also updates keys once on its own within the first thousand packets, to
/// exercise the peer; the first round is long enough for that to be over.)
async fn exchange(client: End, server: End, mib: usize, key_update: bool) -> Outcome {
    let id = identity();
    let idle = Duration::from_secs(20);
    let server_ep = server_endpoint(&server, &id, idle);
    let addr = server_ep.local_addr().unwrap();
    let server_task = tokio::spawn(async move {
        let conn = server_ep
            .accept()
            .await
            .expect("incoming")
            .await
            .expect("server handshake");
        let stats = serve(conn).await;
        server_ep.wait_idle().await;
        stats
    });

    let client_ep = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let conn = client_ep
        .connect_with(client_config(&client, &id, idle), addr, "localhost")
        .unwrap()
        .await
        .expect("client handshake");
    round(&conn, mib * MIB, mib * MIB).await;
    if key_update {
        let before = (sealing_keys(&client), sealing_keys(&server));
        let ours = if client.ours { &client } else { &server };
        let before_ours = sealing_keys(ours);
        // quinn ignores a forced update while the previous one is still settling
        // (old keys kept for reordered packets), so try until a packet goes out (or
        // comes in) under new keys.
        for _ in 0..100 {
            conn.force_key_update();
            round(&conn, 1024, 1024).await;
            if sealing_keys(ours) > before_ours {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        round(&conn, mib * MIB, mib * MIB).await;
        for (end, before, name) in [(&client, before.0, "client"), (&server, before.1, "server")] {
            if end.ours {
                assert_eq!(
                    sealing_keys(end),
                    before + 1,
                    "{name}: one forced key update"
                );
            }
        }
    } else {
        round(&conn, mib * MIB, mib * MIB).await;
    }
    conn.close(0u32.into(), b"done");
    let client_stats = conn.stats();
    client_ep.wait_idle().await;
    let server_stats = server_task.await.expect("server task");
    Outcome {
        client: client_stats,
        server: server_stats,
    }
}

/// Our end really protected the traffic: every packet it sent was sealed and masked by
/// our algorithm (through the wrapper), and it opened what it received.
fn check_counts(end: &End, stats: &quinn::ConnectionStats, received: usize, what: &str) {
    let (c, i) = (end.counters, end.initial_counters);
    let total = |f: fn(&Counters) -> &AtomicUsize| c.get(f) + if end.aes256 { i.get(f) } else { 0 };
    let (seals, masks) = (total(|c| &c.seals), total(|c| &c.masks));
    let (opens, unmasks) = (total(|c| &c.opens), total(|c| &c.unmasks));
    eprintln!(
        "{what}: sealed {seals}, masked {masks}, opened {opens}, unmasked {unmasks}, \
         {} sealing keys; quinn sent {} datagrams, received {}",
        sealing_keys(end),
        stats.udp_tx.datagrams,
        stats.udp_rx.datagrams,
    );
    // A datagram carries one packet or more (coalesced); each is one seal and one mask.
    assert!(
        seals as u64 >= stats.udp_tx.datagrams,
        "{what}: {seals} seals"
    );
    assert_eq!(seals, masks, "{what}");
    // A full packet carries at most ~1.45 KB of stream data.
    assert!(
        opens >= received / 1500,
        "{what}: {opens} opens for {received} bytes"
    );
    assert!(unmasks >= opens, "{what}");
    // Initial, Handshake, 1-RTT: at least three keys sealed packets.
    assert!(sealing_keys(end) >= 3, "{what}");
    if end.aes256 {
        // Initial packets on the AES-128 suite, everything else on AES-256.
        assert!(i.get(|c| &c.seals) > 0 && i.get(|c| &c.opens) > 0, "{what}");
        assert!(c.get(|c| &c.seals) > 0 && c.get(|c| &c.opens) > 0, "{what}");
    }
}

async fn run(client_ours: bool, server_ours: bool, aes256: bool, mib: usize, key_update: bool) {
    let (client, server) = (End::new(client_ours, aes256), End::new(server_ours, aes256));
    let out = exchange(client, server, mib, key_update).await;
    for (end, stats, name) in [
        (&client, &out.client, "client"),
        (&server, &out.server, "server"),
    ] {
        if end.ours {
            check_counts(end, stats, 2 * mib * MIB, name);
        }
    }
}

#[tokio::test]
async fn aes128_ours_both_ends_4mib_each_way_with_key_update() {
    run(true, true, false, 2, true).await;
}

#[tokio::test]
async fn aes256_ours_both_ends_4mib_each_way_with_key_update() {
    run(true, true, true, 2, true).await;
}

#[tokio::test]
async fn aes128_our_client_ring_server_2mib_each_way() {
    run(true, false, false, 1, false).await;
}

#[tokio::test]
async fn aes128_ring_client_our_server_2mib_each_way_with_key_update() {
    run(false, true, false, 1, true).await;
}

#[tokio::test]
async fn aes256_our_client_ring_server_2mib_each_way_with_key_update() {
    run(true, false, true, 1, true).await;
}

#[tokio::test]
async fn aes256_ring_client_our_server_2mib_each_way() {
    run(false, true, true, 1, false).await;
}

/// The stock provider, unwrapped and with all its suites, as a quinn user would install
/// it: quinn finds the Initial suite in it by itself.
#[tokio::test]
async fn stock_provider_both_ends() {
    let id = identity();
    let idle = Duration::from_secs(20);
    let provider = Arc::new(aes_gcm_vaes::rustls::provider());
    let server = server_with(provider.clone(), None, &id, idle);
    let addr = server.local_addr().unwrap();
    let server_task = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().await.unwrap();
        serve(conn).await;
    });
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let conn = client
        .connect_with(client_with(provider, None, &id, idle), addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    round(&conn, 40_000, 30_000).await;
    conn.close(0u32.into(), b"");
    server_task.await.unwrap();
}

/// Our end damages one bit of every packet number it masks: the ring end can then
/// open nothing it sends, and the handshake must time out instead of succeeding.
async fn sabotaged(our_client: bool, aes256: bool) {
    let id = identity();
    let idle = Duration::from_millis(600);
    let mut ours = End::new(true, aes256);
    ours.sabotage = true;
    let ring_end = End::new(false, aes256);
    let (client, server) = if our_client {
        (ours, ring_end)
    } else {
        (ring_end, ours)
    };
    let server_ep = server_endpoint(&server, &id, idle);
    let addr = server_ep.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        if let Some(incoming) = server_ep.accept().await {
            assert!(incoming.await.is_err(), "server handshake must fail");
        }
    });
    handshake_times_out(&client, &id, idle, addr).await;
    assert!(masked(&ours) > 0, "our end masked (and so damaged) packets");
    accept.abort();
}

/// `client` connects to `addr` and its handshake must time out.
async fn handshake_times_out(client: &End, id: &Identity, idle: Duration, addr: SocketAddr) {
    let client_ep = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let r = client_ep
        .connect_with(client_config(client, id, idle), addr, "localhost")
        .unwrap()
        .await;
    assert!(
        matches!(r, Err(quinn::ConnectionError::TimedOut)),
        "handshake must fail: {:?}",
        r.map(|_| ())
    );
}

/// Header masks applied by our end, over both suites.
fn masked(end: &End) -> usize {
    end.counters.get(|c| &c.masks) + end.initial_counters.get(|c| &c.masks)
}

#[tokio::test]
async fn sabotaged_header_protection_fails_the_handshake() {
    tokio::join!(
        sabotaged(true, false),
        sabotaged(false, false),
        sabotaged(true, true),
        sabotaged(false, true),
    );
}

// ---------------------------------------------------------------------------------------
// Against aioquic: an independent QUIC stack in another process

/// Whether `python3` has aioquic (PyPI's `aioquic`). Without it these tests say so and
/// pass, unless `AIOQUIC_REQUIRED` is set, as CI sets it after installing it.
fn aioquic_installed() -> bool {
    tools_present(
        &[&["python3", "-c", "import aioquic"]],
        "AIOQUIC_REQUIRED",
        "python3 cannot import aioquic (pip install aioquic)",
    )
}

/// `tests/data/aioquic_peer.py` as a child process.
fn aioquic(args: &[&str]) -> Peer {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aioquic_peer.py");
    Peer::spawn("python3", &[&[script], args].concat())
}

/// The peer's next line of output, within a minute, awaited without blocking the runtime.
async fn next_line(peer: &mut Peer, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(line) = peer.try_line(what) {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} from the aioquic peer\n{}",
            peer.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `id`'s certificate and key as PEM files for the peer, in a directory removed
/// afterwards.
fn pem_files(id: &Identity) -> (TempDir, String, String) {
    let dir = TempDir::new("aioquic");
    let (cert, key) = cert_files(&dir, id);
    (dir, cert, key)
}

fn aioquic_suite(aes256: bool) -> &'static str {
    if aes256 { "aes256" } else { "aes128" }
}

/// Stream sizes each way: one byte, one packet, many packets, and two of a megabyte.
const ECHO_SIZES: [usize; 5] = [1, 1200, 100_000, MIB, MIB];

/// Our server against aioquic's client: each stream echoed back once it has all
/// arrived. Returns the bytes echoed and the connection's statistics.
async fn echo_serve(conn: quinn::Connection) -> (usize, quinn::ConnectionStats) {
    let mut echoed = 0;
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        let data = recv.read_to_end(4 * MIB).await.expect("server read");
        send.write_all(&data).await.expect("server write");
        send.finish().expect("server finish");
        echoed += data.len();
    }
    (echoed, conn.stats())
}

/// Our client against aioquic's echo server: `data` up one new stream while its echo
/// comes back, compared byte for byte.
async fn echo_round(conn: &quinn::Connection, data: &[u8]) {
    let (mut send, mut recv) = conn.open_bi().await.expect("stream");
    let writer = async {
        send.write_all(data).await.expect("client write");
        send.finish().expect("client finish");
    };
    let reader = async { recv.read_to_end(data.len() + 1).await.expect("client read") };
    let ((), got) = tokio::join!(writer, reader);
    assert!(got == data, "the echo of {} bytes differs", data.len());
}

/// aioquic's client (one suite only, a key update requested after its first stream)
/// against our server: every stream must come back intact, through our code.
async fn aioquic_client_vs_our_server(aes256: bool) {
    if !aioquic_installed() {
        return;
    }
    let id = identity();
    let (_dir, cert, _) = pem_files(&id);
    let server = End::new(true, aes256);
    let server_ep = server_endpoint(&server, &id, Duration::from_secs(20));
    let port = server_ep.local_addr().unwrap().port().to_string();
    let sizes = ECHO_SIZES.map(|n| n.to_string()).join(",");
    let suite = aioquic_suite(aes256);
    let mut peer = aioquic(&[
        "client",
        "--suite",
        suite,
        "--cafile",
        &cert,
        "--port",
        &port,
        "--sizes",
        &sizes,
        "--key-update",
    ]);
    let incoming = tokio::time::timeout(Duration::from_secs(60), server_ep.accept())
        .await
        .expect("aioquic's client did not connect")
        .expect("incoming");
    let conn = incoming.await.expect("server handshake");
    let (echoed, stats) = echo_serve(conn).await;
    let total: usize = ECHO_SIZES.iter().sum();
    assert_eq!(
        next_line(&mut peer, "summary").await,
        format!("DONE sent {total}")
    );
    assert_eq!(echoed, total);
    check_counts(
        &server,
        &stats,
        total,
        &format!("our server, aioquic client, {suite}"),
    );
    // Initial, Handshake, 1-RTT, and new keys at least once (aioquic's update; quinn
    // may make one of its own too).
    assert!(sealing_keys(&server) >= 4, "a key update");
    server_ep.wait_idle().await;
}

/// Our client against aioquic's echo server (one suite only, a key update of its own
/// after 300 kB), with a key update of ours forced after the third stream.
async fn our_client_vs_aioquic_server(aes256: bool) {
    if !aioquic_installed() {
        return;
    }
    let id = identity();
    let (_dir, cert, key) = pem_files(&id);
    let suite = aioquic_suite(aes256);
    let mut peer = aioquic(&[
        "server",
        "--suite",
        suite,
        "--cert",
        &cert,
        "--key",
        &key,
        "--key-update-after",
        "300000",
    ]);
    let line = next_line(&mut peer, "port").await;
    let port: u16 = line.strip_prefix("PORT ").unwrap().parse().unwrap();
    let client = End::new(true, aes256);
    let client_ep = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let conn = client_ep
        .connect_with(
            client_config(&client, &id, Duration::from_secs(20)),
            (Ipv4Addr::LOCALHOST, port).into(),
            "localhost",
        )
        .unwrap()
        .await
        .expect("client handshake");
    for (i, &len) in ECHO_SIZES.iter().enumerate() {
        echo_round(&conn, &pattern(len, i as u64)).await;
        if i == 2 {
            // As in `exchange`: quinn may defer a forced update, so retry until new
            // keys seal a packet.
            let before = sealing_keys(&client);
            for _ in 0..100 {
                conn.force_key_update();
                echo_round(&conn, &pattern(100, 0)).await;
                if sealing_keys(&client) > before {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(sealing_keys(&client) > before, "our key update");
        }
    }
    conn.close(0u32.into(), b"done");
    let stats = conn.stats();
    client_ep.wait_idle().await;
    let summary = next_line(&mut peer, "summary").await;
    let echoed: usize = summary
        .strip_prefix("DONE echoed ")
        .and_then(|s| s.strip_suffix(" key_update 1"))
        .unwrap_or_else(|| panic!("aioquic server: {summary}"))
        .parse()
        .unwrap();
    assert!(echoed >= ECHO_SIZES.iter().sum::<usize>());
    check_counts(
        &client,
        &stats,
        echoed,
        &format!("our client, aioquic server, {suite}"),
    );
}

#[tokio::test]
async fn aes128_aioquic_client_our_server() {
    aioquic_client_vs_our_server(false).await;
}

#[tokio::test]
async fn aes256_aioquic_client_our_server() {
    aioquic_client_vs_our_server(true).await;
}

#[tokio::test]
async fn aes128_our_client_aioquic_server() {
    our_client_vs_aioquic_server(false).await;
}

#[tokio::test]
async fn aes256_our_client_aioquic_server() {
    our_client_vs_aioquic_server(true).await;
}

/// The control: our client damaging one header-protection bit of every packet it
/// masks; aioquic must open nothing, and the handshake must time out.
#[tokio::test]
async fn sabotaged_header_protection_fails_against_aioquic() {
    if !aioquic_installed() {
        return;
    }
    for aes256 in [false, true] {
        let id = identity();
        let (_dir, cert, key) = pem_files(&id);
        let suite = aioquic_suite(aes256);
        let mut peer = aioquic(&["server", "--suite", suite, "--cert", &cert, "--key", &key]);
        let line = next_line(&mut peer, "port").await;
        let port: u16 = line.strip_prefix("PORT ").unwrap().parse().unwrap();
        let mut ours = End::new(true, aes256);
        ours.sabotage = true;
        let addr = (Ipv4Addr::LOCALHOST, port).into();
        handshake_times_out(&ours, &id, Duration::from_millis(600), addr).await;
        let masked = masked(&ours);
        assert!(masked > 0, "our end masked (and so damaged) packets");
        eprintln!("{suite}: aioquic refused our {masked} damaged packets");
    }
}

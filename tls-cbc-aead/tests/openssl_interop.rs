//! Interop with a real TLS stack: OpenSSL's `s_client` talks to OpenSSL's `s_server`
//! (`-rev`, an echo server) through a proxy in this test that knows the session keys
//! (from `s_client -keylogfile`) and, from each side's ChangeCipherSpec on, opens every
//! record with this crate and forwards a record this crate sealed instead: the Finished
//! messages, the application data both ways and the closing alerts. Both ends thus check
//! MACs, padding and explicit IVs made here, and this crate opens records made there.
//!
//! Cases: the five AES suites over TLS 1.2 (explicit IV; PRF on SHA-256, SHA-384 for the
//! SHA-384 suite), AES-128-CBC-SHA over TLS 1.1 (explicit IV, the MD5/SHA-1 PRF) and the
//! two implicit-IV suites over TLS 1.0 (the IV chained from record to record, OpenSSL's
//! empty records against BEAST included where it sends them). Encrypt-then-MAC is turned
//! off on both ends (`-no_etm`): these are MAC-then-encrypt record ciphers. OpenSSL 3 as
//! built here offers no 3DES suite; 3DES is checked by the known-answer and differential
//! tests.
//!
//! The `openssl` command must be installed: these tests fail, not skip, without it.
//! Every wait is bounded and every child is killed on the way out, pass or fail.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use aead::{AeadInOut, Nonce};
use common::Rng;
use hmac::{Hmac, Mac};
use tls_cbc_aead::*;

/// Generous: CI may run on a loaded two-core machine.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Content types of the TLS record layer.
const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Version {
    Tls10,
    Tls11,
    Tls12,
}

impl Version {
    fn flag(self) -> &'static str {
        match self {
            Version::Tls10 => "-tls1",
            Version::Tls11 => "-tls1_1",
            Version::Tls12 => "-tls1_2",
        }
    }
    fn wire(self) -> [u8; 2] {
        match self {
            Version::Tls10 => [3, 1],
            Version::Tls11 => [3, 2],
            Version::Tls12 => [3, 3],
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum PrfHash {
    /// TLS 1.0 and 1.1: P_MD5 XOR P_SHA-1 over the two halves of the secret.
    Md5Sha1,
    Sha256,
    Sha384,
}

/// One direction's record protection as this crate provides it.
trait Protection: Send {
    fn open(&mut self, ad: &[u8; AD_LEN], fragment: &[u8]) -> Option<Vec<u8>>;
    fn seal(&mut self, ad: &[u8; AD_LEN], plaintext: &[u8]) -> Vec<u8>;
}

/// TLS 1.1/1.2: the record is `IV || CBC(...)`; one stateless key for both jobs. Our
/// records take IVs of our own (from a seeded generator), never the peer's.
struct Explicit<A> {
    cipher: A,
    ivs: Rng,
}

impl<A: AeadInOut + Send> Protection for Explicit<A> {
    fn open(&mut self, ad: &[u8; AD_LEN], fragment: &[u8]) -> Option<Vec<u8>> {
        let iv_len = Nonce::<A>::default().len();
        let iv = Nonce::<A>::try_from(fragment.get(..iv_len)?).ok()?;
        let mut buf = fragment[iv_len..].to_vec();
        self.cipher.decrypt_in_place(&iv, ad, &mut buf).ok()?;
        Some(buf)
    }

    fn seal(&mut self, ad: &[u8; AD_LEN], plaintext: &[u8]) -> Vec<u8> {
        let iv = Nonce::<A>::try_from(&self.ivs.bytes(Nonce::<A>::default().len())[..])
            .expect("IV length");
        let mut buf = plaintext.to_vec();
        self.cipher
            .encrypt_in_place(&iv, ad, &mut buf)
            .expect("seal a record");
        let mut record = iv.to_vec();
        record.extend_from_slice(&buf);
        record
    }
}

/// The implicit-IV suites' stateful API, for [`Implicit`].
trait ImplicitCipher: Sized + Send {
    fn seal(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()>;
    fn open(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()>;
}

macro_rules! implicit_cipher {
    ($($ty:ty),*) => {$(
        impl ImplicitCipher for $ty {
            fn seal(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()> {
                self.seal_in_place(ad, buf)
            }
            fn open(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()> {
                self.open_in_place(ad, buf)
            }
        }
    )*};
}
implicit_cipher!(Aes128CbcSha1ImplicitIv, Aes256CbcSha1ImplicitIv);

/// TLS 1.0: each record's IV is the last ciphertext block of the one before, so the
/// opener follows the peer's records and the sealer our own (they part at the first
/// record where the two differ; with minimal padding on both sides they never do).
struct Implicit<T> {
    opener: T,
    sealer: T,
}

impl<T: ImplicitCipher> Protection for Implicit<T> {
    fn open(&mut self, ad: &[u8; AD_LEN], fragment: &[u8]) -> Option<Vec<u8>> {
        let mut buf = fragment.to_vec();
        self.opener.open(ad, &mut buf).ok()?;
        Some(buf)
    }

    fn seal(&mut self, ad: &[u8; AD_LEN], plaintext: &[u8]) -> Vec<u8> {
        let mut buf = plaintext.to_vec();
        self.sealer.seal(ad, &mut buf).expect("seal a record");
        buf
    }
}

struct Suite {
    /// OpenSSL's name for it.
    openssl: &'static str,
    /// Its IANA number, which the ServerHello must carry.
    id: u16,
    version: Version,
    prf: PrfHash,
    mac_len: usize,
    key_len: usize,
    /// The record protection on the given engines from `mac_key || enc_key || iv` (`iv`
    /// empty if explicit), our explicit IVs drawn from the seed.
    protection: fn(&[u8], u64, Engines) -> Box<dyn Protection>,
    /// Every engine choice this CPU has for the suite.
    engines: fn() -> Vec<Engines>,
}

fn explicit<A: AeadInOut + Send + 'static>(make: impl Fn() -> A, seed: u64) -> Box<dyn Protection> {
    Box::new(Explicit {
        cipher: make(),
        ivs: Rng::new(seed),
    })
}

/// (The IVs are the record chain's: no seed.)
fn implicit<T: ImplicitCipher + 'static>(make: impl Fn() -> T, _: u64) -> Box<dyn Protection> {
    Box::new(Implicit {
        opener: make(),
        sealer: make(),
    })
}

impl Suite {
    fn key_block_len(&self) -> usize {
        let iv = if self.version == Version::Tls10 {
            16
        } else {
            0
        };
        2 * (self.mac_len + self.key_len + iv)
    }

    /// The keys of one direction from the key block (RFC 5246 §6.3 order: both MAC keys,
    /// both encryption keys, both IVs), as this crate takes them.
    fn direction_key(&self, block: &[u8], dir: Dir) -> Vec<u8> {
        let (m, k) = (self.mac_len, self.key_len);
        let iv = if self.version == Version::Tls10 {
            16
        } else {
            0
        };
        let side = usize::from(dir == Dir::ServerToClient);
        let mut key = block[side * m..][..m].to_vec();
        key.extend_from_slice(&block[2 * m + side * k..][..k]);
        key.extend_from_slice(&block[2 * (m + k) + side * iv..][..iv]);
        key
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dir {
    ClientToServer,
    ServerToClient,
}

fn hmac(hash: PrfHash, md5: bool, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    macro_rules! run {
        ($h:ty) => {{
            let mut mac = <Hmac<$h> as hmac::KeyInit>::new_from_slice(key).unwrap();
            for p in parts {
                mac.update(p);
            }
            mac.finalize().into_bytes().to_vec()
        }};
    }
    match (hash, md5) {
        (PrfHash::Md5Sha1, true) => run!(md5::Md5),
        (PrfHash::Md5Sha1, false) => run!(sha1::Sha1),
        (PrfHash::Sha256, _) => run!(sha2::Sha256),
        (PrfHash::Sha384, _) => run!(sha2::Sha384),
    }
}

/// `P_hash(secret, seed)` of RFC 5246 §5, `len` bytes.
fn p_hash(hash: PrfHash, md5: bool, secret: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut a = seed.to_vec();
    while out.len() < len {
        a = hmac(hash, md5, secret, &[&a]);
        out.extend(hmac(hash, md5, secret, &[&a, seed]));
    }
    out.truncate(len);
    out
}

/// The TLS PRF: RFC 5246 §5 for TLS 1.2, RFC 2246 §5 (the secret's two halves, P_MD5 XOR
/// P_SHA-1) before it.
fn prf(hash: PrfHash, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Vec<u8> {
    let seed = [label, seed].concat();
    match hash {
        PrfHash::Md5Sha1 => {
            let half = secret.len().div_ceil(2);
            let md5 = p_hash(hash, true, &secret[..half], &seed, len);
            let sha1 = p_hash(hash, false, &secret[secret.len() - half..], &seed, len);
            md5.iter().zip(&sha1).map(|(a, b)| a ^ b).collect()
        }
        _ => p_hash(hash, false, secret, &seed, len),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// What the proxy learns from the plaintext hellos.
#[derive(Default)]
struct Hellos {
    client_random: Option<[u8; 32]>,
    server_random: Option<[u8; 32]>,
    suite: Option<u16>,
    version: Option<[u8; 2]>,
}

/// What one direction of the proxy did.
#[derive(Debug, Default)]
struct Relayed {
    /// Records opened here and replaced by ours, by content type.
    handshake: usize,
    application: usize,
    alerts: usize,
    /// Records with an empty plaintext (OpenSSL's TLS 1.0 countermeasure to BEAST).
    empty: usize,
    /// Application data bytes, as opened.
    data: Vec<u8>,
}

struct Session {
    suite: &'static Suite,
    engines: Engines,
    keylog: PathBuf,
    hellos: Mutex<Hellos>,
}

impl Session {
    /// This direction's protection, once its ChangeCipherSpec has passed: the master
    /// secret from the key log (written by `s_client` before its Finished), the key
    /// block from the hellos' randoms.
    fn protection(&self, dir: Dir) -> Result<Box<dyn Protection>, String> {
        let (client_random, server_random) = {
            let h = self.hellos.lock().unwrap();
            if h.suite != Some(self.suite.id) || h.version != Some(self.suite.version.wire()) {
                return Err(format!(
                    "negotiated suite {:04x?} version {:?}, expected {:04x} {:?}",
                    h.suite, h.version, self.suite.id, self.suite.version
                ));
            }
            (
                h.client_random.ok_or("no ClientHello seen")?,
                h.server_random.ok_or("no ServerHello seen")?,
            )
        };
        let prefix = format!("CLIENT_RANDOM {} ", hex(&client_random));
        let deadline = Instant::now() + TIMEOUT;
        let master = loop {
            let log = std::fs::read_to_string(&self.keylog).unwrap_or_default();
            if let Some(line) = log.lines().find(|l| l.starts_with(&prefix)) {
                break unhex(line[prefix.len()..].trim());
            }
            if Instant::now() > deadline {
                return Err("no master secret in the key log".into());
            }
            thread::sleep(Duration::from_millis(10));
        };
        let block = prf(
            self.suite.prf,
            &master,
            b"key expansion",
            &[server_random, client_random].concat(),
            self.suite.key_block_len(),
        );
        let seed = if dir == Dir::ClientToServer { 1 } else { 2 };
        Ok((self.suite.protection)(
            &self.suite.direction_key(&block, dir),
            seed,
            self.engines,
        ))
    }

    /// Notes the randoms, the suite and the version from a plaintext hello.
    fn note_hello(&self, fragment: &[u8]) {
        let mut h = self.hellos.lock().unwrap();
        let random = || -> Option<[u8; 32]> { fragment.get(6..38)?.try_into().ok() };
        match fragment.first() {
            Some(1) if h.client_random.is_none() => h.client_random = random(),
            Some(2) if h.server_random.is_none() => {
                h.server_random = random();
                h.version = fragment.get(4..6).and_then(|v| v.try_into().ok());
                let sid = usize::from(*fragment.get(38).unwrap_or(&0));
                h.suite = fragment
                    .get(39 + sid..41 + sid)
                    .map(|s| u16::from_be_bytes([s[0], s[1]]));
            }
            _ => {}
        }
    }
}

/// A record: its 5-byte header and its fragment.
type Record = ([u8; 5], Vec<u8>);

/// Reads one whole record, or `None` at the end of the stream.
fn read_record(from: &mut TcpStream) -> Result<Option<Record>, String> {
    let mut header = [0u8; 5];
    match from.read_exact(&mut header) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(format!("read a record header: {e}")),
    }
    let mut fragment = vec![0u8; usize::from(u16::from_be_bytes([header[3], header[4]]))];
    from.read_exact(&mut fragment)
        .map_err(|e| format!("read a record body: {e}"))?;
    Ok(Some((header, fragment)))
}

/// Forwards records from `from` to `to`: plaintext ones as they are, encrypted ones
/// opened here and sealed again here.
fn relay(
    mut from: TcpStream,
    mut to: TcpStream,
    dir: Dir,
    session: Arc<Session>,
) -> Result<Relayed, String> {
    let mut done = Relayed::default();
    let mut protection: Option<Box<dyn Protection>> = None;
    let mut seq = 0u64;
    while let Some((header, fragment)) = read_record(&mut from)? {
        let kind = header[0];
        let out = match protection.as_mut() {
            None => {
                if kind == HANDSHAKE {
                    session.note_hello(&fragment);
                }
                fragment
            }
            Some(p) => {
                let mut ad = [0u8; AD_LEN];
                ad[..8].copy_from_slice(&seq.to_be_bytes());
                ad[8..].copy_from_slice(&header[..3]);
                let plaintext = p.open(&ad, &fragment).ok_or_else(|| {
                    format!(
                        "{dir:?}: record {seq} (type {kind}, {} bytes) did not open",
                        fragment.len()
                    )
                })?;
                match kind {
                    HANDSHAKE => done.handshake += 1,
                    APPLICATION_DATA => {
                        done.application += 1;
                        done.data.extend_from_slice(&plaintext);
                    }
                    ALERT => done.alerts += 1,
                    _ => return Err(format!("{dir:?}: unexpected record type {kind}")),
                }
                done.empty += usize::from(plaintext.is_empty());
                seq += 1;
                p.seal(&ad, &plaintext)
            }
        };
        let len = u16::try_from(out.len()).map_err(|_| "record too long")?;
        let mut record = header[..3].to_vec();
        record.extend_from_slice(&len.to_be_bytes());
        record.extend_from_slice(&out);
        if to.write_all(&record).is_err() {
            break; // the receiver has gone: the test's own checks tell whether it matters
        }
        if kind == CHANGE_CIPHER_SPEC {
            protection = Some(session.protection(dir)?);
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    Ok(done)
}

/// An `openssl` child whose stdout lines arrive on a channel; killed when dropped.
struct OpenSsl {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl OpenSsl {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new("openssl")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `openssl` (it must be installed): {e}"));
        let (tx, lines) = channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            sink.lock().unwrap().push_str(&s);
        });
        let stdin = child.stdin.take();
        OpenSsl {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    fn next_line(&self, what: &str) -> String {
        self.lines.recv_timeout(TIMEOUT).unwrap_or_else(|e| {
            panic!(
                "no {what} from openssl ({e}); its stderr:\n{}",
                self.stderr.lock().unwrap()
            )
        })
    }
}

impl Drop for OpenSsl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A self-signed RSA certificate and key, made once per test process.
fn certificate() -> (String, String) {
    static FILES: Mutex<Option<(String, String)>> = Mutex::new(None);
    let mut files = FILES.lock().unwrap();
    files
        .get_or_insert_with(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("tls-cbc-openssl-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
            let status = Command::new("openssl")
                .args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                ])
                .args(["-subj", "/CN=localhost", "-keyout"])
                .arg(&key)
                .arg("-out")
                .arg(&cert)
                .stderr(Stdio::null())
                .status()
                .expect("cannot run `openssl` (it must be installed)");
            assert!(status.success(), "openssl req failed");
            (
                cert.to_str().unwrap().to_owned(),
                key.to_str().unwrap().to_owned(),
            )
        })
        .clone()
}

/// Lines of lowercase text, of lengths that give records of one to several hundred
/// blocks (the longest beyond half of the 16 KiB record limit).
fn payload_lines() -> Vec<String> {
    [
        1usize, 2, 15, 16, 17, 31, 32, 47, 100, 255, 1000, 4095, 9000,
    ]
    .iter()
    .enumerate()
    .map(|(n, &len)| {
        (0..len)
            .map(|i| char::from(b'a' + ((i * 7 + n * 3 + i / 26) % 26) as u8))
            .collect()
    })
    .collect()
}

/// Numbers the connections of this process, for their key log files.
static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

/// `s_client`'s connection to the proxy, within the deadline.
fn accept(listener: &TcpListener, client: &mut OpenSsl) -> TcpStream {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match listener.accept() {
            Ok((sock, _)) => {
                sock.set_nonblocking(false).unwrap();
                return sock;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept: {e}"),
        }
        let exited = matches!(client.child.try_wait(), Ok(Some(_)));
        if exited || Instant::now() > deadline {
            panic!(
                "s_client did not connect (exited: {exited}); its stderr:\n{}",
                client.stderr.lock().unwrap()
            );
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// One connection per engine choice of the suite.
fn run(suite: &'static Suite) {
    let engines = (suite.engines)();
    assert!(!engines.is_empty());
    for e in engines {
        connection(suite, e);
    }
}

/// One connection through the proxy, our side on `engines`.
fn connection(suite: &'static Suite, engines: Engines) {
    let (cert, key) = certificate();
    let cipher = format!("{}@SECLEVEL=0", suite.openssl);
    let common = [
        "-cipher",
        &cipher,
        suite.version.flag(),
        "-no_etm",
        "-no_ticket",
    ];
    let mut server_args = vec!["s_server", "-accept", "127.0.0.1:0", "-cert", &cert];
    server_args.extend(["-key", &key, "-rev", "-naccept", "1"]);
    server_args.extend(common);
    let server = OpenSsl::spawn(&server_args);
    // Not `-quiet`: the port the kernel gave it comes first, as `ACCEPT 127.0.0.1:<port>`.
    let port = loop {
        let line = server.next_line("ACCEPT line");
        if let Some(addr) = line.strip_prefix("ACCEPT ") {
            break addr.rsplit(':').next().unwrap().parse::<u16>().unwrap();
        }
    };
    let upstream = TcpStream::connect(("127.0.0.1", port)).expect("connect to s_server");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = listener.local_addr().unwrap().to_string();
    let keylog = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "tls-cbc-keylog-{}-{}",
        std::process::id(),
        CONNECTIONS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&keylog);
    let mut client_args = vec!["s_client", "-connect", &proxy, "-quiet"];
    let keylog_arg = keylog.to_str().unwrap();
    client_args.extend(["-keylogfile", keylog_arg]);
    client_args.extend(common);
    let mut client = OpenSsl::spawn(&client_args);

    let downstream = accept(&listener, &mut client);
    for s in [&upstream, &downstream] {
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.set_write_timeout(Some(TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
    }
    let session = Arc::new(Session {
        suite,
        engines,
        keylog: keylog.clone(),
        hellos: Mutex::default(),
    });
    let spawn_relay = |from: &TcpStream, to: &TcpStream, dir| {
        let (from, to, session) = (
            from.try_clone().unwrap(),
            to.try_clone().unwrap(),
            session.clone(),
        );
        thread::spawn(move || relay(from, to, dir, session))
    };
    let c2s = spawn_relay(&downstream, &upstream, Dir::ClientToServer);
    let s2c = spawn_relay(&upstream, &downstream, Dir::ServerToClient);

    // The lines, then `CLOSE`, on which `s_server -rev` sends close_notify and exits.
    let lines = payload_lines();
    let mut input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    input.push_str("CLOSE\n");
    let mut stdin = client.stdin.take().unwrap();
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
        stdin // kept open: s_client must not see the end of its input early
    });
    for line in &lines {
        let echoed = client.next_line("echoed line");
        let reversed: String = line.chars().rev().collect();
        assert_eq!(
            echoed,
            reversed,
            "{}: echo of a {}-byte line",
            suite.openssl,
            line.len()
        );
    }
    let up = c2s
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("{}: {e}", suite.openssl));
    let down = s2c
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("{}: {e}", suite.openssl));
    drop(feeder.join());
    drop(client);
    drop(server);
    let _ = std::fs::remove_file(&keylog);

    // Everything after the hellos went through this crate both ways: the Finished
    // messages, every byte of data (as opened here) and the server's close_notify.
    let sent: usize = lines.iter().map(|l| l.len() + 1).sum::<usize>() + "CLOSE\n".len();
    assert_eq!(up.handshake, 1, "{}: client Finished", suite.openssl);
    assert_eq!(down.handshake, 1, "{}: server Finished", suite.openssl);
    assert_eq!(up.data.len(), sent, "{}: data to the server", suite.openssl);
    assert_eq!(
        down.data.len(),
        sent - "CLOSE\n".len(),
        "{}: echo",
        suite.openssl
    );
    assert!(
        down.alerts >= 1,
        "{}: the server's close_notify",
        suite.openssl
    );
    eprintln!(
        "{} on {engines}: client->server {} handshake, {} data ({} empty), {} alert records; \
         server->client {} handshake, {} data ({} empty), {} alert records",
        suite.openssl,
        up.handshake,
        up.application,
        up.empty,
        up.alerts,
        down.handshake,
        down.application,
        down.empty,
        down.alerts
    );
}

macro_rules! suite_test {
    ($test:ident, $name:literal, $id:literal, $version:ident, $prf:ident, $mac:literal,
     $key:literal, $ty:ty, $wrap:ident) => {
        #[test]
        fn $test() {
            static SUITE: Suite = Suite {
                openssl: $name,
                id: $id,
                version: Version::$version,
                prf: PrfHash::$prf,
                mac_len: $mac,
                key_len: $key,
                protection: |key, seed, engines| {
                    let make =
                        || <$ty>::new_with_engines(key.try_into().unwrap(), engines).unwrap();
                    $wrap(make, seed)
                },
                engines: || <$ty>::available_engines().collect(),
            };
            run(&SUITE);
        }
    };
}

#[rustfmt::skip]
mod suites {
    use super::*;
    suite_test!(tls12_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls12, Sha256, 20, 16, Aes128CbcSha1, explicit);
    suite_test!(tls12_aes256_sha1, "ECDHE-RSA-AES256-SHA", 0xc014, Tls12, Sha256, 20, 32, Aes256CbcSha1, explicit);
    suite_test!(tls12_aes128_sha256, "ECDHE-RSA-AES128-SHA256", 0xc027, Tls12, Sha256, 32, 16, Aes128CbcSha256, explicit);
    suite_test!(tls12_aes256_sha256, "AES256-SHA256", 0x003d, Tls12, Sha256, 32, 32, Aes256CbcSha256, explicit);
    suite_test!(tls12_aes256_sha384, "ECDHE-RSA-AES256-SHA384", 0xc028, Tls12, Sha384, 48, 32, Aes256CbcSha384, explicit);
    suite_test!(tls11_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls11, Md5Sha1, 20, 16, Aes128CbcSha1, explicit);
    suite_test!(tls10_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls10, Md5Sha1, 20, 16, Aes128CbcSha1ImplicitIv, implicit);
    suite_test!(tls10_aes256_sha1, "ECDHE-RSA-AES256-SHA", 0xc014, Tls10, Md5Sha1, 20, 32, Aes256CbcSha1ImplicitIv, implicit);
}

//! A TLS 1.0-1.2 proxy that re-encrypts every protected record with this crate, shared by
//! the interop tests against real TLS stacks (`openssl_interop.rs`, `gnutls_interop.rs`).
//!
//! The proxy sits between a stack's client and its server. It reads the hellos as they
//! pass (randoms, the suite and version chosen), takes the master secret from the
//! client's key log (NSS `CLIENT_RANDOM` lines), derives the key block with the TLS PRF
//! of RFC 2246/5246 computed here from RustCrypto `hmac`, and from each side's
//! ChangeCipherSpec on opens every record with this crate and forwards a record this
//! crate sealed instead (its own explicit IVs). Both ends thus verify MACs, padding and
//! IVs made here, and this crate opens records made there: a record that does not open
//! ends the relay with an error that names it.
//!
//! Also here, for both stacks: the child-process wrapper (stdout lines on a channel,
//! killed when dropped), the self-signed certificate and the payload lines.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use aead::{AeadInOut, Nonce};
use hmac::{Hmac, Mac};
use tls_cbc_aead::*;

use crate::common::Rng;

/// Generous: CI may run on a loaded two-core machine.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Content types of the TLS record layer.
const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Version {
    Tls10,
    Tls11,
    Tls12,
}

impl Version {
    fn wire(self) -> [u8; 2] {
        match self {
            Version::Tls10 => [3, 1],
            Version::Tls11 => [3, 2],
            Version::Tls12 => [3, 3],
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum PrfHash {
    /// TLS 1.0 and 1.1: P_MD5 XOR P_SHA-1 over the two halves of the secret.
    Md5Sha1,
    Sha256,
    Sha384,
}

/// One direction's record protection as this crate provides it.
pub trait Protection: Send {
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
pub trait ImplicitCipher: Sized + Send {
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
#[cfg(feature = "des")]
implicit_cipher!(DesEde3CbcSha1ImplicitIv);

/// TLS 1.0: each record's IV is the last ciphertext block of the one before, so the
/// opener follows the peer's records and the sealer our own (they part at the first
/// record whose padding differs from the minimal padding we seal with).
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

/// A cipher suite at one protocol version, as the proxy runs it.
pub struct Suite {
    /// The stack's name for it.
    pub name: &'static str,
    /// Its IANA number, which the ServerHello must carry.
    pub id: u16,
    pub version: Version,
    pub prf: PrfHash,
    pub mac_len: usize,
    pub key_len: usize,
    /// The CBC block size (the IV's length).
    pub block_len: usize,
    /// The record protection on the given engines from `mac_key || enc_key || iv` (`iv`
    /// empty if explicit), our explicit IVs drawn from the seed.
    pub protection: fn(&[u8], u64, Engines) -> Box<dyn Protection>,
    /// Every engine choice this CPU has for the suite.
    pub engines: fn() -> Vec<Engines>,
    /// The choice a key makes on this CPU (`KeyInit::new`'s).
    pub best: fn() -> Engines,
}

/// A [`Suite`] for `$ty` (a type of this crate) wrapped by [`explicit`] or [`implicit`].
macro_rules! suite {
    ($name:literal, $id:literal, $version:ident, $prf:ident, $mac:literal, $key:literal,
     $block:literal, $ty:ty, $wrap:ident) => {
        tls_proxy::Suite {
            name: $name,
            id: $id,
            version: tls_proxy::Version::$version,
            prf: tls_proxy::PrfHash::$prf,
            mac_len: $mac,
            key_len: $key,
            block_len: $block,
            protection: |key, seed, engines| {
                let make = || <$ty>::new_with_engines(key.try_into().unwrap(), engines).unwrap();
                tls_proxy::$wrap(make, seed)
            },
            engines: || <$ty>::available_engines().collect(),
            best: <$ty>::best_engines,
        }
    };
}

pub fn explicit<A: AeadInOut + Send + 'static>(
    make: impl Fn() -> A,
    seed: u64,
) -> Box<dyn Protection> {
    Box::new(Explicit {
        cipher: make(),
        ivs: Rng::new(seed),
    })
}

/// (The IVs are the record chain's: no seed.)
pub fn implicit<T: ImplicitCipher + 'static>(make: impl Fn() -> T, _: u64) -> Box<dyn Protection> {
    Box::new(Implicit {
        opener: make(),
        sealer: make(),
    })
}

impl Suite {
    /// The length of the IV each direction takes from the key block: TLS 1.0's only.
    fn fixed_iv_len(&self) -> usize {
        if self.version == Version::Tls10 {
            self.block_len
        } else {
            0
        }
    }

    fn key_block_len(&self) -> usize {
        2 * (self.mac_len + self.key_len + self.fixed_iv_len())
    }

    /// The keys of one direction from the key block (RFC 5246 §6.3 order: both MAC keys,
    /// both encryption keys, both IVs), as this crate takes them.
    fn direction_key(&self, block: &[u8], dir: Dir) -> Vec<u8> {
        let (m, k, iv) = (self.mac_len, self.key_len, self.fixed_iv_len());
        let side = usize::from(dir == Dir::ServerToClient);
        let mut key = block[side * m..][..m].to_vec();
        key.extend_from_slice(&block[2 * m + side * k..][..k]);
        key.extend_from_slice(&block[2 * (m + k) + side * iv..][..iv]);
        key
    }

    /// Bytes of CBC padding (the length byte included) in a record of `fragment_len`
    /// bytes that opened to `plaintext_len`.
    fn padding_len(&self, fragment_len: usize, plaintext_len: usize) -> usize {
        let iv = if self.version == Version::Tls10 {
            0
        } else {
            self.block_len
        };
        fragment_len - iv - plaintext_len - self.mac_len
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
pub struct Relayed {
    /// Records opened here and replaced by ours, by content type.
    pub handshake: usize,
    pub application: usize,
    pub alerts: usize,
    /// Records with an empty plaintext (OpenSSL's TLS 1.0 countermeasure to BEAST).
    pub empty: usize,
    /// The longest CBC padding (length byte included) in a record opened here.
    pub max_padding: usize,
    /// The description byte of each alert opened here (0: close_notify, 20:
    /// bad_record_mac).
    pub alert_descriptions: Vec<u8>,
    /// Application data bytes, as opened.
    pub data: Vec<u8>,
}

/// How the proxy forwards what it sealed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Forward {
    /// As sealed.
    Faithfully,
    /// The first application-data record to the server with the last bit of its last
    /// byte flipped (its last block then decrypts to other bytes: the padding, and the
    /// MAC where it reaches that block): the control that shows the server checks what
    /// this crate seals, and that the test sees a rejection.
    CorruptingFirstDataToServer,
}

struct Session {
    suite: &'static Suite,
    engines: Engines,
    forward: Forward,
    keylog: PathBuf,
    hellos: Mutex<Hellos>,
}

impl Session {
    /// This direction's protection, once its ChangeCipherSpec has passed: the master
    /// secret from the key log (written by the client before its Finished), the key
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
                    ALERT => {
                        done.alerts += 1;
                        done.alert_descriptions.extend(plaintext.get(1));
                    }
                    _ => return Err(format!("{dir:?}: unexpected record type {kind}")),
                }
                done.empty += usize::from(plaintext.is_empty());
                let padding = session.suite.padding_len(fragment.len(), plaintext.len());
                done.max_padding = done.max_padding.max(padding);
                seq += 1;
                let mut sealed = p.seal(&ad, &plaintext);
                if kind == APPLICATION_DATA
                    && dir == Dir::ClientToServer
                    && session.forward == Forward::CorruptingFirstDataToServer
                    && done.application == 1
                {
                    *sealed.last_mut().unwrap() ^= 1;
                }
                sealed
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

/// The two relay threads of one connection.
pub struct Proxy {
    suite: &'static Suite,
    client_to_server: JoinHandle<Result<Relayed, String>>,
    server_to_client: JoinHandle<Result<Relayed, String>>,
}

impl Proxy {
    /// Relays between `client` (the stack's client, connected to us) and `server` (our
    /// connection to the stack's server), our side on `engines`; the master secret comes
    /// from the client's key log at `keylog`.
    pub fn start(
        suite: &'static Suite,
        engines: Engines,
        forward: Forward,
        client: &TcpStream,
        server: &TcpStream,
        keylog: &Path,
    ) -> Self {
        for s in [client, server] {
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            s.set_write_timeout(Some(TIMEOUT)).unwrap();
            s.set_nodelay(true).unwrap();
        }
        let session = Arc::new(Session {
            suite,
            engines,
            forward,
            keylog: keylog.to_owned(),
            hellos: Mutex::default(),
        });
        let spawn = |from: &TcpStream, to: &TcpStream, dir| {
            let (from, to, session) = (
                from.try_clone().unwrap(),
                to.try_clone().unwrap(),
                session.clone(),
            );
            thread::spawn(move || relay(from, to, dir, session))
        };
        Proxy {
            suite,
            client_to_server: spawn(client, server, Dir::ClientToServer),
            server_to_client: spawn(server, client, Dir::ServerToClient),
        }
    }

    /// Waits for both directions to end: what each relayed (client to server first), or
    /// a panic naming the suite and the record that failed.
    pub fn finish(self) -> (Relayed, Relayed) {
        let name = self.suite.name;
        let join = |h: JoinHandle<Result<Relayed, String>>| {
            h.join().unwrap().unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        (join(self.client_to_server), join(self.server_to_client))
    }
}

/// A child process (a stack's client or server) whose stdout lines arrive on a channel;
/// killed when dropped.
pub struct Peer {
    program: &'static str,
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Peer {
    pub fn spawn(program: &'static str, args: &[&str], envs: &[(&str, &Path)]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{program}` (it must be installed): {e}"));
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
        Peer {
            program,
            child,
            stdin,
            lines,
            stderr,
        }
    }

    /// The next line of its stdout, or a panic (with its stderr) after [`TIMEOUT`].
    pub fn next_line(&self, what: &str) -> String {
        self.lines.recv_timeout(TIMEOUT).unwrap_or_else(|e| {
            panic!(
                "no {what} from {} ({e}); its stderr:\n{}",
                self.program,
                self.stderr()
            )
        })
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A self-signed RSA certificate and key (made with the `openssl` command), once per
/// test process.
pub fn certificate() -> (String, String) {
    static FILES: Mutex<Option<(String, String)>> = Mutex::new(None);
    let mut files = FILES.lock().unwrap();
    files
        .get_or_insert_with(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("tls-cbc-cert-{}", std::process::id()));
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
pub fn payload_lines() -> Vec<String> {
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

/// A fresh path for a connection's key log (removed if it exists).
pub fn keylog_path(stack: &str) -> PathBuf {
    static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{stack}-keylog-{}-{}",
        std::process::id(),
        CONNECTIONS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// The client's connection to the proxy's listener, within the deadline.
pub fn accept(listener: &TcpListener, client: &mut Peer) -> TcpStream {
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
        let exited = client.has_exited();
        if exited || Instant::now() > deadline {
            panic!(
                "{} did not connect (exited: {exited}); its stderr:\n{}",
                client.program,
                client.stderr()
            );
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// One connection per engine choice of the suite, then the control on the CPU's default
/// choice: one whose first data record the proxy corrupts, which the server must refuse.
pub fn run_suite(suite: &'static Suite, connection: fn(&'static Suite, Engines, Forward)) {
    let engines = (suite.engines)();
    let best = (suite.best)();
    assert!(
        engines.contains(&best),
        "{}: {best} among {engines:?}",
        suite.name
    );
    for &e in &engines {
        connection(suite, e, Forward::Faithfully);
    }
    connection(suite, best, Forward::CorruptingFirstDataToServer);
}

/// The control's verdict: the corrupted record reached the server (`server` names it),
/// which echoed nothing and sent a fatal `bad_record_mac` alert, opened here.
pub fn check_refused(suite: &Suite, engines: Engines, server: &str, up: &Relayed, down: &Relayed) {
    assert!(up.application >= 1, "{}: the corrupted record", suite.name);
    assert_eq!(down.application, 0, "{}: no echo of it", suite.name);
    assert!(
        down.alert_descriptions.contains(&20),
        "{}: {server}'s bad_record_mac alert (alerts seen: {:?})",
        suite.name,
        down.alert_descriptions
    );
    eprintln!(
        "{} {:?} on {engines}, a bit flipped in our record: {server} sent alerts {:?}",
        suite.name, suite.version, down.alert_descriptions
    );
}

/// A faithful connection's verdict: everything after the hellos went through this crate
/// both ways, and opened here to what the ends sent: one Finished message each way, the
/// data (`to_server`) and its echo (`to_client`) byte for byte, and a close_notify alert
/// each way. Then a line on it for the test's output.
pub fn check_relayed(
    suite: &Suite,
    engines: Engines,
    up: &Relayed,
    down: &Relayed,
    to_server: &[u8],
    to_client: &[u8],
) {
    let name = suite.name;
    assert_eq!(up.handshake, 1, "{name}: client Finished");
    assert_eq!(down.handshake, 1, "{name}: server Finished");
    assert!(up.data == to_server, "{name}: data to the server");
    assert!(down.data == to_client, "{name}: the echo");
    assert!(
        up.alert_descriptions.contains(&0),
        "{name}: client close_notify"
    );
    assert!(
        down.alert_descriptions.contains(&0),
        "{name}: server close_notify"
    );
    report(suite, engines, up, down);
}

/// A line for the test's output on what a connection relayed.
fn report(suite: &Suite, engines: Engines, up: &Relayed, down: &Relayed) {
    let side = |r: &Relayed| {
        format!(
            "{} handshake, {} data ({} empty), {} alert records, padding up to {} bytes",
            r.handshake, r.application, r.empty, r.alerts, r.max_padding
        )
    };
    eprintln!(
        "{} {:?} on {engines}: client->server {}; server->client {}",
        suite.name,
        suite.version,
        side(up),
        side(down)
    );
}

/// A `#[test]` that runs `run` (the test file's) on a [`suite!`].
macro_rules! suite_test {
    ($test:ident, $($suite:tt)*) => {
        #[test]
        fn $test() {
            static SUITE: tls_proxy::Suite = suite!($($suite)*);
            run(&SUITE);
        }
    };
}

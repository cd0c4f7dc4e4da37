//! Interop with OpenSSL: our rustls client against `openssl s_server`, and
//! `openssl s_client` against our rustls server, for each of the six suites with the
//! suite forced on the OpenSSL side, data checked in both directions.
//!
//! The `openssl` command must be installed: these tests fail, not skip, without it.
//! Every wait is bounded and every child is killed on the way out, pass or fail.

mod rustls_support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustls::{ClientConnection, ServerConnection, StreamOwned};
use rustls_support::{Case, Identity, case, client_config, identity, server_config};

/// Generous: the machine running CI may be a loaded two-core one.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Enough for many full 16 KiB records each way through OpenSSL's stdio.
const PAYLOAD: usize = 256 * 1024;

/// Printable data, because it passes through OpenSSL's stdin/stdout: lowercase hex in
/// lines, which no `s_client`/`s_server` command letter can be mistaken for.
fn text_payload(len: usize, salt: u64) -> Vec<u8> {
    let raw = rustls_support::pattern(len / 2, salt);
    let mut out = Vec::with_capacity(len);
    for (i, b) in raw.iter().enumerate() {
        out.extend_from_slice(format!("{b:02x}").as_bytes());
        if i % 32 == 31 {
            out.pop();
            out.push(b'\n');
        }
    }
    out.truncate(len - 1);
    out.push(b'\n');
    out
}

/// A scratch directory for one test's certificate files, removed afterwards.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("rustls-openssl-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An `openssl` child with its stdout streamed to a channel and its stderr kept for
/// diagnostics; killed and reaped when dropped.
struct OpenSsl {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
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
        let mut out = child.stdout.take().unwrap();
        let (tx, stdout) = channel();
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let stdin = child.stdin.take();
        OpenSsl {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn diagnostics(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Writes `data` to the child's stdin from another thread, so that neither the
    /// pipe nor the TLS connection can block the test; the stdin handle comes back
    /// from the thread and stays open until the child is dropped.
    fn feed(&mut self, data: Vec<u8>) -> JoinHandle<ChildStdin> {
        let mut stdin = self.stdin.take().expect("stdin already fed");
        thread::spawn(move || {
            stdin.write_all(&data).expect("write to openssl stdin");
            stdin.flush().expect("flush openssl stdin");
            stdin
        })
    }

    /// Collects exactly `len` bytes of the child's stdout within the deadline.
    fn expect_output(&self, len: usize, what: &str) -> Vec<u8> {
        let deadline = Instant::now() + TIMEOUT;
        let mut got = Vec::with_capacity(len);
        while got.len() < len {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(chunk) => got.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "timed out waiting for {what}: {} of {len} bytes\nopenssl stderr:\n{}",
                    got.len(),
                    self.diagnostics()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "openssl closed stdout during {what} after {} of {len} bytes\nopenssl stderr:\n{}",
                    got.len(),
                    self.diagnostics()
                ),
            }
        }
        got
    }
}

impl Drop for OpenSsl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn set_timeouts(sock: &TcpStream) {
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    sock.set_write_timeout(Some(TIMEOUT)).unwrap();
    sock.set_nodelay(true).unwrap();
}

fn cert_files(dir: &TempDir, id: &Identity) -> (String, String) {
    let cert = dir.write("cert.pem", &id.cert_pem);
    let key = dir.write("key.pem", &id.key_pem);
    (
        cert.to_str().unwrap().to_owned(),
        key.to_str().unwrap().to_owned(),
    )
}

/// Starts `s_server` on a port the kernel picks for it (`-accept 127.0.0.1:0`) and
/// connects to that port, read back from the kernel's socket table.
///
/// Picking a free port here and handing it to `s_server` (bind port 0, release it,
/// spawn) left a window in which a concurrent test could be given the same port, and
/// a connection could land on another test's server: CI once failed with "Connection
/// reset by peer" that way. A port the child itself is listening on cannot be anyone
/// else's.
fn start_s_server(case: &Case, cert: &str, key: &str) -> (OpenSsl, TcpStream) {
    let mut args = vec![
        "s_server",
        "-accept",
        "127.0.0.1:0",
        "-cert",
        cert,
        "-key",
        key,
    ];
    // Quiet: stdout carries only application data. One connection, then exit.
    args.extend(["-quiet", "-naccept", "1"]);
    args.extend(case.openssl_args());
    let mut server = OpenSsl::spawn(&args);
    let deadline = Instant::now() + TIMEOUT;
    let port = loop {
        if let Some(port) = listening_port(server.child.id()) {
            break port;
        }
        assert!(
            !server.has_exited(),
            "s_server exited before listening:\n{}",
            server.diagnostics()
        );
        assert!(
            Instant::now() < deadline,
            "s_server did not listen in time\n{}",
            server.diagnostics()
        );
        thread::sleep(Duration::from_millis(25));
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap_or_else(|e| {
        panic!(
            "connect to s_server on {port}: {e}\n{}",
            server.diagnostics()
        )
    });
    (server, sock)
}

/// The TCP port process `pid` listens on (IPv4), if it does yet: its socket inodes from
/// `/proc/<pid>/fd`, matched against the listening sockets of `/proc/net/tcp`.
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    // Columns: sl, local_address (hex ip:port), rem_address, st (0A = LISTEN), tx:rx
    // queues, tr:when, retrnsmt, uid, timeout, inode, ...
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (local, state, inode) = (cols.get(1)?, cols.get(3)?, cols.get(9)?);
        if *state != "0A" || !inodes.iter().any(|i| i == inode) {
            return None;
        }
        u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
    })
}

/// Our client against `openssl s_server` forcing the suite.
fn our_client_vs_openssl_server(name: &str) {
    let case = case(name);
    let id = identity(case.key);
    let dir = TempDir::new(name);
    let (cert, key) = cert_files(&dir, &id);
    let (mut server, sock) = start_s_server(&case, &cert, &key);
    set_timeouts(&sock);

    let config = client_config(&case, true, &id);
    let conn = ClientConnection::new(config.into(), "localhost".try_into().unwrap()).unwrap();
    let mut tls = StreamOwned::new(conn, sock);

    let up = text_payload(PAYLOAD, 11);
    let down = text_payload(PAYLOAD, 12);

    // Client -> server first, and only then server -> client, so a blocking write on
    // one side never waits for a reader that is itself blocked writing.
    tls.write_all(&up)
        .unwrap_or_else(|e| panic!("send: {e}\n{}", server.diagnostics()));
    tls.flush().unwrap();
    assert_eq!(
        tls.conn.negotiated_cipher_suite().map(|s| s.suite()),
        Some(case.ours.suite())
    );
    assert_eq!(tls.conn.protocol_version(), Some(case.version().version));
    let got = server.expect_output(up.len(), "client -> s_server data");
    assert!(got == up, "s_server received different bytes");

    let feeder = server.feed(down.clone());
    let mut got = vec![0u8; down.len()];
    tls.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("receive: {e}\n{}", server.diagnostics()));
    assert!(got == down, "client received different bytes");
    let _stdin = feeder.join().expect("stdin feeder");

    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// `openssl s_client` forcing the suite against our server.
fn openssl_client_vs_our_server(name: &str) {
    let case = case(name);
    let id = identity(case.key);
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("127.0.0.1:{port}");
    let mut args = vec![
        "s_client",
        "-connect",
        &connect,
        "-servername",
        "localhost",
        "-quiet",
    ];
    args.extend(case.openssl_args());
    let mut client = OpenSsl::spawn(&args);

    // Accept without blocking forever if s_client never connects.
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let sock = loop {
        match listener.accept() {
            Ok((sock, _)) => break sock,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    Instant::now() < deadline && !client.has_exited(),
                    "s_client did not connect\n{}",
                    client.diagnostics()
                );
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    sock.set_nonblocking(false).unwrap();
    set_timeouts(&sock);

    let conn = ServerConnection::new(server_config(&case, true, &id).into()).unwrap();
    let mut tls = StreamOwned::new(conn, sock);

    let up = text_payload(PAYLOAD, 21);
    let down = text_payload(PAYLOAD, 22);

    let feeder = client.feed(up.clone());
    let mut got = vec![0u8; up.len()];
    tls.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("receive: {e}\n{}", client.diagnostics()));
    assert!(got == up, "server received different bytes");
    assert_eq!(
        tls.conn.negotiated_cipher_suite().map(|s| s.suite()),
        Some(case.ours.suite())
    );
    assert_eq!(tls.conn.protocol_version(), Some(case.version().version));
    let _stdin = feeder.join().expect("stdin feeder");

    tls.write_all(&down)
        .unwrap_or_else(|e| panic!("send: {e}\n{}", client.diagnostics()));
    tls.flush().unwrap();
    let got = client.expect_output(down.len(), "server -> s_client data");
    assert!(got == down, "s_client received different bytes");

    tls.conn.send_close_notify();
    let _ = tls.flush();
}

macro_rules! openssl_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn our_client_vs_openssl_s_server() {
                    super::our_client_vs_openssl_server(stringify!($name));
                }

                #[test]
                fn openssl_s_client_vs_our_server() {
                    super::openssl_client_vs_our_server(stringify!($name));
                }
            }
        )*
        #[test]
        fn every_suite_is_tested() {
            let tested = [$(stringify!($name)),*];
            assert_eq!(tested, rustls_support::ALL_CASES);
        }
    };
}

openssl_tests!(
    tls13_aes_128_gcm_sha256,
    tls13_aes_256_gcm_sha384,
    ecdhe_ecdsa_aes_128_gcm_sha256,
    ecdhe_ecdsa_aes_256_gcm_sha384,
    ecdhe_rsa_aes_128_gcm_sha256,
    ecdhe_rsa_aes_256_gcm_sha384,
);

//! Another TLS stack's command-line tool as the other end of a rustls test (OpenSSL's
//! `s_server`/`s_client`, GnuTLS's `gnutls-serv`/`gnutls-cli`) or of a QUIC test
//! (aioquic's script): the child process with its stdout streamed and its stderr kept, the port a server child listens on, the
//! certificate files it reads, the text it carries, and our server's side of a
//! connection from a client tool.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustls::{CommonState, ServerConnection, StreamOwned};

use super::{Case, Identity};

/// Generous: the machine running CI may be a loaded two-core one.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Printable data, because it passes through the tools' stdin/stdout: lowercase hex in
/// lines, which no `s_client`/`s_server` command letter or GnuTLS inline command
/// (`^...^`) can be mistaken for.
pub fn text_payload(len: usize, salt: u64) -> Vec<u8> {
    let raw = super::pattern(len / 2, salt);
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

/// Whether another stack's tools are here: every command of `probes` (a program and its
/// arguments) runs and succeeds. If not, the test says it is skipped (with `install`, how
/// to get them) and passes, unless the environment variable `required` is set, as CI
/// sets it after installing them: then it panics.
pub fn tools_present(probes: &[&[&str]], required: &str, install: &str) -> bool {
    let found = probes.iter().all(|probe| {
        Command::new(probe[0])
            .args(&probe[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !found {
        assert!(
            std::env::var_os(required).is_none(),
            "{required} is set but `{}` failed",
            probes
                .iter()
                .map(|p| p.join(" "))
                .collect::<Vec<_>>()
                .join("`, `")
        );
        eprintln!("skipped: {install}");
    }
    found
}

/// A scratch directory for one test's files, removed afterwards.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("rustls-peer-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `id`'s certificate and key as PEM files in `dir`.
pub fn cert_files(dir: &TempDir, id: &Identity) -> (String, String) {
    let cert = dir.write("cert.pem", &id.cert_pem);
    let key = dir.write("key.pem", &id.key_pem);
    (
        cert.to_str().unwrap().to_owned(),
        key.to_str().unwrap().to_owned(),
    )
}

/// A child with its stdout streamed to a channel and its stderr kept for diagnostics;
/// killed and reaped when dropped.
pub struct Peer {
    program: &'static str,
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<Vec<u8>>,
    /// Bytes of stdout received but not yet handed out (past a line or a length asked
    /// for).
    unread: Vec<u8>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Peer {
    pub fn spawn(program: &'static str, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{program}` (it must be installed): {e}"));
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
        Peer {
            program,
            child,
            stdin,
            stdout,
            unread: Vec::new(),
            stderr,
        }
    }

    pub fn diagnostics(&self) -> String {
        format!(
            "{} stderr:\n{}",
            self.program,
            String::from_utf8_lossy(&self.stderr.lock().unwrap())
        )
    }

    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for the child to exit by itself, within the deadline.
    pub fn wait_exit(&mut self) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.has_exited() {
            assert!(
                Instant::now() < deadline,
                "{} did not exit\n{}",
                self.program,
                self.diagnostics()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Writes `data` to the child's stdin from another thread, so that neither the
    /// pipe nor the TLS connection can block the test; the stdin handle comes back
    /// from the thread and stays open until the child is dropped.
    pub fn feed(&mut self, data: Vec<u8>) -> JoinHandle<ChildStdin> {
        let mut stdin = self.stdin.take().expect("stdin already fed");
        let program = self.program;
        thread::spawn(move || {
            stdin
                .write_all(&data)
                .unwrap_or_else(|e| panic!("write to {program}'s stdin: {e}"));
            stdin.flush().expect("flush stdin");
            stdin
        })
    }

    /// Collects exactly `len` bytes of the child's stdout within the deadline.
    pub fn expect_output(&mut self, len: usize, what: &str) -> Vec<u8> {
        let deadline = Instant::now() + TIMEOUT;
        let mut got = std::mem::take(&mut self.unread);
        while got.len() < len {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(chunk) => got.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "timed out waiting for {what}: {} of {len} bytes\n{}",
                    got.len(),
                    self.diagnostics()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{} closed stdout during {what} after {} of {len} bytes\n{}",
                    self.program,
                    got.len(),
                    self.diagnostics()
                ),
            }
        }
        self.unread = got.split_off(len);
        got
    }

    /// The child's next line of stdout (without its newline) if a whole one has
    /// arrived, else `None`; never blocks, so an async test can poll it between
    /// awaits. Panics with the child's stderr if stdout closes first.
    pub fn try_line(&mut self, what: &str) -> Option<String> {
        loop {
            if let Some(end) = self.unread.iter().position(|&b| b == b'\n') {
                let rest = self.unread.split_off(end + 1);
                let mut line = std::mem::replace(&mut self.unread, rest);
                line.pop();
                return Some(String::from_utf8(line).expect("a text line"));
            }
            match self.stdout.try_recv() {
                Ok(chunk) => self.unread.extend_from_slice(&chunk),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => {
                    let _ = self.child.wait(); // its stderr is then complete
                    thread::sleep(Duration::from_millis(50));
                    panic!(
                        "{} exited before its {what}\n{}",
                        self.program,
                        self.diagnostics()
                    );
                }
            }
        }
    }

    /// A connection to this child, a server listening on a port the kernel picked for
    /// it (`127.0.0.1:0` or `-p 0`), read back from the kernel's socket table.
    ///
    /// Picking a free port here and handing it to the server (bind port 0, release it,
    /// spawn) left a window in which a concurrent test could be given the same port, and
    /// a connection could land on another test's server: CI once failed with "Connection
    /// reset by peer" that way. A port the child itself is listening on cannot be anyone
    /// else's.
    pub fn connect(&mut self) -> TcpStream {
        let deadline = Instant::now() + TIMEOUT;
        let port = loop {
            if let Some(port) = listening_port(self.child.id()) {
                break port;
            }
            assert!(
                !self.has_exited(),
                "{} exited before listening:\n{}",
                self.program,
                self.diagnostics()
            );
            assert!(
                Instant::now() < deadline,
                "{} did not listen in time\n{}",
                self.program,
                self.diagnostics()
            );
            thread::sleep(Duration::from_millis(25));
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap_or_else(|e| {
            panic!(
                "connect to {} on {port}: {e}\n{}",
                self.program,
                self.diagnostics()
            )
        });
        set_timeouts(&sock);
        sock
    }

    /// This child's connection to `listener`, without waiting forever if it never
    /// connects.
    pub fn accept_from(&mut self, listener: &TcpListener) -> TcpStream {
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + TIMEOUT;
        let sock = loop {
            match listener.accept() {
                Ok((sock, _)) => break sock,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        Instant::now() < deadline && !self.has_exited(),
                        "{} did not connect\n{}",
                        self.program,
                        self.diagnostics()
                    );
                    thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        sock.set_nonblocking(false).unwrap();
        set_timeouts(&sock);
        sock
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The connection runs the case's suite at its version.
pub fn check_negotiated(conn: &CommonState, case: &Case) {
    assert_eq!(
        conn.negotiated_cipher_suite().map(|s| s.suite()),
        Some(case.ours.suite())
    );
    assert_eq!(conn.protocol_version(), Some(case.version().version));
}

/// Our server against a client tool that sends its stdin and prints what it receives:
/// `input`, fed to its stdin, must arrive here as `up`; then `down`, sent back, must come
/// out of its stdout. Ends with our close_notify.
pub fn serve_stdio_client(
    tls: &mut StreamOwned<ServerConnection, TcpStream>,
    client: &mut Peer,
    case: &Case,
    input: Vec<u8>,
    up: &[u8],
    down: &[u8],
) {
    let feeder = client.feed(input);
    let mut got = vec![0u8; up.len()];
    tls.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("receive: {e}\n{}", client.diagnostics()));
    assert!(got == up, "server received different bytes");
    check_negotiated(&tls.conn, case);
    let _stdin = feeder.join().expect("stdin feeder");

    tls.write_all(down)
        .unwrap_or_else(|e| panic!("send: {e}\n{}", client.diagnostics()));
    tls.flush().unwrap();
    let got = client.expect_output(down.len(), "server -> client data");
    assert!(got == down, "{} received different bytes", client.program);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

fn set_timeouts(sock: &TcpStream) {
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    sock.set_write_timeout(Some(TIMEOUT)).unwrap();
    sock.set_nodelay(true).unwrap();
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

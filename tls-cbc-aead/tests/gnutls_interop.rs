//! Interop with a second, independent TLS stack: GnuTLS's `gnutls-cli` talks to
//! `gnutls-serv --echo` through the proxy of `common/tls_proxy.rs`, which takes the master
//! secret from the client's key log (`SSLKEYLOGFILE`) and, from each side's
//! ChangeCipherSpec on, opens every record with this crate and forwards a record this
//! crate sealed instead: the Finished messages, the data both ways and the closing
//! alerts. GnuTLS's record layer (its own CBC, MAC and padding checks, written apart from
//! OpenSSL's) verifies ours, and we open its records.
//!
//! Cases: every suite of this crate over TLS 1.2 (the 3DES one included, which OpenSSL 3
//! no longer offers), AES-128 and 3DES with SHA-1 over TLS 1.1, and the three implicit-IV
//! suites over TLS 1.0, each on every engine choice the CPU has. Encrypt-then-MAC is
//! turned off (`%NO_ETM`); the extended master secret stays on (the key log carries the
//! secret either way).
//!
//! GnuTLS's tools (Debian's `gnutls-bin`) are not on a fresh machine: without
//! `gnutls-cli` and `gnutls-serv` these tests say so and pass, unless `GNUTLS_REQUIRED`
//! is set, as CI sets it after installing them. The self-signed certificate is made with
//! the `openssl` command. Every wait is bounded and every child is killed on the way out.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Instant;

mod common;
#[macro_use]
#[path = "common/tls_proxy.rs"]
mod tls_proxy;

use tls_cbc_aead::Engines;
use tls_proxy::{Forward, Peer, Proxy, Suite, TIMEOUT, Version};

/// Whether the tests can run: GnuTLS's tools are installed, or (if not) a panic when CI
/// requires them.
fn gnutls_installed() -> bool {
    let found = ["gnutls-cli", "gnutls-serv"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !found {
        assert!(
            std::env::var_os("GNUTLS_REQUIRED").is_none(),
            "GNUTLS_REQUIRED is set but gnutls-cli/gnutls-serv do not run"
        );
        eprintln!("skipped: gnutls-cli/gnutls-serv not installed (Debian: gnutls-bin)");
    }
    found
}

/// The GnuTLS priority string that allows exactly this suite at this version, without
/// encrypt-then-MAC.
fn priority(suite: &Suite) -> String {
    let version = match suite.version {
        Version::Tls10 => "+VERS-TLS1.0",
        Version::Tls11 => "+VERS-TLS1.1",
        Version::Tls12 => "+VERS-TLS1.2",
    };
    format!(
        "NONE:{version}:{}:+COMP-NULL:+SIGN-ALL:+GROUP-ALL:%NO_ETM",
        suite.name
    )
}

/// The port `gnutls-serv` listens on over IPv4 once it does: it takes `-p 0` (a port the
/// kernel picks) but does not print the port, so it is read from `/proc`: the inodes of
/// the server's sockets, matched against the listening sockets of `/proc/net/tcp`.
fn listening_port(server: &mut Peer) -> u16 {
    let fds = format!("/proc/{}/fd", server.child.id());
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let inodes: Vec<String> = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter_map(|link| {
                let link = link.to_str()?;
                Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
            })
            .collect();
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        // Fields: sl, local address:port (hex), remote, state (0A: listening), tx:rx,
        // tr:when, retransmits, uid, timeout, inode.
        for line in table.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                return u16::from_str_radix(port, 16).unwrap();
            }
        }
        if server.has_exited() || Instant::now() > deadline {
            panic!(
                "gnutls-serv is not listening (exited: {}); its stderr:\n{}",
                server.has_exited(),
                server.stderr()
            );
        }
        thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Every engine choice of the suite, and the control, if GnuTLS is installed.
fn run(suite: &'static Suite) {
    if gnutls_installed() {
        tls_proxy::run_suite(suite, connection);
    }
}

/// One connection through the proxy, our side on `engines`.
fn connection(suite: &'static Suite, engines: Engines, forward: Forward) {
    let (cert, key) = tls_proxy::certificate();
    let priority = priority(suite);
    let server_args = [
        "--echo",
        "-p",
        "0",
        "--x509certfile",
        &cert,
        "--x509keyfile",
        &key,
        "--priority",
        &priority,
    ];
    let mut server = Peer::spawn("gnutls-serv", &server_args, &[]);
    let port = listening_port(&mut server);
    let upstream = TcpStream::connect(("127.0.0.1", port)).expect("connect to gnutls-serv");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port().to_string();
    let keylog = tls_proxy::keylog_path("gnutls");
    // Its informational lines go to a file, so that stdout carries only the data.
    let info = keylog.with_extension("log");
    let client_args = [
        "--insecure",
        "--logfile",
        info.to_str().unwrap(),
        "--priority",
        &priority,
        "-p",
        &proxy_port,
        "127.0.0.1",
    ];
    let mut client = Peer::spawn("gnutls-cli", &client_args, &[("SSLKEYLOGFILE", &keylog)]);

    let downstream = tls_proxy::accept(&listener, &mut client);
    let proxy = Proxy::start(suite, engines, forward, &downstream, &upstream, &keylog);
    let lines = tls_proxy::payload_lines();
    let mut stdin = client.stdin.take().unwrap();

    if forward == Forward::CorruptingFirstDataToServer {
        // One line, in a record the server must reject with a fatal alert, after which
        // both ends close.
        let _ = writeln!(stdin, "{}", lines[0]);
        let (up, down) = proxy.finish();
        drop(stdin);
        drop(client);
        drop(server);
        let _ = std::fs::remove_file(&keylog);
        let _ = std::fs::remove_file(&info);
        tls_proxy::check_refused(suite, engines, "gnutls-serv", &up, &down);
        return;
    }

    // The lines, each in records of its own and echoed before the next is sent; then the
    // end of the client's input, on which it sends close_notify and the server closes.
    for line in &lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("write to gnutls-cli");
        let echoed = client.next_line("echoed line");
        assert_eq!(
            echoed,
            *line,
            "{}: echo of a {}-byte line; gnutls-cli's log:\n{}",
            suite.name,
            line.len(),
            std::fs::read_to_string(&info).unwrap_or_default()
        );
    }
    drop(stdin);
    let (up, down) = proxy.finish();
    drop(client);
    drop(server);
    let _ = std::fs::remove_file(&keylog);
    let _ = std::fs::remove_file(&info);

    // `gnutls-serv --echo` sends each record's data back as it came.
    let sent: String = lines.iter().map(|l| format!("{l}\n")).collect();
    tls_proxy::check_relayed(suite, engines, &up, &down, sent.as_bytes(), sent.as_bytes());
}

// GnuTLS priority items, IANA number, version, PRF hash, MAC, key and block lengths, our
// type, IV kind.
#[rustfmt::skip]
mod suites {
    use super::*;
    use tls_cbc_aead::*;
    suite_test!(tls12_aes128_sha1, "+ECDHE-RSA:+AES-128-CBC:+SHA1", 0xc013, Tls12, Sha256, 20, 16, 16, Aes128CbcSha1, explicit);
    suite_test!(tls12_aes256_sha1, "+ECDHE-RSA:+AES-256-CBC:+SHA1", 0xc014, Tls12, Sha256, 20, 32, 16, Aes256CbcSha1, explicit);
    suite_test!(tls12_aes128_sha256, "+ECDHE-RSA:+AES-128-CBC:+SHA256", 0xc027, Tls12, Sha256, 32, 16, 16, Aes128CbcSha256, explicit);
    suite_test!(tls12_aes256_sha256, "+RSA:+AES-256-CBC:+SHA256", 0x003d, Tls12, Sha256, 32, 32, 16, Aes256CbcSha256, explicit);
    suite_test!(tls12_aes256_sha384, "+ECDHE-RSA:+AES-256-CBC:+SHA384", 0xc028, Tls12, Sha384, 48, 32, 16, Aes256CbcSha384, explicit);
    #[cfg(feature = "des")]
    suite_test!(tls12_3des_sha1, "+ECDHE-RSA:+3DES-CBC:+SHA1", 0xc012, Tls12, Sha256, 20, 24, 8, DesEde3CbcSha1, explicit);
    suite_test!(tls11_aes128_sha1, "+ECDHE-RSA:+AES-128-CBC:+SHA1", 0xc013, Tls11, Md5Sha1, 20, 16, 16, Aes128CbcSha1, explicit);
    #[cfg(feature = "des")]
    suite_test!(tls11_3des_sha1, "+RSA:+3DES-CBC:+SHA1", 0x000a, Tls11, Md5Sha1, 20, 24, 8, DesEde3CbcSha1, explicit);
    suite_test!(tls10_aes128_sha1, "+ECDHE-RSA:+AES-128-CBC:+SHA1", 0xc013, Tls10, Md5Sha1, 20, 16, 16, Aes128CbcSha1ImplicitIv, implicit);
    suite_test!(tls10_aes256_sha1, "+ECDHE-RSA:+AES-256-CBC:+SHA1", 0xc014, Tls10, Md5Sha1, 20, 32, 16, Aes256CbcSha1ImplicitIv, implicit);
    #[cfg(feature = "des")]
    suite_test!(tls10_3des_sha1, "+ECDHE-RSA:+3DES-CBC:+SHA1", 0xc012, Tls10, Md5Sha1, 20, 24, 8, DesEde3CbcSha1ImplicitIv, implicit);
}

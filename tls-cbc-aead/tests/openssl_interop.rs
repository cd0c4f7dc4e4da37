//! Interop with a real TLS stack: OpenSSL's `s_client` talks to OpenSSL's `s_server`
//! (`-rev`, an echo server) through the proxy of `common/tls_proxy.rs`, which knows the
//! session keys (from `s_client -keylogfile`) and, from each side's ChangeCipherSpec on,
//! opens every record with this crate and forwards a record this crate sealed instead:
//! the Finished messages, the application data both ways and the closing alerts. Both
//! ends thus check MACs, padding and explicit IVs made here, and this crate opens records
//! made there.
//!
//! Cases: the five AES suites over TLS 1.2 (explicit IV; PRF on SHA-256, SHA-384 for the
//! SHA-384 suite), AES-128-CBC-SHA over TLS 1.1 (explicit IV, the MD5/SHA-1 PRF) and the
//! two implicit-IV suites over TLS 1.0 (the IV chained from record to record, OpenSSL's
//! empty records against BEAST included where it sends them). Encrypt-then-MAC is turned
//! off on both ends (`-no_etm`): these are MAC-then-encrypt record ciphers. OpenSSL 3 as
//! built here offers no 3DES suite; `gnutls_interop.rs` runs those against GnuTLS.
//!
//! The `openssl` command must be installed: these tests fail, not skip, without it.
//! Every wait is bounded and every child is killed on the way out, pass or fail.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::thread;

mod common;
#[macro_use]
#[path = "common/tls_proxy.rs"]
mod tls_proxy;

use tls_cbc_aead::Engines;
use tls_proxy::{Forward, Peer, Proxy, Suite, Version};

fn version_flag(version: Version) -> &'static str {
    match version {
        Version::Tls10 => "-tls1",
        Version::Tls11 => "-tls1_1",
        Version::Tls12 => "-tls1_2",
    }
}

fn rev(line: &str) -> String {
    line.chars().rev().collect()
}

/// Every engine choice of the suite, and the control.
fn run(suite: &'static Suite) {
    tls_proxy::run_suite(suite, connection);
}

/// One connection through the proxy, our side on `engines`.
fn connection(suite: &'static Suite, engines: Engines, forward: Forward) {
    let (cert, key) = tls_proxy::certificate();
    let cipher = format!("{}@SECLEVEL=0", suite.name);
    let common = [
        "-cipher",
        &cipher,
        version_flag(suite.version),
        "-no_etm",
        "-no_ticket",
    ];
    let mut server_args = vec!["s_server", "-accept", "127.0.0.1:0", "-cert", &cert];
    server_args.extend(["-key", &key, "-rev", "-naccept", "1"]);
    server_args.extend(common);
    let server = Peer::spawn("openssl", &server_args, &[]);
    // Not `-quiet`: the port the kernel gave it comes first, as `ACCEPT 127.0.0.1:<port>`.
    let port = loop {
        let line = server.next_line("ACCEPT line");
        if let Some(addr) = line.strip_prefix("ACCEPT ") {
            break addr.rsplit(':').next().unwrap().parse::<u16>().unwrap();
        }
    };
    let upstream = TcpStream::connect(("127.0.0.1", port)).expect("connect to s_server");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_addr = listener.local_addr().unwrap().to_string();
    let keylog = tls_proxy::keylog_path("openssl");
    let mut client_args = vec!["s_client", "-connect", &proxy_addr, "-quiet"];
    client_args.extend(["-keylogfile", keylog.to_str().unwrap()]);
    client_args.extend(common);
    let mut client = Peer::spawn("openssl", &client_args, &[]);

    let downstream = tls_proxy::accept(&listener, &mut client);
    let proxy = Proxy::start(suite, engines, forward, &downstream, &upstream, &keylog);

    if forward == Forward::CorruptingFirstDataToServer {
        // One line, in a record the server must reject with a fatal alert, after which
        // it exits and the client follows.
        let mut stdin = client.stdin.take().unwrap();
        let _ = writeln!(stdin, "{}", tls_proxy::payload_lines()[0]);
        let (up, down) = proxy.finish();
        drop(stdin);
        drop(client);
        drop(server);
        let _ = std::fs::remove_file(&keylog);
        // (Over TLS 1.0 OpenSSL sends an empty record before the line: that one is
        // corrupted, and the line follows before the alert arrives.)
        tls_proxy::check_refused(suite, engines, "s_server", &up, &down);
        return;
    }

    // The lines, then `CLOSE`, on which `s_server -rev` sends close_notify and exits.
    let lines = tls_proxy::payload_lines();
    let mut input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    input.push_str("CLOSE\n");
    let mut stdin = client.stdin.take().unwrap();
    let feed = input.clone();
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(feed.as_bytes());
        stdin // kept open: s_client must not see the end of its input early
    });
    for line in &lines {
        let echoed = client.next_line("echoed line");
        assert_eq!(
            echoed,
            rev(line),
            "{}: echo of a {}-byte line",
            suite.name,
            line.len()
        );
    }
    let (up, down) = proxy.finish();
    drop(feeder.join());
    drop(client);
    drop(server);
    let _ = std::fs::remove_file(&keylog);

    // `s_server -rev` answers each line with the line reversed.
    let echo: String = lines.iter().map(|l| format!("{}\n", rev(l))).collect();
    tls_proxy::check_relayed(
        suite,
        engines,
        &up,
        &down,
        input.as_bytes(),
        echo.as_bytes(),
    );
}

// Name, IANA number, version, PRF hash, MAC, key and block lengths, our type, IV kind.
#[rustfmt::skip]
mod suites {
    use super::*;
    use tls_cbc_aead::*;
    suite_test!(tls12_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls12, Sha256, 20, 16, 16, Aes128CbcSha1, explicit);
    suite_test!(tls12_aes256_sha1, "ECDHE-RSA-AES256-SHA", 0xc014, Tls12, Sha256, 20, 32, 16, Aes256CbcSha1, explicit);
    suite_test!(tls12_aes128_sha256, "ECDHE-RSA-AES128-SHA256", 0xc027, Tls12, Sha256, 32, 16, 16, Aes128CbcSha256, explicit);
    suite_test!(tls12_aes256_sha256, "AES256-SHA256", 0x003d, Tls12, Sha256, 32, 32, 16, Aes256CbcSha256, explicit);
    suite_test!(tls12_aes256_sha384, "ECDHE-RSA-AES256-SHA384", 0xc028, Tls12, Sha384, 48, 32, 16, Aes256CbcSha384, explicit);
    suite_test!(tls11_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls11, Md5Sha1, 20, 16, 16, Aes128CbcSha1, explicit);
    suite_test!(tls10_aes128_sha1, "ECDHE-RSA-AES128-SHA", 0xc013, Tls10, Md5Sha1, 20, 16, 16, Aes128CbcSha1ImplicitIv, implicit);
    suite_test!(tls10_aes256_sha1, "ECDHE-RSA-AES256-SHA", 0xc014, Tls10, Md5Sha1, 20, 32, 16, Aes256CbcSha1ImplicitIv, implicit);
}

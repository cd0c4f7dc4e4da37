//! Interop with GnuTLS, a TLS stack independent of OpenSSL and ring (its AES-GCM from
//! nettle): our rustls client against `gnutls-serv --echo`, and `gnutls-cli` against our
//! rustls server, for each of the six suites with the suite and version forced on the
//! GnuTLS side, data checked in both directions. Over TLS 1.3 each connection also
//! updates its keys midway (KeyUpdate, RFC 8446 §4.6.3), asked for by our client in the
//! one direction and by `gnutls-cli` in the other, so records run on keys made after the
//! handshake too.
//!
//! GnuTLS's tools (Debian's `gnutls-bin`) are not on a fresh machine: without them these
//! tests say so and pass, unless `GNUTLS_REQUIRED` is set, as CI sets it after installing
//! them. Every wait is bounded and every child is killed on the way out, pass or fail.

#[macro_use]
mod rustls_support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};

use rustls::{ClientConnection, ServerConnection, StreamOwned};
use rustls_support::peer::{
    self, Peer, TempDir, cert_files, check_negotiated, serve_stdio_client, text_payload,
};
use rustls_support::{case, client_config, identity, server_config};

/// Enough for many full 16 KiB records each way.
const PAYLOAD: usize = 256 * 1024;
/// The echo comes back record by record: data goes up in pieces of this size, each
/// read back before the next is sent, so that neither end's writes can block on the
/// other's.
const PIECE: usize = 16 * 1024;

/// Whether the tests can run: GnuTLS's tools are installed, or (if not) a panic when CI
/// requires them.
fn gnutls_installed() -> bool {
    peer::tools_present(
        &[&["gnutls-cli", "--version"], &["gnutls-serv", "--version"]],
        "GNUTLS_REQUIRED",
        "gnutls-cli/gnutls-serv not installed (Debian: gnutls-bin)",
    )
}

/// Our client against `gnutls-serv --echo` forcing the suite: the payload up in pieces,
/// each echoed back intact; over TLS 1.3 our client updates its keys (and asks the
/// server to) halfway.
fn our_client_vs_gnutls_server(name: &str) {
    if !gnutls_installed() {
        return;
    }
    let case = case(name);
    let id = identity(case.key);
    let dir = TempDir::new(name);
    let (cert, key) = cert_files(&dir, &id);
    let priority = case.gnutls_priority();
    let mut server = Peer::spawn(
        "gnutls-serv",
        &[
            "--echo",
            "-p",
            "0",
            "--x509certfile",
            &cert,
            "--x509keyfile",
            &key,
            "--priority",
            &priority,
        ],
    );
    let sock = server.connect();
    let config = client_config(&case, true, &id);
    let conn = ClientConnection::new(config.into(), "localhost".try_into().unwrap()).unwrap();
    let mut tls = StreamOwned::new(conn, sock);

    let up = text_payload(PAYLOAD, 31);
    let mut echo = vec![0u8; PIECE];
    for (i, piece) in up.chunks(PIECE).enumerate() {
        if case.tls13 && i == up.len() / PIECE / 2 {
            tls.conn.refresh_traffic_keys().expect("key update");
        }
        tls.write_all(piece)
            .unwrap_or_else(|e| panic!("send: {e}\n{}", server.diagnostics()));
        tls.flush().unwrap();
        let echo = &mut echo[..piece.len()];
        tls.read_exact(echo)
            .unwrap_or_else(|e| panic!("receive: {e}\n{}", server.diagnostics()));
        assert!(echo == piece, "piece {i}: the echo differs");
    }
    check_negotiated(&tls.conn, &case);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// `gnutls-cli` forcing the suite against our server: the payload up from its stdin,
/// then another down to its stdout; over TLS 1.3 it updates its keys (and asks us to)
/// halfway up, which its log must confirm.
fn gnutls_client_vs_our_server(name: &str) {
    if !gnutls_installed() {
        return;
    }
    let case = case(name);
    let id = identity(case.key);
    let dir = TempDir::new(name);
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let priority = case.gnutls_priority();
    // Its informational lines go to a file, so that stdout carries only the data.
    let log = dir.path("gnutls-cli.log");
    let log_arg = log.to_str().unwrap();
    let mut args = vec!["--insecure", "--logfile", log_arg, "--priority", &priority];
    args.extend(["-p", &port, "127.0.0.1"]);
    if case.tls13 {
        args.push("--inline-commands");
    }
    let mut client = Peer::spawn("gnutls-cli", &args);
    let sock = client.accept_from(&listener);
    let conn = ServerConnection::new(server_config(&case, true, &id).into()).unwrap();
    let mut tls = StreamOwned::new(conn, sock);

    let up = text_payload(PAYLOAD, 41);
    let down = text_payload(PAYLOAD, 42);
    let mut input = up.clone();
    if case.tls13 {
        // A line of its own (the payload's lines are 64 bytes), consumed by gnutls-cli.
        input.splice(64 * 2048..64 * 2048, b"^rekey^\n".iter().copied());
    }
    serve_stdio_client(&mut tls, &mut client, &case, input, &up, &down);
    // On our close_notify it exits, its log then complete.
    client.wait_exit();
    if case.tls13 {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            log.contains("Rekey was completed"),
            "gnutls-cli's log:\n{log}"
        );
    }
}

per_suite_tests!(
    {
        our_client_vs_gnutls_serv => { our_client_vs_gnutls_server(); }
        gnutls_cli_vs_our_server => { gnutls_client_vs_our_server(); }
    }
    tls13_aes_128_gcm_sha256,
    tls13_aes_256_gcm_sha384,
    ecdhe_ecdsa_aes_128_gcm_sha256,
    ecdhe_ecdsa_aes_256_gcm_sha384,
    ecdhe_rsa_aes_128_gcm_sha256,
    ecdhe_rsa_aes_256_gcm_sha384,
);

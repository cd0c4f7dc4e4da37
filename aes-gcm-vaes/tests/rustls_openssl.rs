//! Interop with OpenSSL: our rustls client against `openssl s_server`, and
//! `openssl s_client` against our rustls server, for each of the six suites with the
//! suite forced on the OpenSSL side, data checked in both directions.
//!
//! The `openssl` command must be installed: these tests fail, not skip, without it.
//! Every wait is bounded and every child is killed on the way out, pass or fail.

#[macro_use]
mod rustls_support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};

use rustls::{ClientConnection, ServerConnection, StreamOwned};
use rustls_support::peer::{
    Peer, TempDir, cert_files, check_negotiated, serve_stdio_client, text_payload,
};
use rustls_support::{case, client_config, identity, server_config};

/// Enough for many full 16 KiB records each way through OpenSSL's stdio.
const PAYLOAD: usize = 256 * 1024;

/// Our client against `openssl s_server` forcing the suite.
fn our_client_vs_openssl_server(name: &str) {
    let case = case(name);
    let id = identity(case.key);
    let dir = TempDir::new(name);
    let (cert, key) = cert_files(&dir, &id);
    let mut args = vec![
        "s_server",
        "-accept",
        "127.0.0.1:0",
        "-cert",
        &cert,
        "-key",
        &key,
    ];
    // Quiet: stdout carries only application data. One connection, then exit.
    args.extend(["-quiet", "-naccept", "1"]);
    args.extend(case.openssl_args());
    let mut server = Peer::spawn("openssl", &args);
    let sock = server.connect();

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
    check_negotiated(&tls.conn, &case);
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
    let mut client = Peer::spawn("openssl", &args);
    let sock = client.accept_from(&listener);

    let conn = ServerConnection::new(server_config(&case, true, &id).into()).unwrap();
    let mut tls = StreamOwned::new(conn, sock);

    let up = text_payload(PAYLOAD, 21);
    let down = text_payload(PAYLOAD, 22);

    serve_stdio_client(&mut tls, &mut client, &case, up.clone(), &up, &down);
}

per_suite_tests!(
    {
        our_client_vs_openssl_s_server => { our_client_vs_openssl_server(); }
        openssl_s_client_vs_our_server => { openssl_client_vs_our_server(); }
    }
    tls13_aes_128_gcm_sha256,
    tls13_aes_256_gcm_sha384,
    ecdhe_ecdsa_aes_128_gcm_sha256,
    ecdhe_ecdsa_aes_256_gcm_sha384,
    ecdhe_rsa_aes_128_gcm_sha256,
    ecdhe_rsa_aes_256_gcm_sha384,
);

//! In-process rustls connections over memory buffers: each of the six suites, our
//! provider on both ends and against rustls's stock ring provider on either end,
//! 1 MiB each way; extracted traffic secrets agree; tampered records end in an alert.

#[macro_use]
mod rustls_support;

use std::io::{Read, Write};

use rustls::{
    AlertDescription, ClientConnection, Connection, ConnectionTrafficSecrets, Error,
    ServerConnection,
};
use rustls_support::{Case, case, client_config, identity, pattern, server_config};

const MIB: usize = 1 << 20;

/// Moves every pending TLS byte from `from` to `to` and lets `to` process it,
/// draining any plaintext it yields into `sink` so rustls's receive buffer never fills.
fn pump(from: &mut Connection, to: &mut Connection, sink: &mut Vec<u8>) -> Result<usize, Error> {
    let mut wire = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut wire).expect("write_tls to a Vec");
    }
    let mut rest = &wire[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).expect("read_tls from a slice");
        to.process_new_packets()?;
        drain(to, sink);
    }
    Ok(wire.len())
}

fn drain(conn: &mut Connection, sink: &mut Vec<u8>) {
    let mut buf = [0u8; 32 * 1024];
    loop {
        match conn.reader().read(&mut buf) {
            Ok(0) => break,
            Ok(n) => sink.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("reader: {e}"),
        }
    }
}

fn connect(case: &Case, client_ours: bool, server_ours: bool) -> (Connection, Connection) {
    let id = identity(case.key);
    let client = ClientConnection::new(
        client_config(case, client_ours, &id).into(),
        "localhost".try_into().unwrap(),
    )
    .unwrap();
    let server = ServerConnection::new(server_config(case, server_ours, &id).into()).unwrap();
    let (mut c, mut s) = (Connection::Client(client), Connection::Server(server));
    let mut junk = Vec::new();
    for _ in 0..20 {
        if !c.is_handshaking() && !s.is_handshaking() {
            break;
        }
        pump(&mut c, &mut s, &mut junk).expect("handshake c->s");
        pump(&mut s, &mut c, &mut junk).expect("handshake s->c");
    }
    assert!(
        !c.is_handshaking() && !s.is_handshaking(),
        "handshake did not finish"
    );
    assert!(junk.is_empty());
    for conn in [&c, &s] {
        assert_eq!(
            conn.negotiated_cipher_suite().map(|s| s.suite()),
            Some(case.ours.suite())
        );
        assert_eq!(conn.protocol_version(), Some(case.version().version));
    }
    (c, s)
}

/// Sends `up` client→server and `down` server→client at the same time, in pieces,
/// and returns what each side received.
fn exchange(c: &mut Connection, s: &mut Connection, up: &[u8], down: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut sent_up, mut sent_down) = (0, 0);
    let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
    let mut rounds = 0;
    while got_up.len() < up.len() || got_down.len() < down.len() {
        rounds += 1;
        assert!(rounds < 100_000, "no progress");
        // Uneven piece sizes so records of many lengths occur, not only full ones.
        let piece = 1 + (rounds * 7919) % 70_000;
        if sent_up < up.len() {
            let end = (sent_up + piece).min(up.len());
            sent_up += c.writer().write(&up[sent_up..end]).unwrap();
        }
        if sent_down < down.len() {
            let end = (sent_down + piece / 2 + 1).min(down.len());
            sent_down += s.writer().write(&down[sent_down..end]).unwrap();
        }
        pump(c, s, &mut got_up).expect("client -> server");
        pump(s, c, &mut got_down).expect("server -> client");
    }
    (got_up, got_down)
}

fn close(c: &mut Connection, s: &mut Connection) {
    let mut rest = Vec::new();
    c.send_close_notify();
    s.send_close_notify();
    pump(c, s, &mut rest).unwrap();
    pump(s, c, &mut rest).unwrap();
    assert!(rest.is_empty());
    let mut buf = [0u8; 1];
    assert_eq!(
        c.reader().read(&mut buf).unwrap(),
        0,
        "client sees a clean close"
    );
    assert_eq!(
        s.reader().read(&mut buf).unwrap(),
        0,
        "server sees a clean close"
    );
}

fn key_and_iv(secrets: &ConnectionTrafficSecrets, aes256: bool) -> Vec<u8> {
    let (key, iv) = match (secrets, aes256) {
        (ConnectionTrafficSecrets::Aes128Gcm { key, iv }, false) => (key, iv),
        (ConnectionTrafficSecrets::Aes256Gcm { key, iv }, true) => (key, iv),
        _ => panic!("extracted secrets name the wrong cipher"),
    };
    assert_eq!(key.as_ref().len(), if aes256 { 32 } else { 16 });
    [key.as_ref(), iv.as_ref()].concat()
}

/// Both ends' secrets must describe the same keys, whichever provider produced them,
/// and the sequence numbers must count the records actually exchanged.
fn check_extracted_secrets(case: &Case, c: Connection, s: Connection) {
    let (Connection::Client(c), Connection::Server(s)) = (c, s) else {
        unreachable!()
    };
    let cs = c.dangerous_extract_secrets().expect("client secrets");
    let ss = s.dangerous_extract_secrets().expect("server secrets");
    let a = case.aes256();
    assert_eq!(key_and_iv(&cs.tx.1, a), key_and_iv(&ss.rx.1, a));
    assert_eq!(key_and_iv(&cs.rx.1, a), key_and_iv(&ss.tx.1, a));
    assert_ne!(key_and_iv(&cs.tx.1, a), key_and_iv(&cs.rx.1, a));
    assert_eq!(cs.tx.0, ss.rx.0);
    assert_eq!(cs.rx.0, ss.tx.0);
    assert!(cs.tx.0 > 0 && cs.rx.0 > 0);
}

fn transfer(name: &str, client_ours: bool, server_ours: bool) {
    let case = case(name);
    let (mut c, mut s) = connect(&case, client_ours, server_ours);
    let up = pattern(MIB, 1);
    let down = pattern(MIB, 2);
    let (got_up, got_down) = exchange(&mut c, &mut s, &up, &down);
    assert!(got_up == up, "client -> server bytes differ");
    assert!(got_down == down, "server -> client bytes differ");
    // Extracting secrets consumes the connections, so a second one checks the clean close.
    check_extracted_secrets(&case, c, s);
    let (mut c, mut s) = connect(&case, client_ours, server_ours);
    exchange(&mut c, &mut s, b"ping", b"pong");
    close(&mut c, &mut s);
}

/// Flips one bit of the next record the client sends after the handshake; the server
/// must fail with `DecryptError` and tell the client with a `bad_record_mac` alert.
fn tampered(name: &str, client_ours: bool, server_ours: bool, flip_at_end: bool) {
    let case = case(name);
    let (mut c, mut s) = connect(&case, client_ours, server_ours);
    // Let any post-handshake messages (TLS 1.3 session tickets) reach the client first.
    let mut sink = Vec::new();
    pump(&mut s, &mut c, &mut sink).unwrap();
    c.writer().write_all(b"attack at dawn").unwrap();
    let mut wire = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut wire).unwrap();
    }
    // Header is 5 bytes; either the first ciphertext byte (or explicit nonce) or the tag.
    let at = if flip_at_end { wire.len() - 1 } else { 5 };
    wire[at] ^= 0x10;
    s.read_tls(&mut &wire[..]).unwrap();
    let err = s
        .process_new_packets()
        .expect_err("tampered record accepted");
    assert_eq!(err, Error::DecryptError);
    drain(&mut s, &mut sink);
    assert!(
        sink.is_empty(),
        "no plaintext may come out of a tampered record"
    );

    // The server now owes the client an alert.
    let mut alert = Vec::new();
    while s.wants_write() {
        s.write_tls(&mut alert).unwrap();
    }
    assert!(!alert.is_empty(), "server sent no alert");
    c.read_tls(&mut &alert[..]).unwrap();
    let err = c
        .process_new_packets()
        .expect_err("client ignored the alert");
    assert_eq!(err, Error::AlertReceived(AlertDescription::BadRecordMac));
}

per_suite_tests!(
    {
        ours_to_ours_1mib_each_way => { transfer(true, true); }
        our_client_ring_server_1mib_each_way => { transfer(true, false); }
        ring_client_our_server_1mib_each_way => { transfer(false, true); }
        // Our decrypter on the receiving end of ring's records (third), and the reverse.
        tampered_record_gets_bad_record_mac_alert => {
            tampered(true, true, false);
            tampered(true, true, true);
            tampered(false, true, true);
            tampered(true, false, true);
        }
    }
    tls13_aes_128_gcm_sha256,
    tls13_aes_256_gcm_sha384,
    ecdhe_ecdsa_aes_128_gcm_sha256,
    ecdhe_ecdsa_aes_256_gcm_sha384,
    ecdhe_rsa_aes_128_gcm_sha256,
    ecdhe_rsa_aes_256_gcm_sha384,
);

//! A small TLS echo server on `aes_gcm_vaes::rustls::provider()`: serves a given
//! certificate, or makes a self-signed one for `localhost`, prints the version and
//! suite of each connection, and echoes back what each client sends.
//!
//! ```text
//! cargo run --example tls_server --features rustls -- --addr 127.0.0.1:4443 --write-cert /tmp/cert.pem
//! cargo run --example tls_client --features rustls -- 127.0.0.1:4443 --cafile /tmp/cert.pem --send hello
//! openssl s_client -connect 127.0.0.1:4443 -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use aes_gcm_vaes::rustls::provider;
use rustls::{ServerConfig, ServerConnection, StreamOwned};

#[path = "common/identity.rs"]
mod common;

use common::identity;

const USAGE: &str =
    "usage: tls_server [--addr HOST:PORT] [--cert PEM --key PEM] [--write-cert PATH] [--once]";

struct Args {
    addr: String,
    cert: Option<String>,
    key: Option<String>,
    write_cert: Option<String>,
    once: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        addr: "127.0.0.1:4443".into(),
        cert: None,
        key: None,
        write_cert: None,
        once: false,
    };
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--addr" => args.addr = value()?,
            "--cert" => args.cert = Some(value()?),
            "--key" => args.key = Some(value()?),
            "--write-cert" => args.write_cert = Some(value()?),
            "--once" => args.once = true,
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    if args.cert.is_some() != args.key.is_some() {
        return Err(format!("--cert and --key go together\n{USAGE}"));
    }
    Ok(args)
}

fn serve(config: Arc<ServerConfig>, sock: TcpStream) -> Result<u64, Box<dyn std::error::Error>> {
    sock.set_read_timeout(Some(Duration::from_secs(60)))?;
    let peer = sock.peer_addr()?;
    let mut tls = StreamOwned::new(ServerConnection::new(config)?, sock);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    println!(
        "{peer}: {:?}, {:?}",
        tls.conn.protocol_version().ok_or("no version")?,
        tls.conn
            .negotiated_cipher_suite()
            .ok_or("no suite")?
            .suite()
    );
    let mut buf = vec![0u8; 64 * 1024];
    let mut echoed = 0u64;
    loop {
        let n = match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // A client closing the TCP connection without close_notify is common enough
            // (openssl s_client on end of input) not to be worth an error here.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        };
        tls.write_all(&buf[..n])?;
        tls.flush()?;
        echoed += n as u64;
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
    Ok(echoed)
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let (chain, key) = identity(
        args.cert.as_deref(),
        args.key.as_deref(),
        args.write_cert.as_deref(),
    )?;
    let config = Arc::new(
        ServerConfig::builder_with_provider(Arc::new(provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?,
    );
    let listener = TcpListener::bind(&args.addr)?;
    eprintln!("listening on {}", listener.local_addr()?);
    for sock in listener.incoming() {
        let sock = sock?;
        let config = config.clone();
        let worker = std::thread::spawn(move || match serve(config, sock) {
            Ok(n) => println!("closed after echoing {n} bytes"),
            Err(e) => eprintln!("connection failed: {e}"),
        });
        if args.once {
            let _ = worker.join();
            break;
        }
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args) {
        eprintln!("tls_server: {e}");
        std::process::exit(1);
    }
}

//! A small QUIC echo server on quinn with `aes_gcm_vaes::rustls::provider()`, so every
//! packet is sealed, opened and header-masked by this crate: serves a given certificate,
//! or makes a self-signed one for `localhost`, and echoes back each bidirectional stream.
//!
//! ```text
//! cargo run --example quic_server --features rustls -- --addr 127.0.0.1:4433 --write-cert /tmp/quic-cert.pem
//! cargo run --example quic_client --features rustls -- 127.0.0.1:4433 --cafile /tmp/quic-cert.pem --send hello
//! cargo run --example quic_client --features rustls -- 127.0.0.1:4433 --cafile /tmp/quic-cert.pem --bytes 50000000 --key-update
//! ```
//!
//! `--suite TLS13_AES_128_GCM_SHA256` offers that suite only; `--suite
//! TLS13_AES_256_GCM_SHA384` prefers AES-256 and keeps AES-128 after it, since Initial
//! packets are always AES-128-GCM (RFC 9001 §5.2) and rustls 0.23.48 and later require
//! that suite of a QUIC provider. Those packets run on this crate too: the
//! configuration is made `with_initial(.., aes_gcm_vaes::rustls::quic::initial_suite())`.

use std::sync::Arc;

use aes_gcm_vaes::rustls::quic;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, ServerConfig};

#[path = "common/identity.rs"]
mod identity;
#[path = "common/quic.rs"]
mod quic_common;

use identity::identity;
use quic_common::{quic_provider, suite_names};

const USAGE: &str =
    "usage: quic_server [--addr HOST:PORT] [--cert PEM --key PEM] [--write-cert PATH]
                   [--suite NAME] [--alpn PROTOCOL] [--once]";

struct Args {
    addr: String,
    cert: Option<String>,
    key: Option<String>,
    write_cert: Option<String>,
    suite: Option<String>,
    alpn: Vec<String>,
    once: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        addr: "127.0.0.1:4433".into(),
        cert: None,
        key: None,
        write_cert: None,
        suite: None,
        alpn: Vec::new(),
        once: false,
    };
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--addr" => args.addr = value()?,
            "--cert" => args.cert = Some(value()?),
            "--key" => args.key = Some(value()?),
            "--write-cert" => args.write_cert = Some(value()?),
            "--suite" => args.suite = Some(value()?),
            "--alpn" => args.alpn.push(value()?),
            "--once" => args.once = true,
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    if args.cert.is_some() != args.key.is_some() {
        return Err(format!("--cert and --key go together\n{USAGE}"));
    }
    Ok(args)
}

/// Echoes one bidirectional stream; returns the number of bytes echoed.
async fn echo(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut echoed = 0u64;
    while let Some(n) = recv.read(&mut buf).await? {
        send.write_all(&buf[..n]).await?;
        echoed += n as u64;
    }
    send.finish()?;
    // Wait until the client has everything, or it stops the stream.
    let _ = send.stopped().await;
    Ok(echoed)
}

async fn serve(incoming: quinn::Incoming) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let peer = incoming.remote_address();
    let conn = incoming.await?;
    println!("{peer}: connected");
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(stream) => stream,
            Err(quinn::ConnectionError::ApplicationClosed(_)) => break,
            Err(e) => return Err(e.into()),
        };
        tokio::spawn(async move {
            match echo(send, recv).await {
                Ok(n) => println!("{peer}: stream closed after echoing {n} bytes"),
                Err(e) => eprintln!("{peer}: stream failed: {e}"),
            }
        });
    }
    let stats = conn.stats();
    println!(
        "{peer}: closed; {} packets sent, {} received, rtt {:?}",
        stats.udp_tx.datagrams, stats.udp_rx.datagrams, stats.path.rtt
    );
    Ok(())
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let (chain, key) = identity(
        args.cert.as_deref(),
        args.key.as_deref(),
        args.write_cert.as_deref(),
    )?;
    let provider = quic_provider(args.suite.as_deref())?;
    let names = suite_names(&provider);
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    tls.alpn_protocols = args.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    let crypto = QuicServerConfig::with_initial(Arc::new(tls), quic::initial_suite())?;
    let endpoint = Endpoint::server(
        ServerConfig::with_crypto(Arc::new(crypto)),
        args.addr.parse()?,
    )?;
    eprintln!(
        "listening on {} (QUIC v1), suites {}, packet protection by aes-gcm-vaes",
        endpoint.local_addr()?,
        names
    );
    while let Some(incoming) = endpoint.accept().await {
        let worker = tokio::spawn(async move {
            if let Err(e) = serve(incoming).await {
                eprintln!("connection failed: {e}");
            }
        });
        if args.once {
            let _ = worker.await;
            break;
        }
    }
    endpoint.wait_idle().await;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("quic_server: {e}");
        std::process::exit(1);
    }
}

//! A small QUIC client on quinn with `aes_gcm_vaes::rustls::provider()`'s TLS 1.3
//! AES-GCM suites, so every packet it sends or receives is protected by this crate:
//! connects to `host:port`, then sends a line to `quic_server` and prints the echo, or
//! pushes `--bytes N` through it and back (checked, timed), optionally forcing a key
//! update half way. With `--alpn h3` it can also complete a handshake with a public
//! HTTP/3 server.
//!
//! ```text
//! cargo run --example quic_client --features rustls -- 127.0.0.1:4433 --cafile /tmp/quic-cert.pem --send hello
//! cargo run --release --example quic_client --features rustls -- 127.0.0.1:4433 --cafile /tmp/quic-cert.pem --bytes 50000000 --key-update
//! cargo run --example quic_client --features rustls -- cloudflare-quic.com:443 --alpn h3
//! ```

use std::net::ToSocketAddrs;
use std::sync::Arc;
use std::time::Instant;

use aes_gcm_vaes::rustls::quic;
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{ClientConfig, Endpoint};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

#[path = "common/quic.rs"]
mod quic_common;

use quic_common::{quic_provider, suite_names};

const USAGE: &str = "usage: quic_client HOST:PORT [--sni NAME] [--cafile PEM] [--suite NAME]
                   [--alpn PROTOCOL] [--send TEXT | --bytes N [--key-update]]";

struct Args {
    target: String,
    sni: Option<String>,
    cafile: Option<String>,
    suite: Option<String>,
    alpn: Vec<String>,
    send: Option<String>,
    bytes: Option<usize>,
    key_update: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        target: String::new(),
        sni: None,
        cafile: None,
        suite: None,
        alpn: Vec::new(),
        send: None,
        bytes: None,
        key_update: false,
    };
    let value = |it: &mut dyn Iterator<Item = String>, flag: &str| {
        it.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sni" => args.sni = Some(value(&mut it, &a)?),
            "--cafile" => args.cafile = Some(value(&mut it, &a)?),
            "--suite" => args.suite = Some(value(&mut it, &a)?),
            "--alpn" => args.alpn.push(value(&mut it, &a)?),
            "--send" => args.send = Some(value(&mut it, &a)?),
            "--bytes" => {
                let n = value(&mut it, &a)?;
                args.bytes = Some(
                    n.parse()
                        .map_err(|_| format!("--bytes {n}: not a number"))?,
                );
            }
            "--key-update" => args.key_update = true,
            "-h" | "--help" => return Err(USAGE.into()),
            _ if a.starts_with('-') => return Err(format!("unknown option {a}\n{USAGE}")),
            _ if args.target.is_empty() => args.target = a,
            _ => return Err(format!("unexpected argument {a}\n{USAGE}")),
        }
    }
    if args.target.is_empty() {
        return Err(USAGE.into());
    }
    Ok(args)
}

fn config(args: &Args) -> Result<ClientConfig, Box<dyn std::error::Error>> {
    let provider = quic_provider(args.suite.as_deref())?;
    eprintln!("offering {}", suite_names(&provider));
    let mut roots = RootCertStore::empty();
    match &args.cafile {
        Some(path) => {
            for cert in CertificateDer::pem_file_iter(path)? {
                roots.add(cert?)?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = args.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    // Initial packets are always AES-128-GCM (RFC 9001 §5.2): ours, passed in (quinn
    // would also find it in the provider, which keeps it: see `quic_provider`).
    let crypto = QuicClientConfig::with_initial(Arc::new(tls), quic::initial_suite())?;
    Ok(ClientConfig::new(Arc::new(crypto)))
}

/// Deterministic data that a broken echo cannot reproduce by accident.
fn data(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) >> 13) as u8)
        .collect()
}

/// Sends `len` bytes on a new stream while reading the echo; checks it; returns the
/// elapsed time.
async fn bulk(
    conn: &quinn::Connection,
    len: usize,
    key_update: bool,
) -> Result<f64, Box<dyn std::error::Error>> {
    let (mut send, mut recv) = conn.open_bi().await?;
    let out = data(len);
    let start = Instant::now();
    let writer = async {
        let half = len / 2;
        send.write_all(&out[..half]).await?;
        if key_update {
            conn.force_key_update();
            eprintln!("key update forced after {half} bytes");
        }
        send.write_all(&out[half..]).await?;
        send.finish()?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let reader = async { Ok::<_, Box<dyn std::error::Error>>(recv.read_to_end(len).await?) };
    let (w, r) = tokio::join!(writer, reader);
    w?;
    let echoed = r?;
    let elapsed = start.elapsed().as_secs_f64();
    if echoed != out {
        return Err(format!("echo differs ({} bytes back of {len})", echoed.len()).into());
    }
    Ok(elapsed)
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let host = match args.target.rsplit_once(':') {
        Some((host, _port)) => host.trim_start_matches('[').trim_end_matches(']'),
        None => return Err(format!("{} is not HOST:PORT", args.target).into()),
    };
    let name = args.sni.clone().unwrap_or_else(|| host.to_owned());
    let addr = args.target.to_socket_addrs()?.next().ok_or("no address")?;
    let bind = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let endpoint = Endpoint::client(bind.parse()?)?;
    let conn = endpoint.connect_with(config(&args)?, addr, &name)?.await?;
    println!(
        "connected to {} ({name}) over QUIC v1, rtt {:?}; packets by aes-gcm-vaes",
        conn.remote_address(),
        conn.rtt()
    );
    if let Some(text) = &args.send {
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_all(text.as_bytes()).await?;
        send.finish()?;
        let reply = recv.read_to_end(1 << 20).await?;
        println!("reply: {}", String::from_utf8_lossy(&reply));
    } else if let Some(len) = args.bytes {
        let secs = bulk(&conn, len, args.key_update).await?;
        println!(
            "{len} bytes each way in {secs:.3} s: {:.1} MB/s each way (echo checked)",
            len as f64 / secs / 1e6
        );
    }
    let stats = conn.stats();
    conn.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    println!(
        "{} packets sent, {} received, {} lost",
        stats.udp_tx.datagrams, stats.udp_rx.datagrams, stats.path.lost_packets
    );
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
        eprintln!("quic_client: {e}");
        std::process::exit(1);
    }
}

//! A small TLS client on `aes_gcm_vaes::rustls::provider()`: connects to any
//! `host:port`, prints the protocol version and cipher suite it negotiated, and
//! optionally sends a line (e.g. to `tls_server`) or an HTTP request.
//!
//! ```text
//! cargo run --example tls_client --features rustls -- example.com:443 --http
//! cargo run --example tls_client --features rustls -- 127.0.0.1:4443 --cafile cert.pem --send hello
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use aes_gcm_vaes::rustls::AES_GCM_CIPHER_SUITES;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::version::{TLS12, TLS13};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
    StreamOwned,
};

const USAGE: &str = "usage: tls_client HOST:PORT [--sni NAME] [--cafile PEM] [--insecure]
                  [--suite NAME] [--tls12 | --tls13] [--send TEXT | --http]";

struct Args {
    target: String,
    sni: Option<String>,
    cafile: Option<String>,
    insecure: bool,
    suite: Option<String>,
    tls12_only: bool,
    tls13_only: bool,
    send: Option<String>,
    http: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        target: String::new(),
        sni: None,
        cafile: None,
        insecure: false,
        suite: None,
        tls12_only: false,
        tls13_only: false,
        send: None,
        http: false,
    };
    let value = |it: &mut dyn Iterator<Item = String>, flag: &str| {
        it.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sni" => args.sni = Some(value(&mut it, &a)?),
            "--cafile" => args.cafile = Some(value(&mut it, &a)?),
            "--insecure" => args.insecure = true,
            "--suite" => args.suite = Some(value(&mut it, &a)?),
            "--tls12" => args.tls12_only = true,
            "--tls13" => args.tls13_only = true,
            "--send" => args.send = Some(value(&mut it, &a)?),
            "--http" => args.http = true,
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

/// For `--insecure`: accepts any certificate, but still checks the handshake signature
/// against it, so the connection is encrypted even though the peer is not authenticated.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn config(args: &Args) -> Result<ClientConfig, Box<dyn std::error::Error>> {
    let mut provider = aes_gcm_vaes::rustls::provider();
    if let Some(name) = &args.suite {
        provider
            .cipher_suites
            .retain(|s| s.suite().as_str() == Some(name.as_str()));
        if provider.cipher_suites.is_empty() {
            let names: Vec<_> = aes_gcm_vaes::rustls::provider()
                .cipher_suites
                .iter()
                .filter_map(|s| s.suite().as_str())
                .collect();
            return Err(format!("unknown suite {name}; choose from {}", names.join(", ")).into());
        }
    }
    let provider = Arc::new(provider);
    let versions: &[_] = match (args.tls12_only, args.tls13_only) {
        (true, false) => &[&TLS12],
        (false, true) => &[&TLS13],
        _ => &[&TLS13, &TLS12],
    };
    let builder =
        ClientConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions)?;
    let config = if args.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        match &args.cafile {
            Some(path) => {
                for cert in CertificateDer::pem_file_iter(path)? {
                    roots.add(cert?)?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(config)
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let host = match args.target.rsplit_once(':') {
        Some((host, _port)) => host.trim_start_matches('[').trim_end_matches(']'),
        None => return Err(format!("{} is not HOST:PORT", args.target).into()),
    };
    let name = args.sni.clone().unwrap_or_else(|| host.to_owned());
    let server_name = ServerName::try_from(name.clone())?;

    let config = Arc::new(config(&args)?);
    let sock = TcpStream::connect(&args.target)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    sock.set_write_timeout(Some(Duration::from_secs(10)))?;
    let conn = ClientConnection::new(config, server_name)?;
    let mut tls = StreamOwned::new(conn, sock);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }

    let suite = tls
        .conn
        .negotiated_cipher_suite()
        .ok_or("no suite negotiated")?;
    let ours = AES_GCM_CIPHER_SUITES
        .iter()
        .any(|s| s.suite() == suite.suite());
    println!(
        "connected to {} ({name}): {:?}, {:?}, records by {}",
        args.target,
        tls.conn.protocol_version().ok_or("no version negotiated")?,
        suite.suite(),
        if ours { "aes-gcm-vaes" } else { "ring" },
    );

    if let Some(text) = &args.send {
        tls.write_all(text.as_bytes())?;
        tls.write_all(b"\n")?;
        tls.flush()?;
        let mut line = String::new();
        BufReader::new(&mut tls).read_line(&mut line)?;
        print!("reply: {line}");
    } else if args.http {
        write!(
            tls,
            "GET / HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\nUser-Agent: aes-gcm-vaes-example\r\n\r\n"
        )?;
        tls.flush()?;
        let mut body = Vec::new();
        // Servers often drop the TCP connection without close_notify after
        // `Connection: close`; what arrived before that is still good.
        if let Err(e) = tls.read_to_end(&mut body)
            && body.is_empty()
        {
            return Err(e.into());
        }
        let status = body.split(|&b| b == b'\n').next().unwrap_or_default();
        println!(
            "{} ({} bytes)",
            String::from_utf8_lossy(status).trim_end(),
            body.len()
        );
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
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
        eprintln!("tls_client: {e}");
        std::process::exit(1);
    }
}

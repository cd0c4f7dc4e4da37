//! Shared by the `tls_server` and `quic_server` examples: the certificate they serve.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

pub type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The chain and key from `cert` and `key` (PEM files), or else a throwaway self-signed
/// ECDSA P-256 certificate for `localhost`, so the examples run with no files at all;
/// that one is written to `write_cert` if given, or printed.
pub fn identity(
    cert: Option<&str>,
    key: Option<&str>,
    write_cert: Option<&str>,
) -> Result<Identity, Box<dyn std::error::Error>> {
    if let (Some(cert), Some(key)) = (cert, key) {
        let chain = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
        return Ok((chain, PrivateKeyDer::from_pem_file(key)?));
    }
    let key = rcgen::KeyPair::generate()?;
    let cert =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?
            .self_signed(&key)?;
    match write_cert {
        Some(path) => {
            std::fs::write(path, cert.pem())?;
            eprintln!("self-signed certificate for localhost written to {path}");
        }
        None => eprintln!("self-signed certificate for localhost:\n{}", cert.pem()),
    }
    Ok((
        vec![cert.der().clone()],
        PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
    ))
}

//! Shared by the `quic_server` and `quic_client` examples: the provider they run on.

use aes_gcm_vaes::rustls::{AES_GCM_CIPHER_SUITES, provider};
use rustls::crypto::CryptoProvider;
use rustls::{CipherSuite, SupportedCipherSuite};

/// Our provider with only its TLS 1.3 AES-GCM suites (both, or the one named first), so
/// that no QUIC packet goes through another implementation (the ChaCha20 suite is
/// ring's). Naming AES-256 keeps AES-128 offered after it: Initial packets are always
/// AES-128-GCM (RFC 9001 §5.2), and rustls 0.23.48 and later refuse a QUIC
/// configuration whose provider lacks that suite.
pub fn quic_provider(suite: Option<&str>) -> Result<CryptoProvider, String> {
    let tls13: Vec<_> = AES_GCM_CIPHER_SUITES
        .iter()
        .copied()
        .filter(|s| s.tls13().is_some())
        .collect();
    let named = |s: &SupportedCipherSuite| s.suite().as_str() == suite;
    let mut chosen: Vec<_> = match suite {
        None => tls13.clone(),
        Some(_) => tls13.iter().copied().filter(named).collect(),
    };
    let initial = |s: &SupportedCipherSuite| s.suite() == CipherSuite::TLS13_AES_128_GCM_SHA256;
    if !chosen.is_empty() && !chosen.iter().any(initial) {
        chosen.extend(tls13.iter().copied().filter(initial));
    }
    if chosen.is_empty() {
        return Err(format!(
            "unknown suite {}; choose from {}",
            suite.unwrap_or_default(),
            suite_names(&CryptoProvider {
                cipher_suites: tls13,
                ..provider()
            })
        ));
    }
    Ok(CryptoProvider {
        cipher_suites: chosen,
        ..provider()
    })
}

/// The provider's suite names, comma-separated.
pub fn suite_names(provider: &CryptoProvider) -> String {
    let names: Vec<_> = provider
        .cipher_suites
        .iter()
        .filter_map(|s| s.suite().as_str())
        .collect();
    names.join(", ")
}

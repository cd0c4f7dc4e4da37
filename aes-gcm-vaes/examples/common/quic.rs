//! Shared by the `quic_server` and `quic_client` examples: the provider they run on.

use aes_gcm_vaes::rustls::{AES_GCM_CIPHER_SUITES, provider};
use rustls::crypto::CryptoProvider;

/// Our provider with only its TLS 1.3 AES-GCM suites (both, or the one named), so that
/// no QUIC packet goes through another implementation (the ChaCha20 suite is ring's).
pub fn quic_provider(suite: Option<&str>) -> Result<CryptoProvider, String> {
    let tls13: Vec<_> = AES_GCM_CIPHER_SUITES
        .iter()
        .copied()
        .filter(|s| s.tls13().is_some())
        .collect();
    let chosen: Vec<_> = match suite {
        None => tls13.clone(),
        Some(name) => tls13
            .iter()
            .copied()
            .filter(|s| s.suite().as_str() == Some(name))
            .collect(),
    };
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

//! Shared pieces of the rustls integration tests: the suite table, certificates made at
//! test time, and client/server configurations pinned to one suite on either our
//! provider or rustls's stock ring provider; in `peer`, another stack's tools as the
//! other end.
#![allow(dead_code)] // each test crate uses a different part of this module

pub mod peer;

/// The per-suite tests of a test crate: a module named after each suite (the six of
/// [`ALL_CASES`], checked by one more test), holding a `#[test]` for each
/// `name => { f(args); ... }` line that calls the crate's functions with the suite's
/// name first.
#[allow(unused_macros)] // not every test crate has per-suite tests
macro_rules! per_suite_tests {
    ($tests:tt $($suite:ident),* $(,)?) => {
        $( per_suite_tests!(@suite $suite $tests); )*

        #[test]
        fn every_suite_is_tested() {
            let tested = [$(stringify!($suite)),*];
            assert_eq!(tested, rustls_support::ALL_CASES);
        }
    };
    (@suite $suite:ident { $($test:ident => { $($run:ident($($arg:expr),*);)+ })* }) => {
        mod $suite {
            $(
                #[test]
                fn $test() {
                    $( super::$run(stringify!($suite) $(, $arg)*); )+
                }
            )*
        }
    };
}

use std::sync::Arc;

use aes_gcm_vaes::rustls as ours;
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::version::{TLS12, TLS13};
use rustls::{
    ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion,
};

/// Which key the server certificate needs for a suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Ecdsa,
    Rsa,
}

/// One of the six suites: ours, ring's twin, and how OpenSSL and GnuTLS are told to use it.
#[derive(Clone, Copy)]
pub struct Case {
    pub ours: SupportedCipherSuite,
    pub ring: SupportedCipherSuite,
    pub openssl_name: &'static str,
    pub tls13: bool,
    pub key: KeyKind,
}

impl Case {
    pub fn version(&self) -> &'static SupportedProtocolVersion {
        if self.tls13 { &TLS13 } else { &TLS12 }
    }

    /// OpenSSL options forcing this suite and its protocol version.
    pub fn openssl_args(&self) -> [&'static str; 3] {
        if self.tls13 {
            ["-tls1_3", "-ciphersuites", self.openssl_name]
        } else {
            ["-tls1_2", "-cipher", self.openssl_name]
        }
    }

    /// A GnuTLS priority string allowing this suite and its protocol version only.
    pub fn gnutls_priority(&self) -> String {
        let cipher = if self.aes256() {
            "+AES-256-GCM"
        } else {
            "+AES-128-GCM"
        };
        let version_and_kx = match (self.tls13, self.key) {
            (true, _) => "+VERS-TLS1.3",
            (false, KeyKind::Ecdsa) => "+VERS-TLS1.2:+ECDHE-ECDSA",
            (false, KeyKind::Rsa) => "+VERS-TLS1.2:+ECDHE-RSA",
        };
        format!("NONE:{version_and_kx}:{cipher}:+AEAD:+GROUP-ALL:+SIGN-ALL:+COMP-NULL")
    }

    pub fn aes256(&self) -> bool {
        self.openssl_name.contains("AES256") || self.openssl_name.contains("AES_256")
    }
}

pub fn case(name: &str) -> Case {
    use ring::cipher_suite as r;
    let (ours, ring, openssl_name, tls13, key) = match name {
        // The TLS 1.3 suites are split between the two key types so RSA-PSS is exercised too.
        "tls13_aes_128_gcm_sha256" => (
            ours::TLS13_AES_128_GCM_SHA256,
            r::TLS13_AES_128_GCM_SHA256,
            "TLS_AES_128_GCM_SHA256",
            true,
            KeyKind::Ecdsa,
        ),
        "tls13_aes_256_gcm_sha384" => (
            ours::TLS13_AES_256_GCM_SHA384,
            r::TLS13_AES_256_GCM_SHA384,
            "TLS_AES_256_GCM_SHA384",
            true,
            KeyKind::Rsa,
        ),
        "ecdhe_ecdsa_aes_128_gcm_sha256" => (
            ours::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            r::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            false,
            KeyKind::Ecdsa,
        ),
        "ecdhe_ecdsa_aes_256_gcm_sha384" => (
            ours::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            r::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            false,
            KeyKind::Ecdsa,
        ),
        "ecdhe_rsa_aes_128_gcm_sha256" => (
            ours::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            r::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            "ECDHE-RSA-AES128-GCM-SHA256",
            false,
            KeyKind::Rsa,
        ),
        "ecdhe_rsa_aes_256_gcm_sha384" => (
            ours::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            r::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            "ECDHE-RSA-AES256-GCM-SHA384",
            false,
            KeyKind::Rsa,
        ),
        _ => panic!("unknown suite {name}"),
    };
    Case {
        ours,
        ring,
        openssl_name,
        tls13,
        key,
    }
}

pub const ALL_CASES: [&str; 6] = [
    "tls13_aes_128_gcm_sha256",
    "tls13_aes_256_gcm_sha384",
    "ecdhe_ecdsa_aes_128_gcm_sha256",
    "ecdhe_ecdsa_aes_256_gcm_sha384",
    "ecdhe_rsa_aes_128_gcm_sha256",
    "ecdhe_rsa_aes_256_gcm_sha384",
];

/// A self-signed certificate for `localhost`, made now, and its key.
pub struct Identity {
    pub cert_der: CertificateDer<'static>,
    pub cert_pem: String,
    pub key_pkcs8: Vec<u8>,
    pub key_pem: String,
}

impl Identity {
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key_pkcs8.clone()).into()
    }
}

/// rcgen on ring can sign with RSA but not make RSA keys, so the RSA key is a fixed
/// test-only key; the certificate around it is still made fresh.
const TEST_RSA_KEY: &str = include_str!("../data/rustls-test-rsa2048.key");

pub fn identity(kind: KeyKind) -> Identity {
    let key = match kind {
        KeyKind::Ecdsa => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        KeyKind::Rsa => {
            rcgen::KeyPair::from_pem_and_sign_algo(TEST_RSA_KEY, &rcgen::PKCS_RSA_SHA256)
        }
    }
    .expect("test key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    let cert = params.self_signed(&key).expect("self-signed certificate");
    Identity {
        cert_der: cert.der().clone(),
        cert_pem: cert.pem(),
        key_pkcs8: key.serialize_der(),
        key_pem: key.serialize_pem(),
    }
}

/// Our provider, or ring's, cut down to the one suite under test.
pub fn provider_for(case: &Case, use_ours: bool) -> Arc<CryptoProvider> {
    #[allow(deprecated)] // rustls 0.23.48+: ring's provider lacks post-quantum groups
    let base = if use_ours {
        ours::provider()
    } else {
        ring::default_provider()
    };
    let suite = if use_ours { case.ours } else { case.ring };
    Arc::new(CryptoProvider {
        cipher_suites: vec![suite],
        ..base
    })
}

pub fn client_config(case: &Case, use_ours: bool, trusted: &Identity) -> ClientConfig {
    let mut roots = RootCertStore::empty();
    roots.add(trusted.cert_der.clone()).expect("trust anchor");
    let mut config = ClientConfig::builder_with_provider(provider_for(case, use_ours))
        .with_protocol_versions(&[case.version()])
        .expect("suite and version agree")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.enable_secret_extraction = true;
    config
}

pub fn server_config(case: &Case, use_ours: bool, id: &Identity) -> ServerConfig {
    let mut config = ServerConfig::builder_with_provider(provider_for(case, use_ours))
        .with_protocol_versions(&[case.version()])
        .expect("suite and version agree")
        .with_no_client_auth()
        .with_single_cert(vec![id.cert_der.clone()], id.key_der())
        .expect("server certificate");
    config.enable_secret_extraction = true;
    config
}

/// Deterministic, position-dependent test data, different per `salt`.
pub fn pattern(len: usize, salt: u64) -> Vec<u8> {
    let mut x = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

//! `cargo bench --features rustls --bench rustls_transfer`: bulk transfer through an
//! in-memory rustls connection with our provider against rustls's ring provider.
//! The aws-lc-rs comparison lives in the stand-alone `benches/rustls-awslc` crate so
//! that aws-lc-rs is never built as part of this workspace.

#[path = "rustls_transfer/harness.rs"]
mod harness;

use harness::Contender;

#[allow(deprecated)] // rustls 0.23.48+: ring's provider lacks post-quantum groups
fn main() {
    println!(
        "aes-gcm-vaes back end: {}",
        aes_gcm_vaes::Backend::detect().name()
    );
    harness::run(&[
        Contender {
            name: "aes-gcm-vaes",
            provider: aes_gcm_vaes::rustls::provider,
        },
        Contender {
            name: "ring",
            provider: rustls::crypto::ring::default_provider,
        },
    ]);
}

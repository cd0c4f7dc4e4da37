//! Our rustls provider against rustls's ring and aws-lc-rs providers, and aws-lc-rs's
//! with our AES-GCM swapped in (`with_our_aes_gcm`), bulk transfer
//! in memory (see `../rustls_transfer/harness.rs`). A separate crate and workspace so
//! that aws-lc-rs stays out of the main build: `cargo run --release` here.

#[path = "../../rustls_transfer/harness.rs"]
mod harness;

use harness::Contender;

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
        Contender {
            name: "aws-lc-rs",
            provider: rustls::crypto::aws_lc_rs::default_provider,
        },
        // aws-lc-rs's provider (its post-quantum key exchange included) with our AES-GCM.
        Contender {
            name: "ours+aws-lc-rs",
            provider: || {
                aes_gcm_vaes::rustls::with_our_aes_gcm(rustls::crypto::aws_lc_rs::default_provider())
            },
        },
    ]);
}

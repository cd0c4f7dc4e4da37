//! QUIC packet protection and a quinn bulk transfer (see `../../../quic/harness.rs`) with
//! our provider against rustls's ring and aws-lc-rs providers. In this separate crate and
//! workspace so that aws-lc-rs stays out of the main build: `cargo run --release --bin quic`
//! here.

#[path = "../../../quic/harness.rs"]
mod harness;

use harness::Contender;

fn main() {
    let [ours, ring] = harness::ours_and_ring();
    let aws_lc_rs = Contender {
        name: "aws-lc-rs",
        provider: rustls::crypto::aws_lc_rs::default_provider,
    };
    harness::run(&[ours, ring, aws_lc_rs]);
}

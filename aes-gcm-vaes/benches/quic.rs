//! `cargo bench -p aes-gcm-vaes --features rustls --bench quic`: QUIC packet protection
//! (seal+mask, unmask+open of 1200 and 1350-byte packets) and a quinn bulk transfer with
//! our provider against rustls's ring provider; see `quic/harness.rs`. The aws-lc-rs
//! comparison is in the stand-alone `benches/rustls-awslc` crate (`--bin quic`), so that
//! aws-lc-rs is never built as part of this workspace.

#[path = "quic/harness.rs"]
mod harness;

fn main() {
    harness::run(&harness::ours_and_ring());
}

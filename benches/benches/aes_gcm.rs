//! Criterion benches of AES-GCM seal/open (written next).

fn main() {}

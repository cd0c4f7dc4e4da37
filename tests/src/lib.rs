//! Helpers shared by the cross-crate tests: a small deterministic generator and the
//! reference implementation (RustCrypto `aes-gcm`) wrapped for runtime key sizes.

use aes_gcm::aead::{AeadInOut, KeyInit, array::Array, consts::U12};

/// SplitMix64: tiny, deterministic, good enough to pick test inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// A vector of `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
}

/// Seals with RustCrypto `aes-gcm` (96-bit nonce): returns ciphertext and 16-byte tag.
pub fn reference_seal(key: &[u8], nonce: &[u8; 12], aad: &[u8], msg: &[u8]) -> (Vec<u8>, [u8; 16]) {
    fn run<A: KeyInit + AeadInOut<NonceSize = U12>>(
        key: &[u8],
        nonce: &[u8; 12],
        aad: &[u8],
        msg: &[u8],
    ) -> (Vec<u8>, [u8; 16]) {
        let c = A::new_from_slice(key).expect("key length");
        let mut buf = msg.to_vec();
        let tag = c
            .encrypt_inout_detached(&Array::from(*nonce), aad, buf.as_mut_slice().into())
            .expect("reference seal");
        (buf, tag.as_slice().try_into().expect("16-byte tag"))
    }
    match key.len() {
        16 => run::<aes_gcm::Aes128Gcm>(key, nonce, aad, msg),
        24 => run::<aes_gcm::AesGcm<aes_gcm::aes::Aes192, U12>>(key, nonce, aad, msg),
        32 => run::<aes_gcm::Aes256Gcm>(key, nonce, aad, msg),
        n => panic!("bad key length {n}"),
    }
}

/// Where NIST's CAVP files are (`tests/fetch-cavp.sh` puts them in `target/cavp`;
/// `CAVP_DIR` overrides), for the tests that run them.
// Shared with tls-cbc-aead's known-answer test (this crate is not published).
#[path = "../../tls-cbc-aead/tests/common/file_test.rs"]
pub mod file_test;

pub mod cavp {
    use std::path::PathBuf;

    /// NIST's CAVP files, which `tests/fetch-cavp.sh` puts in `target/cavp`.
    const CAVP: crate::file_test::Fetched = crate::file_test::Fetched {
        dir_var: "CAVP_DIR",
        default_dir: "cavp",
        required_var: "CAVP_REQUIRED",
        script: "tests/fetch-cavp.sh",
    };

    /// The directory, if all of `files` are in it; see [`crate::file_test::Fetched`].
    pub fn dir(files: &[&str], what: &str) -> Option<PathBuf> {
        CAVP.dir(files, &format!("the CAVP {what} files"))
    }

    /// Prints one file's line for one back end (`{file} on {backend}: {what}, n failures`,
    /// which CI's log keeps) and fails the test on the first few failures.
    pub fn report(file: &str, backend: gcm_core::Backend, what: &str, failures: &[String]) {
        println!(
            "{file} on {}: {what}, {} failures",
            backend.name(),
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "{file} on {}: {} failures, first: {:?}",
            backend.name(),
            failures.len(),
            &failures[..failures.len().min(5)]
        );
    }

    /// Bytes from the files' hex.
    pub use crate::file_test::hex;
}

/// BoringSSL's AEAD vector files, fetched by `tests/fetch-boringssl-vectors.sh`.
pub mod boringssl {
    /// The text of BoringSSL's `file`, if fetched (see `file_test::boringssl_vectors`,
    /// which skips or, where CI requires the files, panics).
    pub fn read(file: &str) -> Option<String> {
        let path = crate::file_test::boringssl_vectors(file)?;
        Some(std::fs::read_to_string(path).expect("a readable vector file"))
    }
}

//! Measuring half of the workspace: the pieces shared by the `speed` tool and the criterion
//! benches. It owns the workload (algorithms, sizes, key, nonce, 13-byte TLS AD), the clock
//! and the measuring loop, the adapters that put our AES-GCM and each peer behind one trait,
//! and the report writers (text table, CSV, Markdown, SVG chart).
//!
//! Every measurement runs one in-place operation with a detached tag over and over on one
//! buffer with one key, and times it with the calling thread's CPU clock, so that time the
//! thread spends descheduled on a busy machine is not counted.

pub mod clock;
pub mod gcm;
pub mod ours;
pub mod peers;
pub mod report;
#[cfg(feature = "peer-openssl")]
pub mod tls_cbc;

/// The AEADs measured.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Alg {
    Aes128Gcm,
    Aes256Gcm,
}

impl Alg {
    pub const ALL: [Alg; 2] = [Alg::Aes128Gcm, Alg::Aes256Gcm];

    /// The name BoringSSL's `bssl speed` prints.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Aes128Gcm => "AES-128-GCM",
            Alg::Aes256Gcm => "AES-256-GCM",
        }
    }

    pub fn key(self) -> &'static [u8] {
        match self {
            Alg::Aes128Gcm => &KEY[..16],
            Alg::Aes256Gcm => &KEY[..],
        }
    }
}

/// Seal (encrypt and tag) or open (check and decrypt).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Seal,
    Open,
}

impl Op {
    pub const ALL: [Op; 2] = [Op::Seal, Op::Open];

    pub fn name(self) -> &'static str {
        match self {
            Op::Seal => "seal",
            Op::Open => "open",
        }
    }
}

/// Message sizes `bssl speed` uses for AEADs, plus 512 and the 1350-byte typical TLS record.
pub const DEFAULT_SIZES: [usize; 8] = [16, 64, 256, 512, 1350, 4096, 8192, 16384];

/// A TLS 1.2 record header's worth of associated data (sequence number, type, version, length).
pub const AD: [u8; 13] = [0, 0, 0, 0, 0, 0, 0, 7, 0x17, 0x03, 0x03, 0x40, 0x00];

/// The one nonce every operation uses. Reusing it is wrong for real traffic and harmless for
/// timing; it is also what lets `open` be timed without re-copying the ciphertext (see
/// [`gcm::GcmSubject`]).
pub const NONCE: [u8; 12] = [
    0xca, 0xfe, 0xba, 0xbe, 0xfa, 0xce, 0xdb, 0xad, 0xde, 0xca, 0xf8, 0x88,
];

/// The AES-CTR roofline's first counter block: `NONCE || 2`, the first block GCM
/// encrypts with that nonce, so the CTR loop runs the same keystream as seal and open.
pub fn roofline_counter() -> [u8; 16] {
    let mut counter = [0u8; 16];
    counter[..12].copy_from_slice(&NONCE);
    counter[15] = 2;
    counter
}

const KEY: [u8; 32] = [
    0x60, 0x3d, 0xeb, 0x10, 0x15, 0xca, 0x71, 0xbe, 0x2b, 0x73, 0xae, 0xf0, 0x85, 0x7d, 0x77, 0x81,
    0x1f, 0x35, 0x2c, 0x07, 0x3b, 0x61, 0x08, 0xd7, 0x2d, 0x98, 0x10, 0xa3, 0x09, 0x14, 0xdf, 0xf4,
];

/// A buffer of `len` bytes with every page already touched and a non-zero pattern.
pub fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 + 7) as u8).collect()
}

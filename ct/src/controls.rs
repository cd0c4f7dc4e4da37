//! Controls: code that leaks, on purpose, which the sanitizer must report. If one of
//! them goes unreported, a clean result elsewhere proves nothing.

use std::hint::black_box;

use gcm_core::{Backend, GcmKey};

use crate::check::{Expect, Ledger, Rng, secret};
use crate::say;

/// A table the compiler cannot fold: every entry differs.
static SBOX: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).wrapping_mul(167).wrapping_add(13);
        i += 1;
    }
    t
};

/// Something to do in a branch, so that the branch stays a branch (with nothing but
/// arithmetic inside, LLVM would make a select of it, which is no branch at all).
#[inline(never)]
fn taken(counter: &mut usize) {
    *counter = black_box(*counter + 1);
}

/// Branches on a secret byte.
#[inline(never)]
fn branch_on_secret(x: &[u8]) -> usize {
    let mut n = 0;
    for &b in x {
        if b > 0x80 {
            taken(&mut n);
        }
    }
    n
}

/// Indexes a table with a secret byte.
#[inline(never)]
fn index_by_secret(x: &[u8]) -> u8 {
    let table = black_box(&SBOX);
    x.iter().fold(0, |acc, &b| acc ^ table[usize::from(b)])
}

/// A tag check written the obvious way: slice `==` stops at the first differing byte.
fn leaky_tag_check() -> usize {
    let mut rng = Rng::new(1);
    let mut key = rng.bytes(16);
    secret(&mut key);
    let k = GcmKey::new_with_backend(&key, Backend::Portable).expect("portable");
    let mut buf = rng.bytes(32);
    let tag = k.seal_in_place(&[0; 12], b"", &mut buf).expect("seal");
    let guess = [0u8; 16];
    let len = black_box(16);
    if tag[..len] == guess[..len] {
        let mut n = 0;
        taken(&mut n);
    }
    1
}

/// Three-way XOR through VPTERNLOG without the shadow-propagating wrapper: the sanitizer
/// checks its operands strictly, which is why the kernels wrap it (`ct::msan`).
#[cfg(target_arch = "x86_64")]
fn bare_ternary_logic() -> usize {
    use core::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_ternarylogic_epi64};

    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    fn xor3(x: &[u8; 96]) -> [u8; 32] {
        // SAFETY: `x` is 96 readable bytes; the loads are unaligned.
        let v: [__m256i; 3] =
            core::array::from_fn(|i| unsafe { _mm256_loadu_si256(x[32 * i..].as_ptr().cast()) });
        let r = _mm256_ternarylogic_epi64::<0x96>(v[0], v[1], v[2]);
        // SAFETY: a vector is 32 plain bytes.
        unsafe { core::mem::transmute::<__m256i, [u8; 32]>(r) }
    }
    let mut x = [7u8; 96];
    secret(&mut x);
    // SAFETY: the caller checked AVX2, AVX-512F and AVX-512VL.
    black_box(unsafe { xor3(&x) });
    1
}

/// SHA1RNDS4 without the wrapper the SHA-NI engines put around it: the sanitizer checks
/// its operands strictly.
#[cfg(target_arch = "x86_64")]
fn bare_sha1rnds4() -> usize {
    use core::arch::x86_64::{__m128i, _mm_sha1rnds4_epu32};

    #[target_feature(enable = "sha,sse2")]
    fn rounds(x: [u8; 32]) -> [u8; 16] {
        // SAFETY: 32 bytes are two vectors, a vector 16 bytes; any bits are valid in both.
        unsafe {
            let [a, b] = core::mem::transmute::<[u8; 32], [__m128i; 2]>(x);
            core::mem::transmute::<__m128i, [u8; 16]>(_mm_sha1rnds4_epu32::<0>(a, b))
        }
    }
    let mut x = [9u8; 32];
    secret(&mut x);
    // SAFETY: the caller checked SHA-NI.
    black_box(unsafe { rounds(black_box(x)) });
    1
}

/// How the sanitizer propagates through SHA256RNDS2 left to itself: a secret only in
/// the lowest dword of the message operand, on which every result dword depends. It
/// treats the instruction as lane-wise arithmetic, so the other result lanes come out
/// clean: why the SHA-NI engines wrap every SHA instruction (`ct::msan::opaque`).
/// Returns how many of the four result dwords lost the taint.
#[cfg(target_arch = "x86_64")]
fn sha256rnds2_clean_lanes() -> usize {
    use core::arch::x86_64::{__m128i, _mm_sha256rnds2_epu32};

    #[target_feature(enable = "sha,sse2")]
    fn rounds(x: [u8; 48]) -> [u8; 16] {
        // SAFETY: 48 bytes are three vectors, a vector 16 bytes; any bits are valid in both.
        unsafe {
            let [a, b, k] = core::mem::transmute::<[u8; 48], [__m128i; 3]>(x);
            core::mem::transmute::<__m128i, [u8; 16]>(_mm_sha256rnds2_epu32(a, b, k))
        }
    }
    let mut x = [5u8; 48];
    secret(&mut x[32..36]);
    // SAFETY: the caller checked SHA-NI.
    let out = black_box(unsafe { rounds(black_box(x)) });
    out.chunks(4)
        .filter(|lane| !gcm_core::ct::is_poisoned(lane))
        .count()
}

/// 3DES as RustCrypto `des` computes it, keyed with a secret: its S-boxes are tables
/// indexed by key and data, the reason `tls-cbc-aead` has its own 3DES (`tdes.rs`),
/// which the TLS suites check with the same secrets.
fn table_3des() -> usize {
    use cipher::{BlockCipherEncrypt, KeyInit};
    let mut key = Rng::new(3).bytes(24);
    secret(&mut key);
    let c = des::TdesEde3::new_from_slice(&key).expect("24-byte key");
    let mut block = [0u8; 8];
    c.encrypt_block((&mut block).into());
    black_box(block);
    1
}

/// Runs `leak` on four secret bytes (a report per byte and branch or load).
fn on_secret_bytes(rng: &mut Rng, leak: fn(&[u8]) -> usize) -> usize {
    let mut x = rng.bytes(4);
    secret(&mut x);
    black_box(leak(&x));
    1
}

pub fn run(ledger: &mut Ledger) {
    let mut rng = Rng::new(7);
    ledger.group(
        Expect::Reported,
        "control: branch on a secret",
        "harness",
        || on_secret_bytes(&mut rng, branch_on_secret),
    );
    ledger.group(
        Expect::Reported,
        "control: table index by a secret",
        "harness",
        || on_secret_bytes(&mut rng, |x| usize::from(index_by_secret(x))),
    );
    ledger.group(
        Expect::Reported,
        "control: 3DES through S-box tables (RustCrypto des)",
        "harness",
        table_3des,
    );
    ledger.group(
        Expect::Reported,
        "control: tag compared with ==",
        "portable",
        leaky_tag_check,
    );
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx2") {
        ledger.group(
            Expect::Reported,
            "control: VPTERNLOG not wrapped",
            "harness",
            bare_ternary_logic,
        );
    } else {
        say!("ct-msan: control: VPTERNLOG not wrapped: not on this CPU (no AVX-512VL)");
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("sha") {
        ledger.group(
            Expect::Reported,
            "control: SHA1RNDS4 not wrapped",
            "harness",
            bare_sha1rnds4,
        );
        let clean = sha256rnds2_clean_lanes();
        say!(
            "ct-msan: note: SHA256RNDS2 not wrapped, secret in one message dword: {clean} of \
             4 result dwords come out clean{}",
            if clean > 0 {
                " (lane-wise approximation: the engines' wrapper is needed)"
            } else {
                " (the wrapper is now only conservative)"
            }
        );
    } else {
        say!("ct-msan: control: SHA1RNDS4 not wrapped: not on this CPU (no SHA-NI)");
    }
}

//! BoringSSL's own AES-GCM vectors (`crypto/cipher/test/aes_{128,192,256}_gcm_tests.txt`:
//! 146 cases, NIST's GCM specification examples and BoringSSL's additions, with nonces of
//! 8 to 64 bytes, 128-byte associated data and messages long enough for every kernel's
//! bulk loop) on every back end this CPU has, through `gcm_core` (any nonce length) and,
//! for 96-bit nonces, through the typed `aes-gcm-vaes` API. Each case must seal to its
//! `CT` and `TAG`, open to its `IN`, and fail to open, with the ciphertext left in place,
//! once one bit of its tag, ciphertext or associated data is flipped.
//!
//! The files are not in the repository: `bash tests/fetch-boringssl-vectors.sh` puts them
//! in `target/boringssl-vectors` (see `tests::boringssl`).

use aes_gcm_vaes::{
    AesGcm, AesKeySize, Nonce, Tag,
    aead::{AeadInOut, KeyInit, consts::U12},
    aes,
};
use gcm_core::{Backend, GcmKey};
use tests::file_test;

struct Case {
    line: usize,
    key: Vec<u8>,
    nonce: Vec<u8>,
    ad: Vec<u8>,
    pt: Vec<u8>,
    ct: Vec<u8>,
    tag: Vec<u8>,
}

fn parse(text: &str) -> Vec<Case> {
    file_test::parse(text)
        .into_iter()
        .map(|r| {
            r.only(&["KEY", "NONCE", "AD", "IN", "CT", "TAG"]);
            Case {
                line: r.line,
                key: r.bytes("KEY"),
                nonce: r.bytes("NONCE"),
                ad: r.bytes("AD"),
                pt: r.bytes("IN"),
                ct: r.bytes("CT"),
                tag: r.bytes("TAG"),
            }
        })
        .collect()
}

/// `bytes` with bit `bit` flipped.
fn flipped(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v[bit / 8] ^= 1 << (bit % 8);
    v
}

/// Opening `ct` under `tag` and `ad` must fail and leave `ct` in place.
fn rejects(key: &GcmKey, c: &Case, ad: &[u8], ct: &[u8], tag: &[u8]) -> bool {
    let mut buf = ct.to_vec();
    key.open_in_place(&c.nonce, ad, &mut buf, tag).is_err() && buf == ct
}

/// One case on one back end: the list of what went wrong.
fn check(backend: Backend, c: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    let key = GcmKey::new_with_backend(&c.key, backend).expect("key");
    let mut buf = c.pt.clone();
    let tag = key.seal_in_place(&c.nonce, &c.ad, &mut buf).expect("seal");
    if buf != c.ct || tag[..c.tag.len()] != c.tag[..] {
        wrong.push("sealed to something else".into());
    }
    let mut buf = c.ct.clone();
    if key
        .open_in_place(&c.nonce, &c.ad, &mut buf, &c.tag)
        .is_err()
        || buf != c.pt
    {
        wrong.push("did not open".into());
    }
    // Flipped bits: the first and last of the tag, of the ciphertext, of the AD.
    for bit in [0, c.tag.len() * 8 - 1] {
        if !rejects(&key, c, &c.ad, &c.ct, &flipped(&c.tag, bit)) {
            wrong.push(format!("tag bit {bit} flipped: opened"));
        }
    }
    if !c.ct.is_empty() {
        for bit in [0, c.ct.len() * 8 - 1] {
            if !rejects(&key, c, &c.ad, &flipped(&c.ct, bit), &c.tag) {
                wrong.push(format!("ciphertext bit {bit} flipped: opened"));
            }
        }
    }
    if !c.ad.is_empty() && !rejects(&key, c, &flipped(&c.ad, 0), &c.ct, &c.tag) {
        wrong.push("AD bit 0 flipped: opened".into());
    }
    wrong
}

/// The same case through `AesGcm<A, U12>`'s `aead` traits (96-bit nonces only).
fn check_typed<A: AesKeySize>(c: &Case) -> bool {
    let cipher = AesGcm::<A, U12>::new_from_slice(&c.key).expect("key");
    let nonce = Nonce::<U12>::try_from(&c.nonce[..]).expect("nonce");
    let tag = Tag::try_from(&c.tag[..]).expect("16-byte tag");
    let mut buf = c.pt.clone();
    let sealed = cipher
        .encrypt_inout_detached(&nonce, &c.ad, buf.as_mut_slice().into())
        .expect("seal");
    let seal_ok = buf == c.ct && sealed == tag;
    let mut buf = c.ct.clone();
    let opened = cipher.decrypt_inout_detached(&nonce, &c.ad, buf.as_mut_slice().into(), &tag);
    seal_ok && opened.is_ok() && buf == c.pt
}

fn run(file: &str, key_len: usize) {
    let Some(text) = tests::boringssl::read(file) else {
        return;
    };
    let cases = parse(&text);
    assert!(cases.len() >= 6, "{file}: {} cases", cases.len());
    for c in &cases {
        assert_eq!(c.key.len(), key_len, "{file}:{}: key length", c.line);
        assert_eq!(c.tag.len(), 16, "{file}:{}: tag length", c.line);
    }
    for backend in Backend::available() {
        let mut failures = Vec::new();
        for c in &cases {
            for what in check(backend, c) {
                failures.push(format!("line {}: {what}", c.line));
            }
        }
        println!(
            "{file} on {backend}: {} cases, each sealed, opened, and rejected with a tag, ciphertext or AD bit flipped, {} failures",
            cases.len(),
            failures.len()
        );
        assert!(failures.is_empty(), "{file} on {backend}: {failures:?}");
    }
    let mut typed = 0;
    for c in cases.iter().filter(|c| c.nonce.len() == 12) {
        let ok = match key_len {
            16 => check_typed::<aes::Aes128>(c),
            24 => check_typed::<aes::Aes192>(c),
            _ => check_typed::<aes::Aes256>(c),
        };
        assert!(ok, "{file}:{}: through the aead traits", c.line);
        typed += 1;
    }
    println!("{file} through AesGcm<_, U12>: {typed} cases with 96-bit nonces");
}

#[test]
fn boringssl_aes_128_gcm() {
    run("aes_128_gcm_tests.txt", 16);
}

#[test]
fn boringssl_aes_192_gcm() {
    run("aes_192_gcm_tests.txt", 24);
}

#[test]
fn boringssl_aes_256_gcm() {
    run("aes_256_gcm_tests.txt", 32);
}

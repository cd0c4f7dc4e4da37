//! Differential AES-GCM: every back end this CPU has against RustCrypto `aes-gcm` 0.11.
//!
//! The input chooses the key size (128/192/256), the nonce length (1 to 128 bytes, from a
//! list that covers the 96-bit fast path and the GHASH-derived `J0`), the associated data,
//! the message, a truncated tag length and one bit to flip. For each back end, in place
//! and with separate buffers: sealing must give the reference's ciphertext and tag;
//! opening must return the message (with the full tag and with a truncated prefix); and
//! the tampered message (one bit of tag, ciphertext, AD or nonce flipped) must be rejected
//! by the reference and by us, leaving the ciphertext in place or a zeroed output.
#![no_main]

use aes_gcm::aead::{AeadInOut, KeyInit, Nonce, Tag, consts::*};
use aes_gcm_vaes::aead::{Aead, Payload};
use gcm_core::{Backend, Error, GcmKey, InOutBuf};
use hardening_fuzz::Cursor;
use libfuzzer_sys::fuzz_target;

/// Nonce lengths the reference is instantiated for.
const NONCE_LENS: [usize; 23] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 48, 64, 100, 128,
];

/// What the reference says about one input.
struct Reference {
    ct: Vec<u8>,
    tag: [u8; 16],
    /// Whether it accepts the tampered message.
    tampered_accepted: bool,
}

/// One tampered message: nonce, AD, ciphertext, full tag.
struct Tampered {
    nonce: Vec<u8>,
    aad: Vec<u8>,
    ct: Vec<u8>,
    tag: [u8; 16],
}

fn reference<A: KeyInit + AeadInOut<TagSize = U16>>(
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    msg: &[u8],
    tamper: impl FnOnce(&[u8], [u8; 16]) -> Tampered,
) -> Reference {
    let c = A::new_from_slice(key).expect("key length");
    let n = Nonce::<A>::try_from(nonce).expect("nonce length");
    let mut ct = msg.to_vec();
    let tag = c
        .encrypt_inout_detached(&n, aad, ct.as_mut_slice().into())
        .expect("reference seal");
    let tag: [u8; 16] = tag.into();
    let t = tamper(&ct, tag);
    let n2 = Nonce::<A>::try_from(t.nonce.as_slice()).expect("nonce length");
    let mut buf = t.ct.clone();
    let tampered_accepted = c
        .decrypt_inout_detached(
            &n2,
            &t.aad,
            buf.as_mut_slice().into(),
            &Tag::<A>::from(t.tag),
        )
        .is_ok();
    Reference {
        ct,
        tag,
        tampered_accepted,
    }
}

macro_rules! by_nonce_len {
    ($aes:ty, $nlen:expr, $($arg:expr),*) => {
        match $nlen {
            1 => reference::<aes_gcm::AesGcm<$aes, U1>>($($arg),*),
            2 => reference::<aes_gcm::AesGcm<$aes, U2>>($($arg),*),
            3 => reference::<aes_gcm::AesGcm<$aes, U3>>($($arg),*),
            4 => reference::<aes_gcm::AesGcm<$aes, U4>>($($arg),*),
            5 => reference::<aes_gcm::AesGcm<$aes, U5>>($($arg),*),
            6 => reference::<aes_gcm::AesGcm<$aes, U6>>($($arg),*),
            7 => reference::<aes_gcm::AesGcm<$aes, U7>>($($arg),*),
            8 => reference::<aes_gcm::AesGcm<$aes, U8>>($($arg),*),
            9 => reference::<aes_gcm::AesGcm<$aes, U9>>($($arg),*),
            10 => reference::<aes_gcm::AesGcm<$aes, U10>>($($arg),*),
            11 => reference::<aes_gcm::AesGcm<$aes, U11>>($($arg),*),
            12 => reference::<aes_gcm::AesGcm<$aes, U12>>($($arg),*),
            13 => reference::<aes_gcm::AesGcm<$aes, U13>>($($arg),*),
            14 => reference::<aes_gcm::AesGcm<$aes, U14>>($($arg),*),
            15 => reference::<aes_gcm::AesGcm<$aes, U15>>($($arg),*),
            16 => reference::<aes_gcm::AesGcm<$aes, U16>>($($arg),*),
            17 => reference::<aes_gcm::AesGcm<$aes, U17>>($($arg),*),
            24 => reference::<aes_gcm::AesGcm<$aes, U24>>($($arg),*),
            32 => reference::<aes_gcm::AesGcm<$aes, U32>>($($arg),*),
            48 => reference::<aes_gcm::AesGcm<$aes, U48>>($($arg),*),
            64 => reference::<aes_gcm::AesGcm<$aes, U64>>($($arg),*),
            100 => reference::<aes_gcm::AesGcm<$aes, U100>>($($arg),*),
            128 => reference::<aes_gcm::AesGcm<$aes, U128>>($($arg),*),
            n => unreachable!("nonce length {n} not in NONCE_LENS"),
        }
    };
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let key_len = [16, 24, 32][c.below(3)];
    let nonce_len = NONCE_LENS[c.below(NONCE_LENS.len())];
    let aad_len = c.below(512);
    let short_tag = 4 + c.below(13);
    let what = c.below(4);
    let pos = c.u16() as usize;
    let bit = 1u8 << (c.byte() % 8);
    let key = c.exact(key_len);
    let nonce = c.exact(nonce_len);
    let aad = c.take(aad_len).to_vec();
    let msg = c.rest().to_vec();

    // Flip one bit of the part `what` picks (the tag when that part is empty).
    let tamper = |ct: &[u8], tag: [u8; 16]| {
        let mut t = Tampered {
            nonce: nonce.clone(),
            aad: aad.clone(),
            ct: ct.to_vec(),
            tag,
        };
        let part: &mut [u8] = match what {
            1 if !t.ct.is_empty() => &mut t.ct,
            2 if !t.aad.is_empty() => &mut t.aad,
            3 => &mut t.nonce,
            _ => &mut t.tag,
        };
        let i = pos % part.len();
        part[i] ^= bit;
        t
    };
    let r = match key_len {
        16 => by_nonce_len!(
            aes_gcm::aes::Aes128,
            nonce_len,
            &key,
            &nonce,
            &aad,
            &msg,
            tamper
        ),
        24 => by_nonce_len!(
            aes_gcm::aes::Aes192,
            nonce_len,
            &key,
            &nonce,
            &aad,
            &msg,
            tamper
        ),
        _ => by_nonce_len!(
            aes_gcm::aes::Aes256,
            nonce_len,
            &key,
            &nonce,
            &aad,
            &msg,
            tamper
        ),
    };
    assert!(
        !r.tampered_accepted,
        "the reference accepted a tampered message"
    );
    let t = tamper(&r.ct, r.tag);

    for b in Backend::available() {
        let k = GcmKey::new_with_backend(&key, b).expect("available back end");
        // Seal in place and from a separate input.
        let mut buf = msg.clone();
        let tag = k.seal_in_place(&nonce, &aad, &mut buf).expect("seal");
        assert_eq!((&buf, tag), (&r.ct, r.tag), "{b}: seal in place");
        let mut out = vec![0xEE; msg.len()];
        let tag = k
            .seal_inout(&nonce, &aad, InOutBuf::new(&msg, &mut out).unwrap())
            .expect("seal");
        assert_eq!((&out, tag), (&r.ct, r.tag), "{b}: seal separate");

        // Open, full tag and a truncated prefix, both ways.
        for tl in [16, short_tag] {
            let mut buf = r.ct.clone();
            k.open_in_place(&nonce, &aad, &mut buf, &r.tag[..tl])
                .expect("open in place");
            assert_eq!(buf, msg, "{b}: open in place, {tl}-byte tag");
            let mut out = vec![0x11; msg.len()];
            k.open_inout(
                &nonce,
                &aad,
                InOutBuf::new(&r.ct, &mut out).unwrap(),
                &r.tag[..tl],
            )
            .expect("open separate");
            assert_eq!(out, msg, "{b}: open separate, {tl}-byte tag");
        }

        // Tampered: rejected, and no plaintext left behind.
        let mut buf = t.ct.clone();
        let res = k.open_in_place(&t.nonce, &t.aad, &mut buf, &t.tag);
        assert_eq!(
            res,
            Err(Error::AuthenticationFailed),
            "{b}: tampered accepted"
        );
        assert_eq!(buf, t.ct, "{b}: failed open must restore the ciphertext");
        let mut out = vec![0x22; msg.len()];
        let res = k.open_inout(
            &t.nonce,
            &t.aad,
            InOutBuf::new(&t.ct, &mut out).unwrap(),
            &t.tag,
        );
        assert_eq!(
            res,
            Err(Error::AuthenticationFailed),
            "{b}: tampered accepted"
        );
        assert!(
            out.iter().all(|&x| x == 0),
            "{b}: failed open must zero the output"
        );
    }

    // The typed API (detected back end) for the 96-bit nonce, AES-128 and AES-256.
    if nonce_len == 12 && key_len != 24 {
        let payload = Payload {
            msg: &msg,
            aad: &aad,
        };
        let n = aes_gcm_vaes::Nonce::<U12>::try_from(nonce.as_slice()).unwrap();
        let sealed = if key_len == 16 {
            let a = aes_gcm_vaes::Aes128Gcm::new_from_slice(&key).unwrap();
            let s = a.encrypt(&n, payload).expect("typed seal");
            assert_eq!(a.decrypt(&n, Payload { msg: &s, aad: &aad }).unwrap(), msg);
            s
        } else {
            let a = aes_gcm_vaes::Aes256Gcm::new_from_slice(&key).unwrap();
            let s = a.encrypt(&n, payload).expect("typed seal");
            assert_eq!(a.decrypt(&n, Payload { msg: &s, aad: &aad }).unwrap(), msg);
            s
        };
        assert_eq!(&sealed[..msg.len()], r.ct.as_slice());
        assert_eq!(&sealed[msg.len()..], r.tag.as_slice());
    }
});

//! `aes-gcm-vaes` used exactly as RustCrypto `aes-gcm` 0.11 is used: the same names,
//! the same generic parameters, the same traits, the same answers.

use aes_gcm_vaes::{
    A_MAX, Aes128Gcm, Aes256Gcm, AesGcm, Backend, Key, Nonce, P_MAX, Tag,
    aead::{
        Aead, AeadInOut, KeyInit, Payload,
        array::{Array, ArraySize},
        arrayvec::ArrayVec,
        consts::{U1, U4, U8, U12, U13, U14, U15, U16, U32, U60},
    },
};
use tests::Rng;

#[test]
fn limits_match_aes_gcm() {
    assert_eq!(A_MAX, aes_gcm::A_MAX);
    assert_eq!(P_MAX, aes_gcm::P_MAX);
}

#[test]
fn aead_trait_round_trip_with_payload() {
    let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::from([7; 32]));
    let nonce = Nonce::from([1; 12]);
    let ct = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: b"hello world",
                aad: b"header",
            },
        )
        .unwrap();
    let theirs = aes_gcm::Aes256Gcm::new(&[7; 32].into());
    assert_eq!(
        ct,
        aes_gcm::aead::Aead::encrypt(
            &theirs,
            &nonce,
            Payload {
                msg: b"hello world",
                aad: b"header"
            }
        )
        .unwrap()
    );
    assert_eq!(
        cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: &ct,
                    aad: b"header"
                }
            )
            .unwrap(),
        b"hello world"
    );
    assert!(
        cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: &ct,
                    aad: b"other"
                }
            )
            .is_err()
    );
    assert!(
        cipher.decrypt(&nonce, &ct[..15]).is_err(),
        "shorter than the tag"
    );
}

#[test]
fn in_place_into_arrayvec_and_too_small_buffers() {
    let cipher = Aes128Gcm::new(&[3; 16].into());
    let nonce = Nonce::from([2; 12]);
    let mut buf: ArrayVec<u8, 64> = ArrayVec::new();
    buf.try_extend_from_slice(b"plaintext message").unwrap();
    cipher.encrypt_in_place(&nonce, b"", &mut buf).unwrap();
    assert_eq!(buf.len(), 17 + 16);
    cipher.decrypt_in_place(&nonce, b"", &mut buf).unwrap();
    assert_eq!(&buf[..], b"plaintext message");
    // No room for the tag: an error, and the buffer holds no plaintext.
    let mut small: ArrayVec<u8, 20> = ArrayVec::new();
    small.try_extend_from_slice(b"plaintext message").unwrap();
    assert!(cipher.encrypt_in_place(&nonce, b"", &mut small).is_err());
    assert_ne!(&small[..], b"plaintext message");
}

/// Typed nonce and tag sizes give what `aes-gcm` gives for the same parameters.
fn same_as_aes_gcm<A, N, T>(rng: &mut Rng)
where
    A: aes_gcm_vaes::AesKeySize
        + aes_gcm::aes::cipher::BlockCipherEncrypt
        + aes_gcm::aes::cipher::KeyInit
        + aes_gcm::aes::cipher::BlockSizeUser<BlockSize = U16>,
    N: ArraySize,
    T: aes_gcm_vaes::TagSize + aes_gcm::TagSize,
{
    for len in [0, 1, 16, 31, 100, 300] {
        let key = rng.bytes(<A as aes_gcm_vaes::KeySizeUser>::KeySize::USIZE);
        let nonce = Array::<u8, N>::try_from(&rng.bytes(N::USIZE)[..]).unwrap();
        let aad = rng.bytes(len % 37);
        let msg = rng.bytes(len);
        let ours = AesGcm::<A, N, T>::new_from_slice(&key).unwrap();
        let theirs = aes_gcm::AesGcm::<A, N, T>::new_from_slice(&key).unwrap();
        let mut a = msg.clone();
        let mut b = msg.clone();
        let ta: Tag<T> = ours
            .encrypt_inout_detached(&nonce, &aad, a.as_mut_slice().into())
            .unwrap();
        let tb = theirs
            .encrypt_inout_detached(&nonce, &aad, b.as_mut_slice().into())
            .unwrap();
        assert_eq!(
            (a.clone(), ta.to_vec()),
            (b, tb.to_vec()),
            "nonce {} tag {} len {len}",
            N::USIZE,
            T::USIZE
        );
        ours.decrypt_inout_detached(&nonce, &aad, a.as_mut_slice().into(), &ta)
            .unwrap();
        assert_eq!(a, msg);
    }
}

use aes_gcm::aead::array::typenum::Unsigned;

#[test]
fn other_nonce_and_tag_sizes() {
    let mut rng = Rng::new(7);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes128, U1, U16>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes128, U16, U16>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes192, U12, U16>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes256, U60, U16>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes256, U32, U16>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes128, U12, U12>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes128, U12, U13>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes128, U12, U14>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes256, U12, U15>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes256, U12, U8>(&mut rng);
    same_as_aes_gcm::<aes_gcm_vaes::aes::Aes256, U12, U4>(&mut rng);
}

#[test]
fn empty_nonce_is_an_error_not_a_panic() {
    let cipher =
        AesGcm::<aes_gcm_vaes::aes::Aes128, aes_gcm_vaes::aead::consts::U0>::new(&[0; 16].into());
    let mut buf = *b"data";
    assert!(
        cipher
            .encrypt_inout_detached(&Array::default(), b"", (&mut buf[..]).into())
            .is_err()
    );
    assert_eq!(&buf, b"data", "nothing was encrypted");
    assert!(
        cipher
            .decrypt_inout_detached(
                &Array::default(),
                b"",
                (&mut buf[..]).into(),
                &Array::default()
            )
            .is_err()
    );
}

#[test]
fn wrong_key_length_is_an_error() {
    assert!(Aes128Gcm::new_from_slice(&[0; 15]).is_err());
    assert!(Aes256Gcm::new_from_slice(&[0; 16]).is_err());
    assert!(gcm_core::GcmKey::new(&[0; 20]).is_err());
}

#[test]
fn failed_decrypt_restores_or_zeroes() {
    let cipher = Aes128Gcm::new(&[5; 16].into());
    let nonce = Nonce::from([6; 12]);
    let msg = [0x11u8; 100];
    let mut ct = msg;
    let tag = cipher
        .encrypt_inout_detached(&nonce, b"", (&mut ct[..]).into())
        .unwrap();
    let mut bad = tag;
    bad[0] ^= 1;
    let mut buf = ct;
    assert!(
        cipher
            .decrypt_inout_detached(&nonce, b"", (&mut buf[..]).into(), &bad)
            .is_err()
    );
    assert_eq!(buf, ct, "in place: the ciphertext again");
    let mut out = [0xffu8; 100];
    let io = aes_gcm_vaes::aead::inout::InOutBuf::new(&ct, &mut out).unwrap();
    assert!(
        cipher
            .decrypt_inout_detached(&nonce, b"", io, &bad)
            .is_err()
    );
    assert_eq!(out, [0; 100], "separate output: zeroed");
}

#[test]
fn clone_debug_and_backend() {
    let key = [0xAB; 32];
    let cipher = Aes256Gcm::new(&key.into());
    let copy = cipher.clone();
    assert_eq!(copy.backend(), Backend::detect());
    let dbg = format!("{cipher:?}");
    assert!(dbg.contains("AesGcm") && dbg.contains("backend"), "{dbg}");
    assert!(
        !dbg.to_lowercase().contains("ab, ab") && !dbg.contains("171"),
        "no key bytes: {dbg}"
    );
    for b in Backend::available() {
        assert_eq!(
            Aes256Gcm::new_with_backend(&key.into(), b)
                .unwrap()
                .backend(),
            b
        );
    }
}

#[test]
fn from_block_ciphers_keeps_one_schedule() {
    use aes_gcm_vaes::aead::KeyInit as _;
    let key = [0x42u8; 16];
    let nonce = Nonce::from([9; 12]);
    let reference = Aes128Gcm::new(&key.into())
        .encrypt(&nonce, &b"msg"[..])
        .unwrap();
    // From the `aes` crate's cipher (portable back end: its round keys are private).
    let from_aes: Aes128Gcm = aes_gcm_vaes::aes::Aes128::new(&key.into()).into();
    assert_eq!(from_aes.backend(), Backend::Portable);
    assert_eq!(from_aes.encrypt(&nonce, &b"msg"[..]).unwrap(), reference);
    // From gcm-core's cipher: same back end as the cipher, its schedule moved over.
    for b in Backend::available() {
        let c = gcm_core::aes::Aes128::new_with_backend(&key.into(), b).unwrap();
        let g: AesGcm<gcm_core::aes::Aes128, U12> = c.into();
        assert_eq!(g.backend(), b);
        assert_eq!(g.encrypt(&nonce, &b"msg"[..]).unwrap(), reference);
    }
}

#[test]
fn aead05_traits_for_programs_on_aes_gcm_010() {
    use aead05::{Aead as Aead05, AeadInPlace as AeadInPlace05, KeyInit as KeyInit05};
    let key = [0x24u8; 32];
    let cipher = <Aes256Gcm as KeyInit05>::new_from_slice(&key).unwrap();
    let nonce = aead05::generic_array::GenericArray::from_slice(&[3u8; 12]);
    let ct = Aead05::encrypt(&cipher, nonce, &b"legacy"[..]).unwrap();
    let modern = Aead::encrypt(
        &<Aes256Gcm as KeyInit>::new(&key.into()),
        &Nonce::from([3; 12]),
        &b"legacy"[..],
    )
    .unwrap();
    assert_eq!(ct, modern);
    let mut buf = ct.clone();
    AeadInPlace05::decrypt_in_place(&cipher, nonce, b"", &mut buf).unwrap();
    assert_eq!(buf, b"legacy");
    assert!(Aead05::decrypt(&cipher, nonce, &ct[1..]).is_err());
}

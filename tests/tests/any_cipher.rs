//! `AesGcm` over any 128-bit block cipher, as RustCrypto `aes-gcm` takes it.
//!
//! - SM4, which is not AES, runs on the generic path and gives exactly what `aes-gcm` 0.11
//!   gives for the same parameters (many lengths, nonce sizes, tag sizes, in place and
//!   separate buffers), and rejects every tampered input without leaving plaintext; the
//!   RFC 8998 SM4-GCM vector holds.
//! - The AES types still run on the kernels: every one reports `Engine::Aes` with the
//!   back end the CPU picks, also when reached through code generic over the cipher that
//!   carries only `aes-gcm`'s bounds (no `'static`).
//! - With `aead05`, `Cipher04` takes `cipher` 0.4 ciphers as `aes-gcm` 0.10 does: the
//!   `aes` 0.8 types on the kernels, SM4 0.5 on the generic path, both against `aes-gcm`
//!   0.10.3.

use aes_gcm::aes::cipher::{BlockCipherEncrypt, BlockSizeUser};
use aes_gcm_vaes::aes;
use aes_gcm_vaes::{
    AesGcm, Backend, Cipher04, Engine, Nonce,
    aead::{
        self, AeadInOut, KeyInit,
        array::{Array, ArraySize},
        consts::{U0, U1, U4, U8, U12, U13, U14, U15, U16, U60},
        inout::InOutBuf,
    },
};
use tests::Rng;

/// Message lengths around every block and batch boundary of both paths.
const LENGTHS: [usize; 18] = [
    0, 1, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 511, 512, 513, 1000, 4103, 8192,
];

/// What a tampered open must leave: an in-place buffer as it was, a separate one zeroed.
fn assert_rejected<A: AeadInOut>(
    ours: &A,
    nonce: &aead::Nonce<A>,
    aad: &[u8],
    ct: &[u8],
    tag: &aead::Tag<A>,
    what: &str,
) {
    let mut in_place = ct.to_vec();
    let r = ours.decrypt_inout_detached(nonce, aad, in_place.as_mut_slice().into(), tag);
    assert!(r.is_err(), "{what}: accepted");
    assert_eq!(in_place, ct, "{what}: in-place buffer changed");
    let mut out = vec![0xA5; ct.len()];
    let io = InOutBuf::new(ct, &mut out).unwrap();
    assert!(ours.decrypt_inout_detached(nonce, aad, io, tag).is_err());
    assert!(
        out.iter().all(|&b| b == 0),
        "{what}: separate output not zeroed"
    );
}

/// SM4-GCM with `N`-byte nonces and `T`-byte tags, ours against `aes-gcm` 0.11.
fn sm4_against_aes_gcm<N, T>(rng: &mut Rng)
where
    N: ArraySize,
    T: aes_gcm_vaes::TagSize + aes_gcm::TagSize,
{
    for len in LENGTHS {
        let what = format!("SM4, nonce {}, tag {}, len {len}", N::USIZE, T::USIZE);
        let key = rng.bytes(16);
        let nonce = Nonce::<N>::try_from(&rng.bytes(N::USIZE)[..]).unwrap();
        let aad_len = rng.below(40);
        let aad = rng.bytes(aad_len);
        let msg = rng.bytes(len);
        let ours = AesGcm::<sm4::Sm4, N, T>::new_from_slice(&key).unwrap();
        let theirs = aes_gcm::AesGcm::<sm4::Sm4, N, T>::new_from_slice(&key).unwrap();
        assert_eq!(ours.engine(), Engine::Generic(Backend::detect()), "{what}");

        let mut expected = msg.clone();
        let tag = theirs
            .encrypt_inout_detached(&nonce, &aad, expected.as_mut_slice().into())
            .unwrap();
        let mut in_place = msg.clone();
        let t = ours
            .encrypt_inout_detached(&nonce, &aad, in_place.as_mut_slice().into())
            .unwrap();
        assert_eq!((&in_place, &t), (&expected, &tag), "{what}: in place");
        let mut out = vec![0; len];
        let t = ours
            .encrypt_inout_detached(&nonce, &aad, InOutBuf::new(&msg, &mut out).unwrap())
            .unwrap();
        assert_eq!((&out, &t), (&expected, &tag), "{what}: separate");

        let mut opened = expected.clone();
        ours.decrypt_inout_detached(&nonce, &aad, opened.as_mut_slice().into(), &tag)
            .unwrap();
        assert_eq!(opened, msg, "{what}: open in place");
        let mut plain = vec![0; len];
        let io = InOutBuf::new(&expected, &mut plain).unwrap();
        ours.decrypt_inout_detached(&nonce, &aad, io, &tag).unwrap();
        assert_eq!(plain, msg, "{what}: open separate");

        let mut bad_tag = tag.clone();
        bad_tag[rng.below(T::USIZE)] ^= 1 << rng.below(8);
        assert_rejected(&ours, &nonce, &aad, &expected, &bad_tag, &what);
        if len > 0 {
            let mut bad_ct = expected.clone();
            bad_ct[rng.below(len)] ^= 0x80;
            assert_rejected(&ours, &nonce, &aad, &bad_ct, &tag, &what);
        }
        let mut bad_aad = aad.clone();
        bad_aad.push(0);
        assert_rejected(&ours, &nonce, &bad_aad, &expected, &tag, &what);
        let mut bad_nonce = nonce.clone();
        bad_nonce[0] ^= 4;
        assert_rejected(&ours, &bad_nonce, &aad, &expected, &tag, &what);
    }
}

#[test]
fn sm4_matches_aes_gcm_011_on_every_size() {
    let mut rng = Rng::new(0x5348);
    sm4_against_aes_gcm::<U12, U16>(&mut rng);
    sm4_against_aes_gcm::<U1, U16>(&mut rng);
    sm4_against_aes_gcm::<U8, U16>(&mut rng);
    sm4_against_aes_gcm::<U16, U16>(&mut rng);
    sm4_against_aes_gcm::<U60, U16>(&mut rng);
    sm4_against_aes_gcm::<U12, U12>(&mut rng);
    sm4_against_aes_gcm::<U12, U13>(&mut rng);
    sm4_against_aes_gcm::<U12, U14>(&mut rng);
    sm4_against_aes_gcm::<U12, U15>(&mut rng);
    sm4_against_aes_gcm::<U12, U8>(&mut rng);
    sm4_against_aes_gcm::<U12, U4>(&mut rng);
}

fn hex<const N: usize>(s: &str) -> [u8; N] {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    assert_eq!(digits.len(), 2 * N);
    let nibble = |c: u8| (c as char).to_digit(16).unwrap() as u8;
    core::array::from_fn(|i| nibble(digits[2 * i]) << 4 | nibble(digits[2 * i + 1]))
}

/// RFC 8998, Appendix A.1: SM4-GCM.
#[test]
fn sm4_gcm_rfc_8998_vector() {
    let key: [u8; 16] = hex("0123456789ABCDEFFEDCBA9876543210");
    let nonce = Nonce::<U12>::from(hex::<12>("00001234567800000000ABCD"));
    let aad: [u8; 20] = hex("FEEDFACEDEADBEEFFEEDFACEDEADBEEFABADDAD2");
    let pt: [u8; 64] = hex(
        "AAAAAAAAAAAAAAAABBBBBBBBBBBBBBBBCCCCCCCCCCCCCCCCDDDDDDDDDDDDDDDD
         EEEEEEEEEEEEEEEEFFFFFFFFFFFFFFFFEEEEEEEEEEEEEEEEAAAAAAAAAAAAAAAA",
    );
    let ct: [u8; 64] = hex(
        "17F399F08C67D5EE19D0DC9969C4BB7D5FD46FD3756489069157B282BB200735
         D82710CA5C22F0CCFA7CBF93D496AC15A56834CBCF98C397B4024A2691233B8D",
    );
    let tag: [u8; 16] = hex("83DE3541E4C2B58177E065A9BF7B62EC");
    let ours = AesGcm::<sm4::Sm4, U12>::new(&key.into());
    let mut buf = pt;
    let t = ours
        .encrypt_inout_detached(&nonce, &aad, (&mut buf[..]).into())
        .unwrap();
    assert_eq!((buf, t.0), (ct, tag));
    // From a cipher value: the same key on the same path.
    let from_value: AesGcm<sm4::Sm4, U12> =
        <sm4::Sm4 as aes_gcm::aes::cipher::KeyInit>::new(&key.into()).into();
    assert_eq!(from_value.engine(), ours.engine());
    from_value
        .decrypt_inout_detached(&nonce, &aad, (&mut buf[..]).into(), &tag.into())
        .unwrap();
    assert_eq!(buf, pt);
}

#[test]
fn sm4_empty_nonce_is_an_error() {
    let c = AesGcm::<sm4::Sm4, U0>::new(&[1; 16].into());
    let mut buf = *b"data";
    let r = c.encrypt_inout_detached(&Array::default(), b"", (&mut buf[..]).into());
    assert!(r.is_err());
    assert_eq!(&buf, b"data");
    let r = c.decrypt_inout_detached(
        &Array::default(),
        b"",
        (&mut buf[..]).into(),
        &Array::default(),
    );
    assert!(r.is_err());
    assert_eq!(&buf, b"data");
}

/// Downstream code generic over the cipher with exactly `aes-gcm` 0.11's bounds (these
/// are `pkcs5`'s): it must compile against this crate, and an AES type reached through it
/// must still run on the kernels. Returns the engine and whether the output matches
/// `aes-gcm`'s for the same cipher.
fn downstream<C>(key: &[u8], rng: &mut Rng) -> (Engine, bool)
where
    C: BlockSizeUser<BlockSize = U16> + KeyInit + BlockCipherEncrypt,
    AesGcm<C, U12, U16>: KeyInit,
{
    let ours = AesGcm::<C, U12>::new_from_slice(key).unwrap();
    let theirs = aes_gcm::AesGcm::<C, U12>::new_from_slice(key).unwrap();
    let nonce = Nonce::<U12>::try_from(&rng.bytes(12)[..]).unwrap();
    let mut same = true;
    for len in [0, 17, 300] {
        let (mut a, mut b) = (rng.bytes(len), Vec::new());
        b.clone_from(&a);
        let ta = ours.encrypt_inout_detached(&nonce, b"ad", a.as_mut_slice().into());
        let tb = theirs.encrypt_inout_detached(&nonce, b"ad", b.as_mut_slice().into());
        same &= ta.unwrap() == tb.unwrap() && a == b;
    }
    (ours.engine(), same)
}

#[test]
fn every_aes_type_runs_on_the_kernels() {
    let mut rng = Rng::new(11);
    let kernels = Engine::Aes(Backend::detect());
    let k = rng.bytes(32);
    let cases = [
        ("aes::Aes128", downstream::<aes::Aes128>(&k[..16], &mut rng)),
        ("aes::Aes192", downstream::<aes::Aes192>(&k[..24], &mut rng)),
        ("aes::Aes256", downstream::<aes::Aes256>(&k, &mut rng)),
        (
            "aes::Aes128Enc",
            downstream::<aes::Aes128Enc>(&k[..16], &mut rng),
        ),
        (
            "aes::Aes192Enc",
            downstream::<aes::Aes192Enc>(&k[..24], &mut rng),
        ),
        ("aes::Aes256Enc", downstream::<aes::Aes256Enc>(&k, &mut rng)),
        (
            "gcm_core Aes128",
            downstream::<gcm_core::aes::Aes128>(&k[..16], &mut rng),
        ),
        (
            "gcm_core Aes192",
            downstream::<gcm_core::aes::Aes192>(&k[..24], &mut rng),
        ),
        (
            "gcm_core Aes256",
            downstream::<gcm_core::aes::Aes256>(&k, &mut rng),
        ),
    ];
    for (name, (engine, same)) in cases {
        println!("{name}: {engine:?}");
        assert_eq!(engine, kernels, "{name}");
        assert!(same, "{name}: differs from aes-gcm");
    }
    let (engine, same) = downstream::<sm4::Sm4>(&k[..16], &mut rng);
    assert_eq!(engine, Engine::Generic(Backend::detect()));
    assert!(same, "sm4");
}

/// `Aes128Enc`, the type `pkcs5` builds its GCM on, on every back end this CPU has.
#[test]
fn aes_enc_types_take_every_back_end() {
    let key = [0x3c; 32];
    let nonce = Nonce::<U12>::from([8; 12]);
    let reference = aes_gcm::AesGcm::<aes::Aes256Enc, U12>::new(&key.into());
    let mut want = *b"the same bytes everywhere";
    let want_tag = reference
        .encrypt_inout_detached(&nonce, b"", (&mut want[..]).into())
        .unwrap();
    for b in Backend::available() {
        let c = AesGcm::<aes::Aes256Enc, U12>::new_with_backend(&key.into(), b).unwrap();
        assert_eq!(c.engine(), Engine::Aes(b));
        let mut got = *b"the same bytes everywhere";
        let tag = c
            .encrypt_inout_detached(&nonce, b"", (&mut got[..]).into())
            .unwrap();
        assert_eq!((got, tag), (want, want_tag), "{b:?}");
    }
    // A cipher value whose round keys are out of reach: correct, on the generic path.
    let value = <aes::Aes256Enc as KeyInit>::new(&key.into());
    let c = AesGcm::<aes::Aes256Enc, U12>::from(value);
    assert_eq!(c.engine(), Engine::Generic(Backend::detect()));
    assert!(c.gcm_key().is_none());
    let mut got = *b"the same bytes everywhere";
    let tag = c
        .encrypt_inout_detached(&nonce, b"", (&mut got[..]).into())
        .unwrap();
    assert_eq!((got, tag), (want, want_tag));
}

mod aead05 {
    use super::*;
    use ::aead05::{
        Aead, AeadInPlace, KeyInit as KeyInit05,
        generic_array::{ArrayLength, GenericArray},
    };
    use aes_gcm_010::aes::cipher::{BlockCipher, BlockEncrypt, BlockSizeUser as BlockSizeUser04};

    /// `aes-gcm` 0.10's generic bounds, as a 0.10 user writes them.
    fn downstream_010<C>(key: &[u8], rng: &mut Rng) -> (Engine, bool)
    where
        C: BlockSizeUser04<BlockSize = U16> + BlockCipher + BlockEncrypt + KeyInit05,
    {
        let ours = <AesGcm<Cipher04<C>, U12> as KeyInit05>::new_from_slice(key).unwrap();
        let theirs = aes_gcm_010::AesGcm::<C, U12>::new_from_slice(key).unwrap();
        let nonce = GenericArray::clone_from_slice(&rng.bytes(12));
        let mut same = true;
        for len in [0, 17, 300] {
            let msg = rng.bytes(len);
            let a = Aead::encrypt(&ours, &nonce, &msg[..]).unwrap();
            let b = Aead::encrypt(&theirs, &nonce, &msg[..]).unwrap();
            same &= a == b && Aead::decrypt(&ours, &nonce, &a[..]).is_ok_and(|p| p == msg);
        }
        (ours.engine(), same)
    }

    #[test]
    fn aes_08_types_run_on_the_kernels() {
        let mut rng = Rng::new(12);
        let k = rng.bytes(32);
        let kernels = Engine::Aes(Backend::detect());
        let cases = [
            (
                "aes 0.8 Aes128",
                downstream_010::<aes08::Aes128>(&k[..16], &mut rng),
            ),
            (
                "aes 0.8 Aes192",
                downstream_010::<aes08::Aes192>(&k[..24], &mut rng),
            ),
            (
                "aes 0.8 Aes256",
                downstream_010::<aes08::Aes256>(&k, &mut rng),
            ),
            (
                "aes 0.8 Aes128Enc",
                downstream_010::<aes08::Aes128Enc>(&k[..16], &mut rng),
            ),
            (
                "aes 0.8 Aes256Enc",
                downstream_010::<aes08::Aes256Enc>(&k, &mut rng),
            ),
        ];
        for (name, (engine, same)) in cases {
            println!("{name}: {engine:?}");
            assert_eq!(engine, kernels, "{name}");
            assert!(same, "{name}: differs from aes-gcm 0.10.3");
        }
        let (engine, same) = downstream_010::<sm4_05::Sm4>(&k[..16], &mut rng);
        assert_eq!(engine, Engine::Generic(Backend::detect()));
        assert!(same, "sm4 0.5");
    }

    fn sm4_against_aes_gcm_010<N, T>(rng: &mut Rng)
    where
        N: ArraySize + ArrayLength<u8>,
        T: aes_gcm_vaes::TagSize + aes_gcm_010::TagSize,
    {
        for len in LENGTHS {
            let what = format!("SM4 0.5, nonce {}, tag {}, len {len}", N::USIZE, T::USIZE);
            let key = rng.bytes(16);
            let nonce = GenericArray::<u8, N>::clone_from_slice(&rng.bytes(N::USIZE));
            let aad_len = rng.below(40);
            let aad = rng.bytes(aad_len);
            let msg = rng.bytes(len);
            let ours = <AesGcm<Cipher04<sm4_05::Sm4>, N, T> as KeyInit05>::new_from_slice(&key);
            let ours = ours.unwrap();
            let theirs = aes_gcm_010::AesGcm::<sm4_05::Sm4, N, T>::new_from_slice(&key).unwrap();
            let mut expected = msg.clone();
            let tag = theirs
                .encrypt_in_place_detached(&nonce, &aad, &mut expected)
                .unwrap();
            let mut buf = msg.clone();
            let t = ours
                .encrypt_in_place_detached(&nonce, &aad, &mut buf)
                .unwrap();
            assert_eq!((&buf, &t), (&expected, &tag), "{what}");
            ours.decrypt_in_place_detached(&nonce, &aad, &mut buf, &tag)
                .unwrap();
            assert_eq!(buf, msg, "{what}: open");
            let mut bad = tag.clone();
            bad[len % T::USIZE] ^= 2;
            let mut buf = expected.clone();
            assert!(
                ours.decrypt_in_place_detached(&nonce, &aad, &mut buf, &bad)
                    .is_err()
            );
            assert_eq!(buf, expected, "{what}: rejected, buffer kept");
        }
    }

    #[test]
    fn sm4_05_matches_aes_gcm_010() {
        let mut rng = Rng::new(0x0510);
        sm4_against_aes_gcm_010::<U12, U16>(&mut rng);
        sm4_against_aes_gcm_010::<U1, U16>(&mut rng);
        sm4_against_aes_gcm_010::<U60, U16>(&mut rng);
        sm4_against_aes_gcm_010::<U12, U12>(&mut rng);
        sm4_against_aes_gcm_010::<U12, U15>(&mut rng);
    }
}

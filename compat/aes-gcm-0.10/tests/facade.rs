//! What the facade adds to aes-gcm 0.10.3's own tests (which `compat/check.sh` runs
//! against it): every public item under its 0.10.3 name and value, the features' APIs,
//! AES keys on the kernels, and GCM over another `cipher` 0.4 cipher (SM4 0.5).

use aes_gcm::{
    A_MAX, AeadCore, AeadInPlace, Aes128Gcm, Aes256Gcm, AesGcm, C_MAX, Error, Key, KeyInit,
    KeySizeUser, Nonce, P_MAX, Tag, TagSize, aead,
    aead::{
        consts::{U12, U16},
        generic_array::{ArrayLength, GenericArray},
    },
    aes,
};
use aes_gcm_vaes::{Backend, Engine};
use cipher::{BlockCipher, BlockEncrypt, BlockSizeUser};
use hex_literal::hex;

#[test]
fn surface_of_0_10_3() {
    assert_eq!((A_MAX, P_MAX, C_MAX), (1 << 36, 1 << 36, (1 << 36) + 16));
    fn sizes<A: AeadCore + KeySizeUser>() -> (usize, usize, usize) {
        use aead::generic_array::typenum::Unsigned;
        (A::KeySize::USIZE, A::NonceSize::USIZE, A::TagSize::USIZE)
    }
    assert_eq!(sizes::<Aes128Gcm>(), (16, 12, 16));
    assert_eq!(sizes::<Aes256Gcm>(), (32, 12, 16));
    fn tag_size<T: TagSize>() -> usize {
        // A 0.10 user may lean on `TagSize` implying `ArrayLength<u8>`.
        Tag::<T>::default().len()
    }
    assert_eq!((tag_size::<U12>(), tag_size::<U16>()), (12, 16));
    let _: Error = Error;
    let c = Aes256Gcm::new(&Key::<Aes256Gcm>::from([1; 32]));
    let mut buf = *b"data";
    let nonce = Nonce::<U12>::from([2; 12]);
    let tag = c.encrypt_in_place_detached(&nonce, b"", &mut buf).unwrap();
    c.decrypt_in_place_detached(&nonce, b"", &mut buf, &tag)
        .unwrap();
    assert_eq!(&buf, b"data");
    assert!(format!("{c:?}").starts_with("AesGcm"));
}

/// aes-gcm 0.10's generic bounds, as a 0.10 user writes them.
fn seal_with<C>(key: &[u8], nonce: &[u8; 12], aad: &[u8], msg: &mut [u8]) -> (Engine, Tag)
where
    C: BlockSizeUser<BlockSize = U16> + BlockCipher + BlockEncrypt + KeyInit,
{
    let gcm = AesGcm::<C, U12>::new_from_slice(key).unwrap();
    let tag = gcm
        .encrypt_in_place_detached(nonce.into(), aad, msg)
        .unwrap();
    (gcm.engine(), tag)
}

#[test]
fn aes_08_keys_run_on_the_kernels() {
    let kernels = Engine::Aes(Backend::detect());
    let mut m = [0u8; 40];
    assert_eq!(
        seal_with::<aes::Aes128>(&[1; 16], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes192>(&[1; 24], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes256>(&[1; 32], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes128Enc>(&[1; 16], &[0; 12], b"", &mut m).0,
        kernels
    );
    // From a cipher value, whose round keys are private: the generic path, same output.
    let key = [9u8; 16];
    let from_value: Aes128Gcm = aes::Aes128::new(&key.into()).into();
    assert_eq!(from_value.engine(), Engine::Generic(Backend::detect()));
    let mut a = [5u8; 33];
    let mut b = a;
    let ta = from_value
        .encrypt_in_place_detached(&[1; 12].into(), b"x", &mut a)
        .unwrap();
    let (_, tb) = seal_with::<aes::Aes128>(&key, &[1; 12], b"x", &mut b);
    assert_eq!((a, ta), (b, tb));
}

/// RFC 8998, Appendix A.1: SM4-GCM with the `cipher` 0.4 SM4, on the generic path.
#[test]
fn sm4_gcm_rfc_8998() {
    let mut msg = hex!(
        "AAAAAAAAAAAAAAAABBBBBBBBBBBBBBBBCCCCCCCCCCCCCCCCDDDDDDDDDDDDDDDD"
        "EEEEEEEEEEEEEEEEFFFFFFFFFFFFFFFFEEEEEEEEEEEEEEEEAAAAAAAAAAAAAAAA"
    );
    let (engine, tag) = seal_with::<sm4::Sm4>(
        &hex!("0123456789ABCDEFFEDCBA9876543210"),
        &hex!("00001234567800000000ABCD"),
        &hex!("FEEDFACEDEADBEEFFEEDFACEDEADBEEFABADDAD2"),
        &mut msg,
    );
    assert_eq!(engine, Engine::Generic(Backend::detect()));
    let ct = hex!(
        "17F399F08C67D5EE19D0DC9969C4BB7D5FD46FD3756489069157B282BB200735"
        "D82710CA5C22F0CCFA7CBF93D496AC15A56834CBCF98C397B4024A2691233B8D"
    );
    assert_eq!(msg, ct);
    assert_eq!(tag.as_slice(), hex!("83DE3541E4C2B58177E065A9BF7B62EC"));
}

#[cfg(feature = "stream")]
#[test]
fn stream_feature() {
    use aead::stream::{DecryptorBE32, EncryptorBE32};
    let c = Aes256Gcm::new(&[4; 32].into());
    let nonce = GenericArray::from_slice(&[6u8; 7]);
    let mut enc = EncryptorBE32::from_aead(c.clone(), nonce);
    let a = enc.encrypt_next(&b"first"[..]).unwrap();
    let b = enc.encrypt_last(&b"last"[..]).unwrap();
    let mut dec = DecryptorBE32::from_aead(c, nonce);
    assert_eq!(dec.decrypt_next(&a[..]).unwrap(), b"first");
    assert_eq!(dec.decrypt_last(&b[..]).unwrap(), b"last");
}

#[cfg(feature = "heapless")]
#[test]
fn heapless_feature() {
    let c = Aes128Gcm::new(&[4; 16].into());
    let mut buf: aead::heapless::Vec<u8, 64> = aead::heapless::Vec::new();
    buf.extend_from_slice(b"no heap").unwrap();
    c.encrypt_in_place(&[1; 12].into(), b"", &mut buf).unwrap();
    c.decrypt_in_place(&[1; 12].into(), b"", &mut buf).unwrap();
    assert_eq!(&buf[..], b"no heap");
}

#[cfg(feature = "getrandom")]
#[test]
fn getrandom_feature() {
    let key = Aes256Gcm::generate_key(&mut aead::OsRng);
    let nonce = Aes256Gcm::generate_nonce(&mut aead::OsRng);
    let c = Aes256Gcm::new(&key);
    let ct = aead::Aead::encrypt(&c, &nonce, &b"random"[..]).unwrap();
    assert_eq!(aead::Aead::decrypt(&c, &nonce, &ct[..]).unwrap(), b"random");
}

#[allow(dead_code)]
fn array_length_is_implied<N: ArrayLength<u8>, T: TagSize>(c: &AesGcm<aes::Aes128, N, T>) {
    let _ = c.engine();
}

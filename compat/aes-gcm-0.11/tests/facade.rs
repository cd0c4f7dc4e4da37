//! What the facade adds to aes-gcm 0.11.1's own tests (which `compat/check.sh` runs
//! against it): every public item under its 0.11.1 name, AES keys on the kernels, and
//! GCM over another cipher (SM4) through code written against aes-gcm's bounds.

use aes_gcm::{
    A_MAX, AeadCore, AeadInOut, Aes128Gcm, Aes256Gcm, AesGcm, Error, Key, KeyInit, KeySizeUser,
    Nonce, P_MAX, Tag, TagSize, aead,
    aead::{
        array::ArraySize,
        consts::{U12, U16},
    },
    aes,
    aes::cipher::{BlockCipherEncrypt, BlockSizeUser},
};
use aes_gcm_vaes::{Backend, Engine};
use hex_literal::hex;

#[test]
fn surface_of_0_11_1() {
    assert_eq!((A_MAX, P_MAX), ((1 << 61) - 1, (1 << 36) - 32));
    fn sizes<A: AeadCore + KeySizeUser>() -> (usize, usize, usize) {
        use aead::array::typenum::Unsigned;
        (A::KeySize::USIZE, A::NonceSize::USIZE, A::TagSize::USIZE)
    }
    assert_eq!(sizes::<Aes128Gcm>(), (16, 12, 16));
    assert_eq!(sizes::<Aes256Gcm>(), (32, 12, 16));
    fn tag_size<T: TagSize>() {}
    tag_size::<U12>();
    tag_size::<U16>();
    let tag: Tag = Tag::default();
    let _: Error = Error;
    let key = Key::<Aes256Gcm>::from([1; 32]);
    let c = Aes256Gcm::new(&key);
    let mut buf = *b"data";
    let nonce = Nonce::<U12>::from([2; 12]);
    let t = c
        .encrypt_inout_detached(&nonce, b"", (&mut buf[..]).into())
        .unwrap();
    assert_ne!(t, tag);
}

/// `pkcs5`'s pattern: generic over the cipher with aes-gcm's bounds only.
fn seal_with<C, N>(key: &[u8], nonce: &[u8], aad: &[u8], msg: &mut [u8]) -> (Engine, Tag)
where
    C: BlockSizeUser<BlockSize = U16> + KeyInit + BlockCipherEncrypt,
    AesGcm<C, N, U16>: KeyInit,
    N: ArraySize,
{
    let gcm = <AesGcm<C, N, U16> as KeyInit>::new_from_slice(key).unwrap();
    let nonce = Nonce::<N>::try_from(nonce).unwrap();
    let tag = gcm.encrypt_inout_detached(&nonce, aad, msg.into()).unwrap();
    (gcm.engine(), tag)
}

#[test]
fn aes_keys_run_on_the_kernels() {
    let kernels = Engine::Aes(Backend::detect());
    let mut m = [0u8; 40];
    assert_eq!(
        seal_with::<aes::Aes128, U12>(&[1; 16], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes128Enc, U12>(&[1; 16], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes192, U12>(&[1; 24], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(
        seal_with::<aes::Aes256Enc, U12>(&[1; 32], &[0; 12], b"", &mut m).0,
        kernels
    );
    assert_eq!(Aes256Gcm::new(&[3; 32].into()).engine(), kernels);
}

/// RFC 8998, Appendix A.1: SM4-GCM, on the generic path.
#[test]
fn sm4_gcm_rfc_8998() {
    let mut msg = hex!(
        "AAAAAAAAAAAAAAAABBBBBBBBBBBBBBBBCCCCCCCCCCCCCCCCDDDDDDDDDDDDDDDD"
        "EEEEEEEEEEEEEEEEFFFFFFFFFFFFFFFFEEEEEEEEEEEEEEEEAAAAAAAAAAAAAAAA"
    );
    let (engine, tag) = seal_with::<sm4::Sm4, U12>(
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
    assert_eq!((msg, tag.0), (ct, hex!("83DE3541E4C2B58177E065A9BF7B62EC")));
}

//! The peer AES-GCM implementations, each behind [`Gcm`] through its own fastest public
//! in-place, detached-tag API, with its key object built once and reused.
//!
//! RustCrypto `aes-gcm` is always built (it is pure Rust); ring, aws-lc-rs, graviola and
//! OpenSSL each sit behind a `peer-*` cargo feature so a machine that cannot build one still
//! gets the tool.

use crate::Alg;
use crate::gcm::{GcmSubject, Subject, rustcrypto_new};

#[cfg(any(
    feature = "peer-ring",
    feature = "peer-aws-lc",
    feature = "peer-openssl"
))]
use crate::gcm::Gcm;

/// Every peer this build has, for `alg`, in the order tables list them.
pub fn subjects(alg: Alg) -> Vec<Box<dyn Subject>> {
    let key = alg.key();
    let rustcrypto = match alg {
        Alg::Aes128Gcm => GcmSubject::boxed(
            "rustcrypto",
            false,
            key,
            rustcrypto_new::<aes_gcm::Aes128Gcm>,
        ),
        Alg::Aes256Gcm => GcmSubject::boxed(
            "rustcrypto",
            false,
            key,
            rustcrypto_new::<aes_gcm::Aes256Gcm>,
        ),
    };
    // Only mutated when some peer-* feature is on.
    #[allow(unused_mut)]
    let mut v = vec![rustcrypto];
    #[cfg(feature = "peer-ring")]
    v.push(GcmSubject::boxed("ring", false, key, move |k| {
        ring_peer::Ring::new(alg, k)
    }));
    #[cfg(feature = "peer-aws-lc")]
    v.push(GcmSubject::boxed("aws-lc-rs", false, key, move |k| {
        aws_lc::AwsLc::new(alg, k)
    }));
    #[cfg(feature = "peer-graviola")]
    if graviola_runs_here() {
        v.push(GcmSubject::boxed("graviola", false, key, |k| {
            Graviola(graviola::aead::AesGcm::new(k))
        }));
    }
    #[cfg(feature = "peer-openssl")]
    v.push(GcmSubject::boxed("openssl", false, key, move |k| {
        ossl::OpenSsl::new(alg, k)
    }));
    v
}

/// Names of the peers this build has (for `--help` and the results file).
pub fn names() -> Vec<&'static str> {
    let mut v = vec!["rustcrypto"];
    if cfg!(feature = "peer-ring") {
        v.push("ring");
    }
    if cfg!(feature = "peer-aws-lc") {
        v.push("aws-lc-rs");
    }
    if cfg!(feature = "peer-graviola") && graviola_runs_here() {
        v.push("graviola");
    }
    if cfg!(feature = "peer-openssl") {
        v.push("openssl");
    }
    v
}

#[cfg(feature = "peer-ring")]
mod ring_peer {
    use super::{Alg, Gcm};
    use ring::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, Tag, UnboundKey};

    pub struct Ring(LessSafeKey);

    impl Ring {
        pub fn new(alg: Alg, key: &[u8]) -> Self {
            let a = match alg {
                Alg::Aes128Gcm => &AES_128_GCM,
                Alg::Aes256Gcm => &AES_256_GCM,
            };
            Ring(LessSafeKey::new(UnboundKey::new(a, key).expect("key")))
        }
    }

    impl Gcm for Ring {
        #[inline]
        fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
            let tag = self
                .0
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(*nonce),
                    Aad::from(aad),
                    buf,
                )
                .expect("seal");
            tag.as_ref().try_into().expect("16-byte tag")
        }

        #[inline]
        fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
            self.0
                .open_in_place_separate_tag(
                    Nonce::assume_unique_for_key(*nonce),
                    Aad::from(aad),
                    Tag::from(*tag),
                    buf,
                    0..,
                )
                .is_ok()
        }
    }
}

#[cfg(feature = "peer-aws-lc")]
mod aws_lc {
    use super::{Alg, Gcm};
    use aws_lc_rs::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

    pub struct AwsLc(LessSafeKey);

    impl AwsLc {
        pub fn new(alg: Alg, key: &[u8]) -> Self {
            let a = match alg {
                Alg::Aes128Gcm => &AES_128_GCM,
                Alg::Aes256Gcm => &AES_256_GCM,
            };
            AwsLc(LessSafeKey::new(UnboundKey::new(a, key).expect("key")))
        }
    }

    impl Gcm for AwsLc {
        #[inline]
        fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
            let tag = self
                .0
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(*nonce),
                    Aad::from(aad),
                    buf,
                )
                .expect("seal");
            tag.as_ref().try_into().expect("16-byte tag")
        }

        #[inline]
        fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
            self.0
                .open_in_place_separate_tag(
                    Nonce::assume_unique_for_key(*nonce),
                    Aad::from(aad),
                    tag,
                    buf,
                )
                .is_ok()
        }
    }
}

/// graviola has no fallback: it panics on a CPU without its baseline (AES-NI, PCLMULQDQ,
/// SSSE3, AVX, AVX2, BMI1, BMI2, ADX), as under some QEMU CPU models the tests run on.
pub fn graviola_runs_here() -> bool {
    #[cfg(all(feature = "peer-graviola", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("avx")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("adx")
    }
    #[cfg(not(all(feature = "peer-graviola", target_arch = "x86_64")))]
    {
        cfg!(feature = "peer-graviola")
    }
}

#[cfg(feature = "peer-graviola")]
struct Graviola(graviola::aead::AesGcm);

#[cfg(feature = "peer-graviola")]
impl crate::gcm::Gcm for Graviola {
    #[inline]
    fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        let mut tag = [0u8; 16];
        self.0.encrypt(nonce, aad, buf, &mut tag);
        tag
    }

    #[inline]
    fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        self.0.decrypt(nonce, aad, buf, tag).is_ok()
    }
}

#[cfg(feature = "peer-openssl")]
mod ossl {
    use super::{Alg, Gcm};
    use openssl::cipher::Cipher;
    use openssl::cipher_ctx::CipherCtx;

    /// One EVP context per direction, keyed once; each message only sets the IV, which is
    /// how a TLS record layer drives OpenSSL.
    pub struct OpenSsl {
        enc: CipherCtx,
        dec: CipherCtx,
    }

    impl OpenSsl {
        pub fn new(alg: Alg, key: &[u8]) -> Self {
            let c = match alg {
                Alg::Aes128Gcm => Cipher::aes_128_gcm(),
                Alg::Aes256Gcm => Cipher::aes_256_gcm(),
            };
            let mut enc = CipherCtx::new().expect("ctx");
            enc.encrypt_init(Some(c), Some(key), None).expect("init");
            let mut dec = CipherCtx::new().expect("ctx");
            dec.decrypt_init(Some(c), Some(key), None).expect("init");
            OpenSsl { enc, dec }
        }
    }

    impl Gcm for OpenSsl {
        #[inline]
        fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
            let c = &mut self.enc;
            c.encrypt_init(None, None, Some(nonce)).expect("iv");
            c.cipher_update(aad, None).expect("aad");
            let n = buf.len();
            c.cipher_update_inplace(buf, n).expect("update");
            c.cipher_final(&mut []).expect("final");
            let mut tag = [0u8; 16];
            c.tag(&mut tag).expect("tag");
            tag
        }

        #[inline]
        fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
            let c = &mut self.dec;
            c.decrypt_init(None, None, Some(nonce)).expect("iv");
            c.cipher_update(aad, None).expect("aad");
            let n = buf.len();
            c.cipher_update_inplace(buf, n).expect("update");
            c.set_tag(tag).expect("tag");
            c.cipher_final(&mut []).is_ok()
        }
    }
}

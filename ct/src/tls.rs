//! TLS CBC records (`tls-cbc-aead`): seal, and open of good records (minimal and maximal
//! padding) and bad ones (MAC, a padding byte, the padding length, a garbled last block),
//! for every suite, explicit and implicit IV, on the engines `KeyInit` picks or on the
//! ones given (`new_with_engines`).
//!
//! Secret: the whole key (MAC key and cipher key), the plaintext, and the record handed
//! to open (the library marks the decrypted record secret itself, and declassifies only
//! the accept bit and, on success, the plaintext length). The same for the 3DES suites,
//! whose block cipher computes its S-boxes (RustCrypto `des`, which looks them up, only
//! builds the bad records here, with a public key; `controls` shows what the sanitizer
//! makes of it with a secret one).

use std::hint::black_box;

use aead::{AeadInOut, KeyInit, Nonce};
use cipher::{BlockCipherDecrypt, BlockCipherEncrypt};
use tls_cbc_aead::ct_check::KeyEngines;
use tls_cbc_aead::{
    Aes128CbcSha1, Aes128CbcSha1ImplicitIv, Aes128CbcSha256, Aes256CbcSha1,
    Aes256CbcSha1ImplicitIv, Aes256CbcSha256, Aes256CbcSha384, DesEde3CbcSha1,
    DesEde3CbcSha1ImplicitIv,
};
use tls_cbc_aead::{Engines, Key};

use crate::check::{Rng, expect, expect_secret, public, secret};

/// Every plaintext length up to here (every offset of the MAC and padding in a cipher
/// block and in a hash block), then [`LENS`].
const ALL_LENS_UP_TO: usize = 140;

/// Plaintext lengths: empty and tiny records; either side of a hash block (64 and 128
/// bytes, with the 13 bytes of header in front: 51/115 fill the first block); records
/// whose padding and MAC fall in one hash block or across two; the stitched seal's
/// hash-block pairs (128 x 2 per pair, four pairs); records longer than the 256-byte
/// window of the secret-length MAC (which hashes the rest as public); a full record.
const LENS: [usize; 24] = [
    0, 1, 15, 16, 17, 31, 51, 52, 63, 100, 115, 116, 127, 128, 200, 243, 244, 300, 500, 627, 1000,
    1100, 4097, 16384,
];

/// One explicit-IV suite: its shape, and how to run its cipher with a public key, which
/// builds the bad records.
pub trait Suite: AeadInOut + KeyInit {
    const NAME: &'static str;
    const MAC_LEN: usize;
    const BLOCK: usize;
    /// What the key runs, by name.
    fn engines(&self) -> KeyEngines;
    /// Every choice of engines this CPU offers for the suite.
    fn available() -> Vec<Engines>;
    /// A key on `engines` (one of [`Self::available`]).
    fn forced(key: &Key<Self>, engines: Engines) -> Self;
    fn cbc(enc_key: &[u8], iv: &[u8], data: &mut [u8], encrypt: bool);
}

/// The trait methods that only forward to the suite's own.
macro_rules! engine_methods {
    () => {
        fn engines(&self) -> KeyEngines {
            self.ct_engines()
        }
        fn available() -> Vec<Engines> {
            Self::available_engines().collect()
        }
        fn forced(key: &Key<Self>, engines: Engines) -> Self {
            Self::new_with_engines(key, engines).expect("an available engine choice")
        }
    };
}

macro_rules! aes_suite {
    ($($t:ty, $name:literal, $aes:ty;)*) => {$(
        impl Suite for $t {
            const NAME: &'static str = $name;
            const MAC_LEN: usize = <$t>::MAC_LEN;
            const BLOCK: usize = 16;
            engine_methods!();
            fn cbc(enc_key: &[u8], iv: &[u8], data: &mut [u8], encrypt: bool) {
                let c = <$aes as cipher::KeyInit>::new_from_slice(enc_key).expect("key");
                let mut iv: [u8; 16] = iv.try_into().expect("16");
                let (blocks, _) = data.as_chunks_mut::<16>();
                if encrypt {
                    c.cbc_encrypt(&mut iv, blocks)
                } else {
                    c.cbc_decrypt(&mut iv, blocks)
                }
            }
        }
    )*};
}

aes_suite! {
    Aes128CbcSha1, "AES-128-CBC-SHA1", gcm_core::aes::Aes128;
    Aes256CbcSha1, "AES-256-CBC-SHA1", gcm_core::aes::Aes256;
    Aes128CbcSha256, "AES-128-CBC-SHA256", gcm_core::aes::Aes128;
    Aes256CbcSha256, "AES-256-CBC-SHA256", gcm_core::aes::Aes256;
    Aes256CbcSha384, "AES-256-CBC-SHA384", gcm_core::aes::Aes256;
}

impl Suite for DesEde3CbcSha1 {
    const NAME: &'static str = "3DES-EDE-CBC-SHA1";
    const MAC_LEN: usize = DesEde3CbcSha1::MAC_LEN;
    const BLOCK: usize = 8;
    engine_methods!();
    fn cbc(enc_key: &[u8], iv: &[u8], data: &mut [u8], encrypt: bool) {
        let c = <des::TdesEde3 as cipher::KeyInit>::new_from_slice(enc_key).expect("key");
        let mut chain: [u8; 8] = iv.try_into().expect("8");
        for block in data.as_chunks_mut::<8>().0 {
            if encrypt {
                block.iter_mut().zip(&chain).for_each(|(b, c)| *b ^= c);
                c.encrypt_block(block.into());
                chain = *block;
            } else {
                let ct = *block;
                c.decrypt_block(block.into());
                block.iter_mut().zip(&chain).for_each(|(b, c)| *b ^= c);
                chain = ct;
            }
        }
    }
}

/// The records to open for one plaintext: (name, record, whether it must open).
fn records<S: Suite>(
    reference: &S,
    key: &[u8],
    iv: &[u8],
    ad: &[u8],
    pt: &[u8],
    rng: &mut Rng,
) -> Vec<(&'static str, Vec<u8>, bool)> {
    let enc_key = &key[S::MAC_LEN..];
    let nonce = Nonce::<S>::try_from(iv).expect("IV length");
    let mut good = pt.to_vec();
    reference
        .encrypt_in_place(&nonce, ad, &mut good)
        .expect("seal");
    // The encoded record: plaintext || MAC || padding (each byte the padding length - 1).
    let mut encoded = good.clone();
    S::cbc(enc_key, iv, &mut encoded, false);
    let pad = usize::from(*encoded.last().expect("non-empty")) + 1;
    let unpadded = encoded.len() - pad;
    let reencrypt = |mut e: Vec<u8>| {
        S::cbc(enc_key, iv, &mut e, true);
        e
    };

    // The longest padding with the same alignment: at most 256 bytes, length included.
    let max_pad = pad + (256 - pad) / S::BLOCK * S::BLOCK;
    let mut longest = encoded[..unpadded].to_vec();
    longest.resize(unpadded + max_pad, (max_pad - 1) as u8);

    let mut bad_mac = encoded.clone();
    bad_mac[pt.len() + rng.below(S::MAC_LEN)] ^= 0x10;
    let mut bad_pad_len = encoded.clone();
    *bad_pad_len.last_mut().expect("non-empty") = 0xff;
    // A wrong byte inside the padding (of the long padding, which always has room).
    let mut bad_pad_byte = longest.clone();
    let at = bad_pad_byte.len() - 2 - rng.below(max_pad - 1);
    bad_pad_byte[at] ^= 0x01;
    let mut garbled = good.clone();
    let n = garbled.len();
    garbled[n - S::BLOCK] ^= 0x5a;

    vec![
        ("good, minimal padding", good, true),
        ("good, maximal padding", reencrypt(longest), true),
        ("bad MAC", reencrypt(bad_mac), false),
        ("bad padding length", reencrypt(bad_pad_len), false),
        ("bad padding byte", reencrypt(bad_pad_byte), false),
        ("garbled last block", garbled, false),
    ]
}

/// Seal and open for every length on suite `S`, with the engines the current CPU
/// profile gives (`forced: None`) or the ones given; returns (operations, engines).
pub fn suite<S: Suite>(seed: u64, forced: Option<Engines>) -> (usize, KeyEngines) {
    let mut rng = Rng::new(seed);
    let mut ops = 0;
    let (key, secret_key) = keys(&mut rng, S::key_size());
    let make = |k: &[u8]| {
        let k = Key::<S>::try_from(k).expect("key length");
        forced.map_or_else(|| S::new(&k), |e| S::forced(&k, e))
    };
    let (reference, s) = (make(&key), make(&secret_key));
    let engines = s.engines();
    expect(engines == reference.engines(), "same engines for both keys");
    check_engines(engines, forced);
    for len in lens() {
        let len = black_box(len);
        let iv = rng.bytes(S::BLOCK);
        let nonce = Nonce::<S>::try_from(&iv[..]).expect("IV length");
        let ad = tls_ad(&mut rng);
        let pt = rng.bytes(len);

        // Seal: secret key and plaintext.
        let mut want = pt.clone();
        reference
            .encrypt_in_place(&nonce, &ad, &mut want)
            .expect("seal");
        let mut buf = pt.clone();
        secret(&mut buf);
        s.encrypt_in_place(&nonce, &ad, &mut buf).expect("seal");
        expect_secret(&buf, "TLS CBC seal: record");
        public(&buf);
        ops += 1;
        expect(buf == want, "TLS CBC seal");

        // Open: secret key and record.
        for (what, record, opens) in records(&reference, &key, &iv, &ad, &pt, &mut rng) {
            let mut buf = record;
            secret(&mut buf);
            let r = s.decrypt_in_place(&nonce, &ad, &mut buf);
            if opens {
                expect_secret(&buf, "TLS CBC open: plaintext");
            }
            public(&buf);
            if opens {
                expect(r.is_ok() && buf == pt, what);
            } else {
                expect(r.is_err() && buf.is_empty(), what);
            }
            ops += 1;
        }
    }
    (ops, engines)
}

/// One suite as the harness runs it: its name, the engine choices this CPU offers, and
/// its checks on the engines `KeyInit` picks (`None`) or on the ones given.
pub struct SuiteRun {
    pub name: &'static str,
    pub available: fn() -> Vec<Engines>,
    pub run: fn(u64, Option<Engines>) -> (usize, KeyEngines),
}

macro_rules! suite_runs {
    ($($kind:ident, $run:ident, $t:ty;)*) => {
        [$(SuiteRun {
            name: <$t as $kind>::NAME,
            available: <$t as $kind>::available,
            run: $run::<$t>,
        }),*]
    };
}

/// Every suite, explicit IV then implicit IV.
pub const SUITES: [SuiteRun; 9] = suite_runs! {
    Suite, suite, Aes128CbcSha1;
    Suite, suite, Aes256CbcSha1;
    Suite, suite, Aes128CbcSha256;
    Suite, suite, Aes256CbcSha256;
    Suite, suite, Aes256CbcSha384;
    Suite, suite, DesEde3CbcSha1;
    ImplicitSuite, implicit_suite, Aes128CbcSha1ImplicitIv;
    ImplicitSuite, implicit_suite, Aes256CbcSha1ImplicitIv;
    ImplicitSuite, implicit_suite, DesEde3CbcSha1ImplicitIv;
};

/// The key runs the engines it was given, and its seal the path they say.
fn check_engines(engines: KeyEngines, forced: Option<Engines>) {
    expect(
        forced.is_none_or(|f| f == engines.engines),
        "the key runs the engines forced",
    );
    expect(
        engines.engines.stitched_seal == (engines.seal == "stitched"),
        "the seal runs as the engines say",
    );
}

/// A key (MAC key || cipher key) and a copy of it marked secret.
fn keys(rng: &mut Rng, len: usize) -> (Vec<u8>, Vec<u8>) {
    let key = rng.bytes(len);
    let mut secret_key = key.clone();
    secret(&mut secret_key);
    (key, secret_key)
}

fn lens() -> impl Iterator<Item = usize> {
    (0..=ALL_LENS_UP_TO).chain(LENS.into_iter().filter(|&l| l > ALL_LENS_UP_TO))
}

/// `seq_num || content_type || version`, the 11 bytes of associated data.
fn tls_ad(rng: &mut Rng) -> Vec<u8> {
    let mut ad = rng.bytes(8);
    ad.extend_from_slice(&[23, 3, 3]);
    ad
}

/// An implicit-IV (TLS 1.0) suite: a stateful sender and receiver.
pub trait ImplicitSuite: KeyInit {
    const NAME: &'static str;
    fn engines(&self) -> KeyEngines;
    fn available() -> Vec<Engines>;
    fn forced(key: &Key<Self>, engines: Engines) -> Self;
    fn seal(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()>;
    fn open(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()>;
}

macro_rules! implicit_suite {
    ($($t:ty, $name:literal;)*) => {$(
        impl ImplicitSuite for $t {
            const NAME: &'static str = $name;
            engine_methods!();
            fn seal(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()> {
                self.seal_in_place(ad, buf)
            }
            fn open(&mut self, ad: &[u8], buf: &mut Vec<u8>) -> aead::Result<()> {
                self.open_in_place(ad, buf)
            }
        }
    )*};
}

implicit_suite! {
    Aes128CbcSha1ImplicitIv, "AES-128-CBC-SHA1, implicit IV";
    Aes256CbcSha1ImplicitIv, "AES-256-CBC-SHA1, implicit IV";
    DesEde3CbcSha1ImplicitIv, "3DES-EDE-CBC-SHA1, implicit IV";
}

/// A connection's worth of records each way: the secret sender's records must equal a
/// public sender's, and the secret receiver opens them (and rejects a tampered one,
/// after which a fresh receiver takes over, as a new connection would).
pub fn implicit_suite<S: ImplicitSuite>(seed: u64, forced: Option<Engines>) -> (usize, KeyEngines) {
    let mut rng = Rng::new(seed);
    let (key, secret_key) = keys(&mut rng, S::key_size());
    let make = |k: &[u8]| {
        let k = Key::<S>::try_from(k).expect("key length");
        forced.map_or_else(|| S::new(&k), |e| S::forced(&k, e))
    };
    let with_public_key = || make(&key);
    let with_secret_key = || make(&secret_key);
    // Sender with the secret key, and its public twin whose records it must match.
    let (mut sender, mut twin) = (with_secret_key(), with_public_key());
    // The receiver, with the secret key, and its peer.
    let (mut peer, mut receiver) = (with_public_key(), with_secret_key());
    let engines = receiver.engines();
    expect(engines == sender.engines(), "same engines for both keys");
    check_engines(engines, forced);
    let mut ops = 0;
    for len in lens() {
        let len = black_box(len);
        let ad = tls_ad(&mut rng);
        let pt = rng.bytes(len);

        let mut want = pt.clone();
        twin.seal(&ad, &mut want).expect("seal");
        let mut buf = pt.clone();
        secret(&mut buf);
        sender.seal(&ad, &mut buf).expect("seal");
        expect_secret(&buf, "implicit IV seal: record");
        public(&buf);
        expect(buf == want, "implicit IV seal");

        let mut record = pt.clone();
        peer.seal(&ad, &mut record).expect("seal");
        if len % 3 == 0 {
            // Tampered: rejected; the connection starts again from the same key.
            let n = record.len();
            record[n - 1 - rng.below(n)] ^= 0x04;
            secret(&mut record);
            let r = receiver.open(&ad, &mut record);
            public(&record);
            expect(
                r.is_err() && record.is_empty(),
                "implicit IV rejects a bad record",
            );
            (peer, receiver) = (with_public_key(), with_secret_key());
        } else {
            secret(&mut record);
            let r = receiver.open(&ad, &mut record);
            expect_secret(&record, "implicit IV open: plaintext");
            public(&record);
            expect(r.is_ok() && record == pt, "implicit IV open");
        }
        ops += 2;
    }
    (ops, engines)
}

//! Constant-time check of open, meant to run under valgrind memcheck (see `ct-check.sh`).
//!
//! For every suite and a spread of lengths, it seals with the key and plaintext marked
//! secret, and opens good records (minimal and maximal
//! padding) and bad ones (MAC, padding byte, padding length, last block garbled) with the
//! key and the record marked secret. The library marks the decrypted record secret itself
//! and declassifies only the accept bit and the plaintext length, so any branch or memory
//! address that depends on the rest is a memcheck error. With the argument `control` it
//! instead runs a deliberately leaky padding check, which memcheck must flag: that proves
//! the annotations reach valgrind. With `control-des` it encrypts a block with RustCrypto
//! `des` under a secret key, which memcheck must flag too (its S-boxes are tables indexed
//! by key and data): the 3DES suites, on this crate's own 3DES, pass the same check.

mod common;

use aead::{AeadInOut, KeyInit, Nonce};
use common::{Cipher, Hash, Rng, Suite, random_ad};
use tls_cbc_aead::{ct_check, *};

const LENGTHS: [usize; 9] = [0, 1, 15, 16, 17, 100, 255, 256, 600];

/// The records to try for one plaintext: (record, should open).
fn records(
    suite: &Suite,
    rng: &mut Rng,
    key: &[u8],
    iv: &[u8],
    ad: &[u8],
    pt: &[u8],
) -> Vec<(Vec<u8>, bool)> {
    let (mk, ek) = suite.split_key(key);
    let b = suite.block_len();
    let min = suite.min_pad(pt.len());
    let max = min + (256 - min) / b * b;
    let good = suite.encode(mk, ad, pt, min);
    let mut out = vec![
        (suite.cbc_encrypt(ek, iv, &good), true),
        (
            suite.cbc_encrypt(ek, iv, &suite.encode(mk, ad, pt, max)),
            true,
        ),
    ];
    let mut bad_mac = good.clone();
    bad_mac[pt.len() + rng.below(suite.mac_len())] ^= 0x10;
    out.push((suite.cbc_encrypt(ek, iv, &bad_mac), false));
    let mut bad_pad_len = good.clone();
    *bad_pad_len.last_mut().unwrap() = 0xff;
    out.push((suite.cbc_encrypt(ek, iv, &bad_pad_len), false));
    if min > 1 {
        let mut bad_pad = good.clone();
        let n = bad_pad.len();
        bad_pad[n - 2] ^= 1;
        out.push((suite.cbc_encrypt(ek, iv, &bad_pad), false));
    }
    let mut garbled = suite.cbc_encrypt(ek, iv, &good);
    let n = garbled.len();
    garbled[n - b] ^= 0x5a;
    out.push((garbled, false));
    out
}

/// Seals and opens (see the module docs) with keys made by `new`.
fn check<A: AeadInOut>(suite: Suite, seed: u64, new: impl Fn(&[u8]) -> A) -> usize {
    let mut rng = Rng::new(seed);
    let key_len = suite.mac_len() + suite.enc_key_len();
    let mut runs = 0;
    for len in LENGTHS {
        let key = rng.bytes(key_len);
        let iv = rng.bytes(suite.block_len());
        let ad = random_ad(&mut rng);
        let pt = rng.bytes(len);
        // One key, made from secret bytes, seals and opens every record of this length.
        let secret_key = key.clone();
        ct_check::mark_secret(&secret_key);
        let a = new(&secret_key);
        let nonce = Nonce::<A>::try_from(&iv[..]).unwrap();
        // Seal with the plaintext secret too: nothing may depend on either.
        let mut buf = pt.clone();
        ct_check::mark_secret(&buf);
        a.encrypt_in_place(&nonce, &ad, &mut buf).unwrap();
        ct_check::mark_public(&buf);
        assert_eq!(buf, suite.seal(&key, &iv, &ad, &pt));
        runs += 1;
        for (record, should_open) in records(&suite, &mut rng, &key, &iv, &ad, &pt) {
            let mut buf = record.clone();
            ct_check::mark_secret(&buf);
            let result = a.decrypt_in_place(&nonce, &ad, &mut buf);
            assert_eq!(result.is_ok(), should_open, "{suite:?} len {len}");
            ct_check::mark_public(&buf);
            if should_open {
                assert_eq!(buf, pt);
            } else {
                assert!(buf.is_empty());
            }
            runs += 1;
        }
    }
    runs
}

/// Implicit-IV open goes through the same code, but check its entry point too.
fn check_implicit() -> usize {
    let suite = Suite {
        cipher: Cipher::Aes128,
        hash: Hash::Sha1,
    };
    let mut rng = Rng::new(99);
    let key = rng.bytes(20 + 16 + 16);
    let (ad, pt) = (random_ad(&mut rng), rng.bytes(77));
    let mut sender = Aes128CbcSha1ImplicitIv::new_from_slice(&key).unwrap();
    let mut record = pt.clone();
    sender.seal_in_place(&ad, &mut record).unwrap();
    let secret_key = key.clone();
    ct_check::mark_secret(&secret_key);
    let mut receiver = Aes128CbcSha1ImplicitIv::new_from_slice(&secret_key).unwrap();
    ct_check::mark_secret(&record);
    receiver.open_in_place(&ad, &mut record).unwrap();
    ct_check::mark_public(&record);
    assert_eq!(record, pt);
    let _ = suite;
    1
}

/// A padding check written the naive way: it stops at the first wrong byte, so its
/// branches depend on the secret record. Memcheck must report it.
#[inline(never)]
fn leaky_padding_ok(record: &[u8]) -> bool {
    let pad = *record.last().unwrap();
    if usize::from(pad) + 1 > record.len() {
        return false;
    }
    record[record.len() - 1 - usize::from(pad)..]
        .iter()
        .all(|&b| b == pad)
}

fn control() {
    let mut record = vec![3u8; 64];
    record[60] = 7;
    let record = std::hint::black_box(record);
    ct_check::mark_secret(&record);
    let ok = std::hint::black_box(leaky_padding_ok(&record));
    println!("control ran (result withheld: {})", usize::from(ok) < 2);
}

/// RustCrypto `des` keyed with a secret: memcheck must flag its table lookups.
fn control_des() {
    use cipher::{BlockCipherEncrypt, KeyInit};
    let key = std::hint::black_box([0x5au8; 24]);
    ct_check::mark_secret(&key);
    let tdes = des::TdesEde3::new_from_slice(&key).unwrap();
    let mut block = [0u8; 8];
    tdes.encrypt_block((&mut block).into());
    ct_check::mark_public(&block);
    println!("control-des ran ({:02x?})", std::hint::black_box(block));
}

fn main() {
    if std::env::var_os("CT_REQUIRE_VALGRIND").is_some() {
        assert!(
            ct_check::running_on_valgrind(),
            "CT_REQUIRE_VALGRIND is set but the client requests do not reach valgrind"
        );
    }
    if std::env::args().any(|a| a == "control") {
        control();
        return;
    }
    if std::env::args().any(|a| a == "control-des") {
        control_des();
        return;
    }
    let mut runs = 0;
    // Every engine choice this CPU (or valgrind's model of it) has, for every suite.
    macro_rules! check_every_engine {
        ($($ty:ty: $cipher:ident $hash:ident $seed:literal),* $(,)?) => {$(
            for engines in <$ty>::available_engines() {
                let suite = Suite {
                    cipher: Cipher::$cipher,
                    hash: Hash::$hash,
                };
                runs += check(suite, $seed, |key| {
                    <$ty>::new_with_engines(key.try_into().unwrap(), engines).unwrap()
                });
            }
        )*};
    }
    check_every_engine!(
        Aes128CbcSha1: Aes128 Sha1 1,
        Aes256CbcSha1: Aes256 Sha1 2,
        Aes128CbcSha256: Aes128 Sha256 3,
        Aes256CbcSha256: Aes256 Sha256 4,
        Aes256CbcSha384: Aes256 Sha384 5,
        DesEde3CbcSha1: Tdes Sha1 6,
    );
    runs += check_implicit();
    let aes = <gcm_core::aes::Aes128 as KeyInit>::new(&[0u8; 16].into());
    println!(
        "ct_valgrind: {runs} seals and opens checked (valgrind: {}, AES back end: {})",
        ct_check::running_on_valgrind(),
        aes.backend().name()
    );
    // What ran (under valgrind, the engines its CPU model leaves; see the crate docs).
    let list = |all: Vec<Engines>| {
        all.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "ct_valgrind: engines (AES back end / hash / seal): SHA-1 [{}]; SHA-256 [{}]; \
         SHA-384 [{}]; 3DES kernels {} (the CBC decryption's, `-vbmi` if encryption runs \
         on VBMI)",
        list(Aes128CbcSha1::available_engines().collect()),
        list(Aes128CbcSha256::available_engines().collect()),
        list(Aes256CbcSha384::available_engines().collect()),
        DesEde3CbcSha1::new(&Default::default()).ct_engines().cipher
    );
}

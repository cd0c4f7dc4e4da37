//! Differential tests against an independent composition of RustCrypto `cbc`, `hmac`,
//! `sha1`/`sha2`, `aes` and `des`: seal must produce the same records, and open must
//! accept exactly the records the composition accepts (any valid padding) and return the
//! same plaintext.

mod common;

use aead::{Aead, AeadInOut, KeyInit, Nonce, Payload};
use common::{Cipher, Hash, Rng, Suite, random_ad};
use tls_cbc_aead::*;

/// Lengths checked exhaustively for seal/open round trips.
const MAX_LEN: usize = 600;

fn open_with<A: AeadInOut>(a: &A, iv: &[u8], ad: &[u8], record: &[u8]) -> Option<Vec<u8>> {
    let nonce = Nonce::<A>::try_from(iv).unwrap();
    let mut buf = record.to_vec();
    match a.decrypt_in_place(&nonce, ad, &mut buf) {
        Ok(()) => Some(buf),
        Err(_) => {
            assert!(buf.is_empty(), "a failed open must leave no plaintext");
            None
        }
    }
}

fn check_suite<A: AeadInOut + KeyInit>(suite: Suite, seed: u64) {
    let key_len = suite.mac_len() + suite.enc_key_len();
    assert!(A::new_from_slice(&vec![0; key_len - 1]).is_err());
    assert!(A::new_from_slice(&vec![0; key_len + 1]).is_err());
    check_suite_with(suite, seed, |key| A::new_from_slice(key).unwrap());
}

/// [`check_suite`] on keys made by `new`.
fn check_suite_with<A: AeadInOut>(suite: Suite, seed: u64, new: impl Fn(&[u8]) -> A) {
    let mut rng = Rng::new(seed);
    let key_len = suite.mac_len() + suite.enc_key_len();
    let b = suite.block_len();

    // Seal agrees with the composition for every length, and opens back.
    let mut opened = 0;
    for len in 0..=MAX_LEN {
        let key = rng.bytes(key_len);
        let a = new(&key);
        let iv = rng.bytes(b);
        let ad = random_ad(&mut rng);
        let pt = rng.bytes(len);
        let nonce = Nonce::<A>::try_from(&iv[..]).unwrap();
        let sealed = a.encrypt(&nonce, Payload { msg: &pt, aad: &ad }).unwrap();
        assert_eq!(
            sealed,
            suite.seal(&key, &iv, &ad, &pt),
            "{suite:?} len {len}"
        );
        assert_eq!(
            a.decrypt(
                &nonce,
                Payload {
                    msg: &sealed,
                    aad: &ad
                }
            )
            .unwrap(),
            pt
        );
        opened += 1;
    }

    // Every padding length, with and without tampering; open agrees with the model.
    let (mut accepted, mut rejected) = (0, 0);
    for pad_len in 1..=256usize {
        let key = rng.bytes(key_len);
        let (mac_key, enc_key) = suite.split_key(&key);
        let a = new(&key);
        // A plaintext length that makes `pad_len` a valid (not necessarily minimal) padding.
        let mut len = rng.below(MAX_LEN);
        while !(len + suite.mac_len() + pad_len).is_multiple_of(b) {
            len += 1;
        }
        let iv = rng.bytes(b);
        let ad = random_ad(&mut rng);
        let pt = rng.bytes(len);
        let encoded = suite.encode(mac_key, &ad, &pt, pad_len);
        let record = suite.cbc_encrypt(enc_key, &iv, &encoded);
        assert_eq!(
            open_with(&a, &iv, &ad, &record),
            Some(pt.clone()),
            "pad {pad_len}"
        );
        accepted += 1;

        let mut cases: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        // One bit flipped in the MAC, in the padding, in the data (before encryption).
        for region in [
            len..len + suite.mac_len(),
            len + suite.mac_len()..encoded.len(),
            0..len,
        ] {
            if region.is_empty() {
                continue;
            }
            let mut e = encoded.clone();
            e[region.start + rng.below(region.len())] ^= 1 << rng.below(8);
            cases.push((suite.cbc_encrypt(enc_key, &iv, &e), ad.clone()));
        }
        // Last byte replaced by a random padding length, with the bytes before it made
        // consistent with it: valid padding over a wrong MAC position.
        {
            let mut e = encoded.clone();
            let p = rng.below(256);
            let n = e.len();
            for x in e[n.saturating_sub(p + 1)..].iter_mut() {
                *x = p as u8;
            }
            cases.push((suite.cbc_encrypt(enc_key, &iv, &e), ad.clone()));
        }
        // A ciphertext bit flip, a dropped block, a wrong sequence number.
        let mut r = record.clone();
        let at = rng.below(r.len());
        r[at] ^= 1 << rng.below(8);
        cases.push((r, ad.clone()));
        cases.push((record[..record.len() - b].to_vec(), ad.clone()));
        let mut ad2 = ad.clone();
        ad2[7] ^= 1;
        cases.push((record.clone(), ad2));
        for (rec, ad) in cases {
            let want = suite.open(&key, &iv, &ad, &rec);
            let got = open_with(&a, &iv, &ad, &rec);
            assert_eq!(got, want, "{suite:?} pad {pad_len}");
            if want.is_some() {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
    }
    // Long records, whose public prefix open decrypts as it hashes it: round trips, any
    // valid padding, and one flipped ciphertext bit anywhere, judged by the model.
    for len in [1000, 1350, 4095, 4096, 8192, 16384, 40_000, 65_535] {
        let key = rng.bytes(key_len);
        let (mac_key, enc_key) = suite.split_key(&key);
        let a = new(&key);
        let iv = rng.bytes(b);
        let ad = random_ad(&mut rng);
        let pt = rng.bytes(len);
        let mut pad_len = 1 + rng.below(256);
        while !(len + suite.mac_len() + pad_len).is_multiple_of(b) {
            pad_len = pad_len % 256 + 1;
        }
        let record = suite.cbc_encrypt(enc_key, &iv, &suite.encode(mac_key, &ad, &pt, pad_len));
        assert_eq!(
            open_with(&a, &iv, &ad, &record),
            Some(pt.clone()),
            "{suite:?} {len}"
        );
        accepted += 1;
        for _ in 0..4 {
            let mut r = record.clone();
            let at = rng.below(r.len());
            r[at] ^= 1 << rng.below(8);
            let want = suite.open(&key, &iv, &ad, &r);
            assert_eq!(
                open_with(&a, &iv, &ad, &r),
                want,
                "{suite:?} {len} tampered"
            );
            if want.is_some() {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
    }
    assert!(rejected > 256 * 5, "{rejected}");
    eprintln!("{suite:?}: {opened} round trips, {accepted} accepted, {rejected} rejected");
}

/// What must fail before any decryption: lengths and AD size.
fn check_public_rejections<A: AeadInOut + KeyInit>(suite: Suite) {
    let key = vec![7u8; suite.mac_len() + suite.enc_key_len()];
    let a = A::new_from_slice(&key).unwrap();
    let iv = vec![1u8; suite.block_len()];
    let nonce = Nonce::<A>::try_from(&iv[..]).unwrap();
    let ad = [0u8; 11];
    // 2^16 - 1 bytes seal; 2^16 do not.
    let mut buf = vec![0u8; 65535];
    assert!(a.encrypt_in_place(&nonce, &ad, &mut buf).is_ok());
    let mut buf = vec![0u8; 65536];
    assert!(a.encrypt_in_place(&nonce, &ad, &mut buf).is_err());
    assert_eq!(buf.len(), 65536, "a refused seal leaves the buffer alone");
    // The AD must be 11 bytes for seal and open.
    for bad_ad in [&[0u8; 10][..], &[0u8; 12][..], &[][..], &[0u8; 13][..]] {
        let mut buf = vec![0u8; 5];
        assert!(a.encrypt_in_place(&nonce, bad_ad, &mut buf).is_err());
        let mut rec = suite.seal(&key, &iv, &ad, b"hello");
        assert!(a.decrypt_in_place(&nonce, bad_ad, &mut rec).is_err());
    }
    // Lengths that are not whole blocks, and records too short for a MAC.
    let good = suite.seal(&key, &iv, &ad, b"hello, world");
    for cut in 1..suite.block_len() {
        let mut rec = good[..good.len() - cut].to_vec();
        assert!(a.decrypt_in_place(&nonce, &ad, &mut rec).is_err());
        assert!(rec.is_empty());
    }
    for len in (0..=suite.mac_len()).step_by(suite.block_len()) {
        let mut rec = vec![0u8; len];
        assert!(a.decrypt_in_place(&nonce, &ad, &mut rec).is_err());
    }
    // A record too long to have come from seal is refused up front.
    let too_long = 65535 + suite.mac_len() + 256;
    let too_long = too_long + suite.block_len() - too_long % suite.block_len();
    let mut rec = vec![0u8; too_long];
    assert!(a.decrypt_in_place(&nonce, &ad, &mut rec).is_err());
    assert!(rec.is_empty());
    // The largest plaintext, with the largest padding, still opens.
    let pt = vec![0x61u8; 65535];
    let (mk, ek) = suite.split_key(&key);
    let mut pad = suite.min_pad(pt.len());
    while pad + suite.block_len() <= 256 {
        pad += suite.block_len();
    }
    let mut rec = suite.cbc_encrypt(ek, &iv, &suite.encode(mk, &ad, &pt, pad));
    assert!(a.decrypt_in_place(&nonce, &ad, &mut rec).is_ok());
    assert_eq!(rec, pt);
    // The detached forms have no fixed tag and always fail.
    let mut data = [0u8; 16];
    assert!(
        a.encrypt_inout_detached(&nonce, &ad, (&mut data[..]).into())
            .is_err()
    );
    assert!(
        a.decrypt_inout_detached(&nonce, &ad, (&mut data[..]).into(), &Default::default())
            .is_err()
    );
}

macro_rules! suite_tests {
    ($name:ident, $ty:ty, $cipher:expr, $hash:expr, $seed:literal) => {
        mod $name {
            use super::*;
            const SUITE: Suite = Suite {
                cipher: $cipher,
                hash: $hash,
            };
            #[test]
            fn agrees_with_composition() {
                check_suite::<$ty>(SUITE, $seed);
            }
            #[test]
            fn public_rejections() {
                check_public_rejections::<$ty>(SUITE);
            }
            /// Every engine choice this CPU has (AES back end, hash compression, plain or
            /// stitched seal) against the composition, beyond the best one above.
            #[test]
            fn every_engine_agrees_with_composition() {
                let best = <$ty>::best_engines();
                let mut ran = 0;
                for engines in <$ty>::available_engines().filter(|&e| e != best) {
                    check_suite_with(SUITE, $seed + 100, |key| {
                        <$ty>::new_with_engines(key.try_into().unwrap(), engines).unwrap()
                    });
                    ran += 1;
                }
                eprintln!("{SUITE:?}: {ran} other engine choices besides {best}");
            }
        }
    };
}

suite_tests!(aes128_sha1, Aes128CbcSha1, Cipher::Aes128, Hash::Sha1, 1);
suite_tests!(aes256_sha1, Aes256CbcSha1, Cipher::Aes256, Hash::Sha1, 2);
suite_tests!(
    aes128_sha256,
    Aes128CbcSha256,
    Cipher::Aes128,
    Hash::Sha256,
    3
);
suite_tests!(
    aes256_sha256,
    Aes256CbcSha256,
    Cipher::Aes256,
    Hash::Sha256,
    4
);
suite_tests!(
    aes256_sha384,
    Aes256CbcSha384,
    Cipher::Aes256,
    Hash::Sha384,
    5
);
#[cfg(feature = "des")]
suite_tests!(tdes_sha1, DesEde3CbcSha1, Cipher::Tdes, Hash::Sha1, 6);

#[test]
fn sealed_len_matches() {
    for len in 0..100 {
        let s = Suite {
            cipher: Cipher::Aes128,
            hash: Hash::Sha256,
        };
        assert_eq!(Aes128CbcSha256::sealed_len(len), len + 32 + s.min_pad(len));
    }
    assert_eq!(Aes256CbcSha384::MAX_OVERHEAD, 64);
    assert_eq!(Aes128CbcSha1::MAX_OVERHEAD, 36);
}

/// The deprecated `AeadInPlace` and the allocating `Aead` come from blanket impls and go
/// through the overridden in-place methods.
#[test]
#[allow(deprecated)]
fn blanket_traits_work() {
    use aead::AeadInPlace;
    let suite = Suite {
        cipher: Cipher::Aes256,
        hash: Hash::Sha384,
    };
    let key = vec![5u8; 80];
    let a = Aes256CbcSha384::new_from_slice(&key).unwrap();
    let nonce = Nonce::<Aes256CbcSha384>::from([3u8; 16]);
    let ad = [9u8; 11];
    let mut buf = b"blanket".to_vec();
    AeadInPlace::encrypt_in_place(&a, &nonce, &ad, &mut buf).unwrap();
    assert_eq!(buf, suite.seal(&key, &[3u8; 16], &ad, b"blanket"));
    AeadInPlace::decrypt_in_place(&a, &nonce, &ad, &mut buf).unwrap();
    assert_eq!(buf, b"blanket");
    let mut detached = [0u8; 16];
    assert!(AeadInPlace::encrypt_in_place_detached(&a, &nonce, &ad, &mut detached).is_err());
}

#[cfg(feature = "zeroize")]
#[test]
fn key_holders_zeroize_on_drop() {
    fn zeroizes<T: zeroize::ZeroizeOnDrop>() {}
    zeroizes::<Aes128CbcSha1>();
    zeroizes::<Aes256CbcSha384>();
    zeroizes::<Aes128CbcSha1ImplicitIv>();
    #[cfg(feature = "des")]
    {
        zeroizes::<DesEde3CbcSha1>();
        zeroizes::<DesEde3CbcSha1ImplicitIv>();
    }
}

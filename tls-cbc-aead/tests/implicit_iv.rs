//! Implicit-IV suites: the CBC state chains from record to record, so a sequence sealed by
//! one instance opens, in order, with another instance made from the same key, and agrees
//! with the reference composition chaining by hand; for every engine choice this CPU has
//! as the sender, each with a receiver on another choice.

mod common;

use aead::KeyInit;
use common::{Cipher, Hash, Rng, Suite, random_ad};
use tls_cbc_aead::*;

macro_rules! chaining_test {
    ($name:ident, $ty:ty, $cipher:expr, $seed:literal) => {
        mod $name {
            use super::*;
            #[test]
            fn every_engine_chains() {
                let all: Vec<Engines> = <$ty>::available_engines().collect();
                assert!(all.contains(&<$ty>::best_engines()));
                for (i, &engines) in all.iter().enumerate() {
                    chain(engines, all[(i + 1) % all.len()]);
                }
            }

            fn chain(sender_engines: Engines, receiver_engines: Engines) {
                let suite = Suite {
                    cipher: $cipher,
                    hash: Hash::Sha1,
                };
                let mut rng = Rng::new($seed);
                let key = rng.bytes(suite.mac_len() + suite.enc_key_len() + suite.block_len());
                let new = |engines| {
                    <$ty>::new_with_engines(key[..].try_into().unwrap(), engines).unwrap()
                };
                let mut sender = new(sender_engines);
                let mut receiver = new(receiver_engines);
                assert_eq!(sender.engines(), sender_engines);
                let mut chain = key[suite.mac_len() + suite.enc_key_len()..].to_vec();
                assert_eq!(sender.iv(), &chain[..]);
                let mut records = Vec::new();
                for i in 0..40 {
                    let ad = random_ad(&mut rng);
                    // Short records, and some across many hash blocks.
                    let len = if i % 4 == 3 {
                        rng.below(3000)
                    } else {
                        rng.below(300)
                    };
                    let pt = rng.bytes(len);
                    let mut buf = pt.clone();
                    sender.seal_in_place(&ad, &mut buf).unwrap();
                    assert_eq!(
                        buf,
                        suite.seal(&key, &chain, &ad, &pt),
                        "record {i} {sender_engines}"
                    );
                    chain = buf[buf.len() - suite.block_len()..].to_vec();
                    assert_eq!(sender.iv(), &chain[..]);
                    records.push((ad, pt, buf));
                }
                for (i, (ad, pt, record)) in records.iter().enumerate() {
                    let mut buf = record.clone();
                    receiver
                        .open_in_place(ad, &mut buf)
                        .unwrap_or_else(|_| panic!("record {i}"));
                    assert_eq!(&buf, pt);
                }
                // Out of order: a fresh receiver cannot open the second record first.
                let mut fresh = <$ty>::new_from_slice(&key).unwrap();
                let mut buf = records[1].2.clone();
                assert!(fresh.open_in_place(&records[1].0, &mut buf).is_err());
                assert!(buf.is_empty());
            }
        }
    };
}

chaining_test!(aes128_sha1, Aes128CbcSha1ImplicitIv, Cipher::Aes128, 11);
chaining_test!(aes256_sha1, Aes256CbcSha1ImplicitIv, Cipher::Aes256, 12);
#[cfg(feature = "des")]
chaining_test!(tdes_sha1, DesEde3CbcSha1ImplicitIv, Cipher::Tdes, 13);

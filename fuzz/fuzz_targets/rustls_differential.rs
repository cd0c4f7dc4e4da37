//! Differential: `aes_gcm_vaes::rustls`, the record and QUIC protection a TLS stack feeds
//! with bytes from the network, against rustls's own ring provider, which it replaces.
//!
//! The input picks one of four AEADs (TLS 1.3 and TLS 1.2 record protection, QUIC packet
//! and header protection; AES-128 or AES-256), a traffic secret from which rustls derives
//! both sides' keys (so AES-128 keys too, which rustls hands only to its own code), and
//! then one of:
//! * a record or packet sealed by both: the bytes must be equal, ours must open it back,
//!   and once one bit of it is flipped both must refuse it with the same error;
//! * bytes opened as they come (a record or packet body of any length, any content type
//!   and sequence number): both must give the same result, the same plaintext or the
//!   same error;
//! * QUIC header protection of any first byte, packet-number slice and sample length:
//!   both must succeed or fail alike and leave the same bytes.
//!
//! Our back end is the one this CPU picks (the provider's statics detect it).
#![no_main]

use aes_gcm_vaes::rustls::{self as ours, quic as our_quic};
use hardening_fuzz::Cursor;
use libfuzzer_sys::fuzz_target;
use rustls::crypto::cipher::{
    InboundOpaqueMessage, Iv, MessageDecrypter, MessageEncrypter, OutboundPlainMessage,
    Tls12AeadAlgorithm,
};
use rustls::crypto::ring::cipher_suite as ring_suites;
use rustls::crypto::tls13::OkmBlock;
use rustls::quic::{self, DirectionalKeys, Keys, Version};
use rustls::{ContentType, Error, ProtocolVersion, Side, SupportedCipherSuite, Tls13CipherSuite};

fn tls13(s: SupportedCipherSuite) -> &'static Tls13CipherSuite {
    match s {
        SupportedCipherSuite::Tls13(s) => s,
        SupportedCipherSuite::Tls12(_) => unreachable!("a TLS 1.3 suite"),
    }
}

fn aead12(s: SupportedCipherSuite) -> &'static dyn Tls12AeadAlgorithm {
    match s {
        SupportedCipherSuite::Tls12(s) => s.aead_alg,
        SupportedCipherSuite::Tls13(_) => unreachable!("a TLS 1.2 suite"),
    }
}

/// Ring's and our TLS 1.3 suite of one AES key size.
fn suites13(aes256: bool) -> [&'static Tls13CipherSuite; 2] {
    if aes256 {
        [
            tls13(ring_suites::TLS13_AES_256_GCM_SHA384),
            tls13(ours::TLS13_AES_256_GCM_SHA384),
        ]
    } else {
        [
            tls13(ring_suites::TLS13_AES_128_GCM_SHA256),
            tls13(ours::TLS13_AES_128_GCM_SHA256),
        ]
    }
}

/// Ring's and our TLS 1.2 AEAD of one AES key size.
fn aeads12(aes256: bool) -> [&'static dyn Tls12AeadAlgorithm; 2] {
    if aes256 {
        [
            aead12(ring_suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
            aead12(ours::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
        ]
    } else {
        [
            aead12(ring_suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
            aead12(ours::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
        ]
    }
}

/// An encrypter and a decrypter from ring and from us, all on the keys rustls derives
/// from `secret` with the ring suite's HKDF (TLS 1.3's `key` and `iv` labels; for TLS 1.2
/// the first 4 bytes of that IV are the salt and the rest the first explicit nonce).
struct RecordPair {
    enc: [Box<dyn MessageEncrypter>; 2],
    dec: [Box<dyn MessageDecrypter>; 2],
}

fn records(aes256: bool, tls12: bool, secret: &[u8]) -> RecordPair {
    let [ring13, ours13] = suites13(aes256);
    let expander = ring13
        .hkdf_provider
        .expander_for_okm(&OkmBlock::new(secret));
    let key = || rustls::internal::derive_traffic_key(expander.as_ref(), ring13.aead_alg);
    let iv = rustls::internal::derive_traffic_iv(expander.as_ref());
    if tls12 {
        let (salt, explicit) = iv.as_ref().split_at(4);
        let [ring, mine] = aeads12(aes256);
        RecordPair {
            enc: [
                ring.encrypter(key(), salt, explicit),
                mine.encrypter(key(), salt, explicit),
            ],
            dec: [ring.decrypter(key(), salt), mine.decrypter(key(), salt)],
        }
    } else {
        let iv = || Iv::copy(iv.as_ref());
        RecordPair {
            enc: [
                ring13.aead_alg.encrypter(key(), iv()),
                ours13.aead_alg.encrypter(key(), iv()),
            ],
            dec: [
                ring13.aead_alg.decrypter(key(), iv()),
                ours13.aead_alg.decrypter(key(), iv()),
            ],
        }
    }
}

/// What a decrypter made of a record: its content type and plaintext, or the error.
fn open(
    dec: &mut dyn MessageDecrypter,
    typ: ContentType,
    record: &[u8],
    seq: u64,
) -> Result<(ContentType, Vec<u8>), Error> {
    let mut buf = record.to_vec();
    let msg = InboundOpaqueMessage::new(typ, ProtocolVersion::TLSv1_2, &mut buf);
    dec.decrypt(msg, seq)
        .map(|plain| (plain.typ, plain.payload.to_vec()))
}

/// Asserts `a == b`, printing a short summary of each (a record can be 16 KiB).
fn same<T: PartialEq + core::fmt::Debug>(a: &T, b: &T, what: &str) {
    if a != b {
        let brief = |x: &T| {
            let s: Vec<char> = format!("{x:?}").chars().collect();
            let head: String = s.iter().take(120).collect();
            let tail: String = s[s.len().saturating_sub(60)..].iter().collect();
            format!("{} chars of Debug: {head} .. {tail}", s.len())
        };
        panic!("{what}:\n  left:  {}\n  right: {}", brief(a), brief(b));
    }
}

const CONTENT_TYPES: [ContentType; 5] = [
    ContentType::ApplicationData,
    ContentType::Handshake,
    ContentType::Alert,
    ContentType::ChangeCipherSpec,
    ContentType::Unknown(0x42),
];

fn record_case(c: &mut Cursor<'_>, aes256: bool, tls12: bool) {
    let secret = c.exact(if aes256 { 48 } else { 32 });
    let mut pair = records(aes256, tls12, &secret);
    let typ = CONTENT_TYPES[c.below(CONTENT_TYPES.len())];
    let seq = u64::from(c.u16()) << (c.byte() % 49);
    let what = format!("aes256={aes256} tls12={tls12} seq={seq} typ={typ:?}");
    if c.byte() & 1 == 0 {
        // Seal the same plaintext with both; open ours; tamper.
        let flip = c.u16();
        // Up to past rustls's 2^14-byte limit: the input's bytes, then a counting
        // pattern, so that a short input can reach the longest records.
        let len = c.below(16384 + 300 + 1);
        let mut plain = c.take(len).to_vec();
        plain.extend((plain.len()..len).map(|i| i as u8));
        let plain = &plain[..];
        let version = if tls12 {
            ProtocolVersion::TLSv1_2
        } else {
            ProtocolVersion::TLSv1_3
        };
        let sealed: [Result<Vec<u8>, Error>; 2] = core::array::from_fn(|i| {
            let msg = OutboundPlainMessage {
                typ,
                version,
                payload: plain.into(),
            };
            pair.enc[i]
                .encrypt(msg, seq)
                .map(|m| m.payload.as_ref().to_vec())
        });
        same(
            &sealed[0],
            &sealed[1],
            &format!("{what}: seal differs from ring's"),
        );
        let Ok(record) = &sealed[1] else { return };
        assert_eq!(
            record.len(),
            pair.enc[1].encrypted_payload_len(plain.len()),
            "{what}: encrypted_payload_len"
        );
        // The record header's type: TLS 1.2 authenticates it; TLS 1.3 puts the real one
        // inside and sends every record as application data.
        let outer = if tls12 {
            typ
        } else {
            ContentType::ApplicationData
        };
        let opened: [_; 2] =
            core::array::from_fn(|i| open(pair.dec[i].as_mut(), outer, record, seq));
        same(
            &opened[0],
            &opened[1],
            &format!("{what}: opened unlike ring"),
        );
        // After decryption, whoever decrypts, rustls refuses a plaintext over 2^14 bytes
        // (RFC 8446 §5.2, RFC 5246 §6.2.1) and, in TLS 1.3, a protected ChangeCipherSpec.
        let expected = if plain.len() > 16384 {
            Err(Error::PeerSentOversizedRecord)
        } else if !tls12 && typ == ContentType::ChangeCipherSpec {
            Err(Error::PeerMisbehaved(
                rustls::PeerMisbehaved::IllegalMiddleboxChangeCipherSpec,
            ))
        } else {
            Ok((typ, plain.to_vec()))
        };
        same(&opened[1], &expected, &format!("{what}: round trip"));
        let mut bad = record.clone();
        let bit = usize::from(flip) % (bad.len() * 8);
        bad[bit / 8] ^= 1 << (bit % 8);
        let results: [_; 2] =
            core::array::from_fn(|i| open(pair.dec[i].as_mut(), outer, &bad, seq));
        assert!(results[1].is_err(), "{what}: bit {bit} flipped, opened");
        same(
            &results[0],
            &results[1],
            &format!("{what}: bit {bit} flipped"),
        );
    } else {
        // Bytes as they come.
        let record = c.rest();
        let results: [_; 2] =
            core::array::from_fn(|i| open(pair.dec[i].as_mut(), typ, record, seq));
        let n = record.len();
        same(&results[0], &results[1], &format!("{what}: {n} raw bytes"));
    }
}

/// Ring's and our QUIC keys for both sides.
fn quic_keys(aes256: bool, version: Version, cid: &[u8]) -> [[Keys; 2]; 2] {
    let [ring, mine] = suites13(aes256);
    let alg = if aes256 {
        our_quic::AES_256_GCM
    } else {
        our_quic::AES_128_GCM
    };
    let keys = |suite: &'static Tls13CipherSuite, alg: &'static dyn quic::Algorithm| {
        [Side::Client, Side::Server].map(|side| Keys::initial(version, suite, alg, cid, side))
    };
    [keys(ring, ring.quic.unwrap()), keys(mine, alg)]
}

/// A packet protected by `k`: the header (first byte and packet number masked) and the
/// sealed payload with its tag, or the error.
fn protect(
    k: &DirectionalKeys,
    pn: u64,
    header: &[u8],
    pn_len: usize,
    payload: &[u8],
) -> Result<Vec<u8>, Error> {
    let mut body = payload.to_vec();
    let tag = k.packet.encrypt_in_place(pn, header, &mut body)?;
    body.extend_from_slice(tag.as_ref());
    let mut header = header.to_vec();
    let pn_at = header.len() - pn_len;
    let sample = body
        .get(4 - pn_len..20 - pn_len)
        .ok_or(Error::DecryptError)?;
    let (first, rest) = header.split_first_mut().unwrap();
    k.header
        .encrypt_in_place(sample, first, &mut rest[pn_at - 1..])?;
    header.extend(body);
    Ok(header)
}

fn quic_case(c: &mut Cursor<'_>, aes256: bool) {
    let version = [Version::V1, Version::V2][usize::from(c.byte() & 1)];
    let cid = c.take_upto(20).to_vec();
    let [ring, mine] = quic_keys(aes256, version, &cid);
    let what = format!("quic aes256={aes256} {version:?} cid={cid:02x?}");
    match c.byte() % 3 {
        0 => {
            // A packet sealed by both, opened by ours, tampered.
            let pn = u64::from(c.u16()) << (c.byte() % 47);
            let pn_len = 1 + usize::from(c.byte() % 4);
            let flip = c.u16();
            let mut header = c.take_upto(60).to_vec();
            if header.len() < pn_len + 1 {
                return;
            }
            // The first byte declares the packet-number length (RFC 9000 §17).
            header[0] = (header[0] & !3) | (pn_len as u8 - 1);
            let payload = c.take_upto(1500);
            let sealed = [&ring, &mine].map(|k| protect(&k[0].local, pn, &header, pn_len, payload));
            same(
                &sealed[0],
                &sealed[1],
                &format!("{what}: packet differs from ring's"),
            );
            let Ok(packet) = &sealed[1] else { return };
            let unprotect = |k: &DirectionalKeys, packet: &[u8]| -> Result<Vec<u8>, Error> {
                let mut packet = packet.to_vec();
                let hlen = header.len();
                let sample: Vec<u8> = packet[hlen + 4 - pn_len..hlen + 20 - pn_len].to_vec();
                // As a receiver does: the four bytes where the longest packet number
                // would be (the first byte, once unmasked, says how many are).
                let (first, rest) = packet.split_first_mut().unwrap();
                let pn_at = hlen - pn_len - 1;
                k.header
                    .decrypt_in_place(&sample, first, &mut rest[pn_at..pn_at + 4])?;
                let (head, body) = packet.split_at_mut(hlen);
                let plain = k.packet.decrypt_in_place(pn, head, body)?;
                Ok([&head[..], plain].concat())
            };
            let opened = unprotect(&mine[1].remote, packet);
            let expected = [&header[..], payload].concat();
            same(&opened, &Ok(expected), &format!("{what}: round trip"));
            let mut bad = packet.clone();
            let bit = usize::from(flip) % (bad.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
            let results = [&ring, &mine].map(|k| unprotect(&k[1].remote, &bad));
            assert!(results[1].is_err(), "{what}: bit {bit} flipped, opened");
            same(
                &results[0],
                &results[1],
                &format!("{what}: bit {bit} flipped"),
            );
        }
        1 => {
            // A packet body as it comes.
            let pn = u64::from(c.u16()) << (c.byte() % 47);
            let header = c.take_upto(60).to_vec();
            let body = c.rest();
            let results = [&ring, &mine].map(|k| {
                let mut body = body.to_vec();
                k[1].remote
                    .packet
                    .decrypt_in_place(pn, &header, &mut body)
                    .map(|p| p.to_vec())
            });
            let n = body.len();
            same(&results[0], &results[1], &format!("{what}: {n} raw bytes"));
        }
        _ => {
            // Header protection of anything.
            let encrypt = c.byte() & 1 == 0;
            let first = c.byte();
            let pn = c.take_upto(8).to_vec();
            let sample = c.take_upto(40).to_vec();
            let results = [&ring, &mine].map(|k| {
                let (mut f, mut p) = (first, pn.clone());
                let hp = k[0].local.header.as_ref();
                let r = if encrypt {
                    hp.encrypt_in_place(&sample, &mut f, &mut p)
                } else {
                    hp.decrypt_in_place(&sample, &mut f, &mut p)
                };
                (r.is_ok(), f, p)
            });
            assert_eq!(
                results[0],
                results[1],
                "{what}: header protection (encrypt={encrypt}, sample {} bytes)",
                sample.len()
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let selector = c.byte();
    let aes256 = selector & 1 != 0;
    match (selector >> 1) % 3 {
        0 => record_case(&mut c, aes256, false),
        1 => record_case(&mut c, aes256, true),
        _ => quic_case(&mut c, aes256),
    }
});

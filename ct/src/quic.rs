//! QUIC packet and header protection (`aes_gcm_vaes::rustls::quic`, RFC 9001 §5), driven
//! as quinn drives it: keys from `rustls::quic::Keys::initial`, then packet seal and open
//! (right and wrong tags, with and without a multipath path ID) and header protection
//! on and off, for AES-128 and AES-256, long and short headers, every packet-number
//! length.
//!
//! The keys: rustls derives them with the suite's HKDF, ring's, whose C and assembly the
//! sanitizer does not instrument. The harness gives a copy of our suite a stand-in HKDF
//! instead ([`SecretKdf`]): every byte it expands is a byte of a poisoned secret XOR a
//! public function of the label, so the packet key, the packet IV and the
//! header-protection key reach this module's `Algorithm` poisoned, through rustls's own
//! label and key plumbing, and no ring code runs. A twin suite with the same secret
//! unpoisoned gives the expected results.
//!
//! Secret (poisoned): the keys and IV; the plaintext; on the sending side the unprotected
//! first byte, the packet number and the header (RFC 9001 §9.5: sending must not reveal
//! the packet number or its encoded length); on the receiving side the whole received
//! packet, although it came off the wire, to be strict. Declassified: the protected
//! packet once sealed and masked (it goes on the wire), and on the receiving side the
//! first byte and packet-number bytes once header protection is removed. Those are
//! public by protocol design once the packet is accepted, and the receiver must use them
//! before: the packet-number length says where the payload starts (so the length of the
//! associated data, which AES-GCM takes as public) and the packet number makes the
//! nonce. This module's part is to unmask them without a branch or an index on them
//! (checked: they come out poisoned and unreported); what the caller does with them
//! next is the caller's (quinn's and rustls's code is not checked here).

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

use aes_gcm_vaes::rustls::{TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384, quic};
use gcm_core::Backend;
use rustls::Side;
use rustls::crypto::tls13::{Hkdf, HkdfExpander, OkmBlock, OutputLengthError};
use rustls::crypto::{ActiveKeyExchange, hmac};
use rustls::quic::{DirectionalKeys, Keys, Version};
use rustls::{Error, SupportedCipherSuite, Tls13CipherSuite};

use crate::check::{Expect, Ledger, Rng, expect, expect_secret, public, secret};

/// The back ends QUIC ran on, one bit per `Backend::ALL` entry.
static RAN_ON: AtomicU32 = AtomicU32::new(0);

/// Payload lengths: the shortest a sample allows (with a 4-byte packet number), a
/// block, either side of the VAES-512 batch, a typical datagram.
const PAYLOAD_LENS: [usize; 6] = [16, 17, 64, 256, 257, 1200];

/// Bytes of the stand-in HKDF's secret (SHA-256's output, as for the real suites).
const SECRET_LEN: usize = 32;

/// A stand-in for HKDF: expands to `secret[i % 32] ^ f(info, i)`, `f` public. Not a
/// KDF; it only carries the secret's shadow into every key rustls derives.
#[derive(Clone, Copy)]
struct SecretKdf([u8; SECRET_LEN]);

impl SecretKdf {
    fn expander(&self) -> Box<dyn HkdfExpander> {
        Box::new(*self)
    }
}

/// FNV-1a over the labels, then one more step per output position: different labels
/// (key, IV, header-protection key; client, server) give different keys.
fn label_byte(info: &[&[u8]], i: usize) -> u8 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in info
        .iter()
        .flat_map(|part| part.iter())
        .chain(&(i as u64).to_le_bytes())
    {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    (h >> 32) as u8
}

impl HkdfExpander for SecretKdf {
    fn expand_slice(&self, info: &[&[u8]], output: &mut [u8]) -> Result<(), OutputLengthError> {
        for (i, o) in output.iter_mut().enumerate() {
            *o = self.0[i % SECRET_LEN] ^ label_byte(info, i);
        }
        Ok(())
    }

    fn expand_block(&self, info: &[&[u8]]) -> OkmBlock {
        let mut block = [0u8; SECRET_LEN];
        self.expand_slice(info, &mut block).expect("any length");
        OkmBlock::new(&block)
    }

    fn hash_len(&self) -> usize {
        SECRET_LEN
    }
}

impl Hkdf for SecretKdf {
    fn extract_from_zero_ikm(&self, _salt: Option<&[u8]>) -> Box<dyn HkdfExpander> {
        self.expander()
    }

    fn extract_from_secret(&self, _salt: Option<&[u8]>, _secret: &[u8]) -> Box<dyn HkdfExpander> {
        self.expander()
    }

    fn extract_from_kx_shared_secret(
        &self,
        _salt: Option<&[u8]>,
        _kx: Box<dyn ActiveKeyExchange>,
        _peer_pub_key: &[u8],
    ) -> Result<Box<dyn HkdfExpander>, Error> {
        Ok(self.expander())
    }

    fn expander_for_okm(&self, okm: &OkmBlock) -> Box<dyn HkdfExpander> {
        let mut secret = [0u8; SECRET_LEN];
        secret.copy_from_slice(&okm.as_ref()[..SECRET_LEN]);
        Box::new(SecretKdf(secret))
    }

    fn hmac_sign(&self, _key: &OkmBlock, _message: &[u8]) -> hmac::Tag {
        unreachable!("QUIC key derivation signs nothing")
    }
}

/// Our TLS 1.3 suite (its QUIC algorithm among it) with the stand-in HKDF over `secret`.
fn suite_with(base: SupportedCipherSuite, secret: [u8; SECRET_LEN]) -> &'static Tls13CipherSuite {
    let base = base.tls13().expect("a TLS 1.3 suite");
    let kdf: &'static SecretKdf = Box::leak(Box::new(SecretKdf(secret)));
    Box::leak(Box::new(Tls13CipherSuite {
        common: rustls::crypto::CipherSuiteCommon {
            suite: base.common.suite,
            hash_provider: base.common.hash_provider,
            confidentiality_limit: base.common.confidentiality_limit,
        },
        hkdf_provider: kdf,
        aead_alg: base.aead_alg,
        quic: base.quic,
    }))
}

/// Client and server keys of one connection from `suite`.
fn keys(suite: &'static Tls13CipherSuite, cid: &[u8]) -> (Keys, Keys) {
    let quic = suite.quic.expect("our suites do QUIC");
    expect(
        core::ptr::addr_eq(quic, quic::AES_128_GCM) || core::ptr::addr_eq(quic, quic::AES_256_GCM),
        "QUIC: the suite carries aes_gcm_vaes::rustls::quic",
    );
    let key = |side| Keys::initial(Version::V1, suite, quic, cid, side);
    (key(Side::Client), key(Side::Server))
}

/// A header: long (0xc0, 6 to 45 bytes of version and connection IDs) or short (0x40,
/// up to 20 bytes of connection ID), the packet number's `pn_len` low bytes last.
fn header(rng: &mut Rng, long: bool, pn: u64, pn_len: usize) -> Vec<u8> {
    let form = if long { 0xc0 } else { 0x40 };
    let protected_bits = rng.bytes(1)[0] & 0x3c;
    let mut h = vec![form | protected_bits | (pn_len as u8 - 1)];
    let middle = if long {
        6 + rng.below(40)
    } else {
        rng.below(21)
    };
    h.extend(rng.bytes(middle));
    h.extend_from_slice(&pn.to_be_bytes()[8 - pn_len..]);
    h
}

/// Header protection on `packet` (header || payload || tag) whose packet number starts
/// at `pn_offset`: the sample is the 16 bytes 4 after it, and the packet-number slice 4
/// bytes long whatever the encoded length, as quinn passes them.
fn mask(
    keys: &DirectionalKeys,
    packet: &mut [u8],
    pn_offset: usize,
    protect: bool,
) -> Result<(), Error> {
    let (head, sample) = packet.split_at_mut(pn_offset + 4);
    let (first, rest) = head.split_at_mut(1);
    let pn = &mut rest[pn_offset - 1..];
    let sample = &sample[..keys.header.sample_len()];
    if protect {
        keys.header.encrypt_in_place(sample, &mut first[0], pn)
    } else {
        keys.header.decrypt_in_place(sample, &mut first[0], pn)
    }
}

/// One packet each way over a connection: `tx` (secret keys) seals and masks, and must
/// send what `twin_tx` (public keys) sends; `rx` (secret keys) unmasks and opens it,
/// and must refuse it with a tag bit flipped. Returns the operations checked.
#[allow(clippy::too_many_arguments)]
fn packet(
    tx: &DirectionalKeys,
    twin_tx: &DirectionalKeys,
    rx: &DirectionalKeys,
    path: Option<u32>,
    long: bool,
    pn_len: usize,
    len: usize,
    rng: &mut Rng,
) -> usize {
    let pn = u64::from_le_bytes(rng.bytes(8).try_into().expect("8")) >> 2;
    let hdr = header(rng, long, pn, pn_len);
    let pn_offset = hdr.len() - pn_len;
    let payload = rng.bytes(len);
    let seal = |keys: &DirectionalKeys, secret_input: bool| -> Vec<u8> {
        let mut packet = [&hdr[..], &payload, &[0u8; 16]].concat();
        // The packet number as a value: poisoned too on the secret side.
        let mut pn_bytes = pn.to_le_bytes();
        if secret_input {
            secret(&mut packet[..hdr.len() + len]);
            secret(&mut pn_bytes);
        }
        let pn = u64::from_le_bytes(black_box(pn_bytes));
        let (h, rest) = packet.split_at_mut(hdr.len());
        let (body, tag_out) = rest.split_at_mut(len);
        let tag = match path {
            None => keys.packet.encrypt_in_place(pn, h, body),
            Some(id) => keys.packet.encrypt_in_place_for_path(id, pn, h, body),
        }
        .expect("seal");
        tag_out.copy_from_slice(tag.as_ref());
        if secret_input {
            expect_secret(body, "QUIC seal: payload");
            expect_secret(tag_out, "QUIC seal: tag");
        }
        mask(keys, &mut packet, pn_offset, true).expect("mask");
        if secret_input {
            expect_secret(&packet[..1], "QUIC header protection: first byte");
            expect_secret(
                &packet[pn_offset..pn_offset + pn_len],
                "QUIC header protection: packet number",
            );
        }
        // On the wire.
        public(&packet);
        packet
    };
    let want = seal(twin_tx, false);
    let sent = seal(tx, true);
    expect(
        sent == want,
        "QUIC: the secret key's packet is the public key's",
    );

    let mut ops = 1;
    for flip in [false, true] {
        let mut packet = sent.clone();
        if flip {
            let n = packet.len();
            packet[n - 1 - rng.below(16)] ^= 1 << rng.below(8);
        }
        secret(&mut packet);
        mask(rx, &mut packet, pn_offset, false).expect("unmask");
        expect_secret(&packet[..1], "QUIC header unprotection: first byte");
        expect_secret(
            &packet[pn_offset..pn_offset + 4],
            "QUIC header unprotection: packet number",
        );
        // Public from here, as the receiver must use them (see the module docs); the
        // rest of the header was never hidden.
        public(&packet[..pn_offset + pn_len]);
        // A flipped bit in the sample (short payloads: it reaches into the tag) unmasks
        // to another header, and the packet is refused below.
        let sample_hit = pn_offset + 4 + 16 > packet.len() - 16;
        if !flip || !sample_hit {
            let pn_got = packet[pn_offset..pn_offset + pn_len]
                .iter()
                .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
            expect(
                packet[..pn_offset + pn_len] == hdr[..]
                    && pn_got == pn & ((1u64 << (8 * pn_len)) - 1),
                "QUIC header unprotection",
            );
        }
        // The full packet number (a receiver recovers it from the truncated one).
        let (h, body) = packet.split_at_mut(pn_offset + pn_len);
        let ciphertext = body.to_vec();
        let r = match path {
            None => rx.packet.decrypt_in_place(pn, h, body),
            Some(id) => rx.packet.decrypt_in_place_for_path(id, pn, h, body),
        };
        match r {
            Ok(plain) => {
                expect(!flip, "QUIC open accepts only the sent packet");
                expect_secret(plain, "QUIC open: payload");
                public(plain);
                expect(plain == &payload[..], "QUIC open");
            }
            Err(_) => {
                expect(flip, "QUIC open refuses only a tampered packet");
                public(body);
                public(&ciphertext);
                expect(
                    body[..] == ciphertext[..],
                    "QUIC open: the ciphertext is left",
                );
            }
        }
        ops += 2;
    }
    ops
}

/// The keys alone carry the secret: with every input public, the sealed payload, the
/// tag and the header-protection mask must still come out poisoned (else the shadow was
/// lost between the stand-in HKDF and this module, and the checks above proved less).
fn key_taint(keys: &DirectionalKeys) -> usize {
    let header = [0x41u8, 0, 0, 0, 7];
    let mut payload = [0x5au8; 32];
    let tag = keys
        .packet
        .encrypt_in_place(7, &header, &mut payload)
        .expect("seal");
    expect_secret(&payload, "QUIC key taint: payload");
    expect_secret(tag.as_ref(), "QUIC key taint: tag");
    let (mut first, mut pn) = (0x41u8, [0u8, 0, 0, 7]);
    keys.header
        .encrypt_in_place(&[0x33; 16], &mut first, &mut pn)
        .expect("mask");
    expect_secret(&[first], "QUIC key taint: first byte");
    expect_secret(&pn[..1], "QUIC key taint: packet number");
    2
}

/// Bad input with secret keys: errors that change nothing (lengths are public).
fn bad_input(keys: &DirectionalKeys) -> usize {
    let mut first = [0xc3u8];
    let mut pn = [1u8, 2, 3, 4, 5];
    secret(&mut first);
    let short_sample = [0u8; 15];
    let r = keys
        .header
        .encrypt_in_place(&short_sample, &mut first[0], &mut pn[..4]);
    let r2 = keys
        .header
        .decrypt_in_place(&[0u8; 16], &mut first[0], &mut pn);
    let mut short = [0u8; 15];
    let r3 = keys.packet.decrypt_in_place(7, &[0x40], &mut short);
    public(&first);
    expect(
        r.is_err() && r2.is_err() && r3.is_err() && first == [0xc3] && pn == [1, 2, 3, 4, 5],
        "QUIC bad input: errors that change nothing",
    );
    3
}

/// AES-128 and AES-256 QUIC protection on the back end detection picks under the
/// current profile (`detected`): one group.
pub fn run(ledger: &mut Ledger, detected: Backend, seed: u64) {
    ledger.group(
        Expect::Clean,
        "QUIC packet and header protection",
        detected.name(),
        || {
            let mut rng = Rng::new(seed ^ 0x9001);
            let mut ops = 0;
            for base in [TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384] {
                let secret_bytes: [u8; SECRET_LEN] = rng.bytes(SECRET_LEN).try_into().expect("32");
                let mut poisoned = secret_bytes;
                secret(&mut poisoned);
                let cid = rng.bytes(8);
                let (client, server) = keys(suite_with(base, poisoned), &cid);
                let (twin_client, _) = keys(suite_with(base, secret_bytes), &cid);
                for path in [None, Some(3)] {
                    for long in [true, false] {
                        for pn_len in 1..=4 {
                            for len in PAYLOAD_LENS {
                                ops += packet(
                                    &client.local,
                                    &twin_client.local,
                                    &server.remote,
                                    path,
                                    long,
                                    pn_len,
                                    black_box(len),
                                    &mut rng,
                                );
                            }
                        }
                    }
                }
                ops += key_taint(&client.local) + bad_input(&client.local);
            }
            let bit = Backend::ALL
                .iter()
                .position(|&b| b == detected)
                .expect("a back end");
            RAN_ON.fetch_or(1 << bit, Ordering::Relaxed);
            ops
        },
    );
}

/// The coverage line: QUIC ran on every back end detection picked under the profiles.
/// (Its `Algorithm` follows detection and cannot be pinned from outside; `GcmKey` and the
/// block cipher, on which it runs, are checked on every back end, forced.)
pub fn coverage_row(by_detection: &[Backend]) -> (&'static str, bool, bool) {
    let ran = RAN_ON.load(Ordering::Relaxed);
    let all = by_detection.iter().all(|b| {
        let bit = Backend::ALL
            .iter()
            .position(|x| x == b)
            .expect("a back end");
        ran & (1 << bit) != 0
    });
    (
        "QUIC packet and header protection, every detected back end",
        true,
        all,
    )
}

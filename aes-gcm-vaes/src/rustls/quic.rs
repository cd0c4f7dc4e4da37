//! QUIC packet and header protection (RFC 9001 §5) on this crate's AES: the
//! [`rustls::quic::Algorithm`] that the TLS 1.3 AES-GCM suites of [`super`] carry, so a
//! QUIC stack driven by rustls (quinn, for one) seals, opens and masks every packet here.
//!
//! - **Packet protection** (§5.3): AES-GCM on [`GcmKey`], in place with a detached tag.
//!   The nonce is the packet IV XOR the packet number, left-padded to 96 bits (XOR the
//!   path ID too, for multipath QUIC's `*_for_path` calls); the associated data is the
//!   unprotected header. Nothing is allocated per packet: the key is expanded once, when
//!   rustls asks for it, into the one `Box` its API returns.
//! - **Header protection** (§5.4): the mask is one AES block, AES-ECB(hp_key, sample),
//!   on this crate's AES block cipher ([`gcm_core::aes`]), keyed once in
//!   `header_protection_key`. It covers the 4 low bits of the first byte of a long header
//!   or the 5 low bits of a short one, and as many packet-number bytes as the packet
//!   number length in the *unprotected* first byte says (read before masking, after
//!   unmasking), whatever the length of the slice the caller passes. Which bytes are
//!   masked is chosen with arithmetic, not a branch, since the length is what header
//!   protection hides (§9.5).
//! - **Limits** (§6.6): 2^23 packets sealed per key, 2^52 forgeries per connection.
//!
//! Bad input (a sample that is not 16 bytes, a packet-number slice longer than 4
//! bytes, a payload shorter than the tag, a tag that does not authenticate) is an error
//! that changes nothing: the header bytes are left as they were, and a packet that
//! fails to open holds its ciphertext again. Errors carry the same variants and
//! messages as rustls's ring provider.
//!
//! The handshake, the key schedule and HKDF stay rustls's (ring's), so keys derived for a
//! QUIC connection are exactly those ring would get; only their use differs.
//!
//! quinn uses a connection's cipher suite for its packets, but always protects Initial
//! packets with `TLS_AES_128_GCM_SHA256` (RFC 9001 §5.2). rustls 0.23.48 and later refuse
//! a QUIC configuration whose provider lacks a QUIC-capable `TLS13_AES_128_GCM_SHA256`,
//! so a provider meant for AES-256 keeps AES-128 after it (both ends preferring AES-256,
//! it protects everything after the Initial packets). [`initial_suite`] is that suite on
//! this module, for quinn's `with_initial` (which older rustls also accepts with an
//! AES-256-only provider):
//!
//! ```
//! use std::sync::Arc;
//!
//! use aes_gcm_vaes::rustls::{
//!     provider, quic, TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384,
//! };
//!
//! let provider = rustls::crypto::CryptoProvider {
//!     cipher_suites: vec![TLS13_AES_256_GCM_SHA384, TLS13_AES_128_GCM_SHA256],
//!     ..provider()
//! };
//! let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
//!     .with_protocol_versions(&[&rustls::version::TLS13])
//!     .unwrap();
//! # let _ = config;
//! // quinn::crypto::rustls::QuicClientConfig::with_initial(Arc::new(config...), quic::initial_suite())
//! let initial = quic::initial_suite();
//! assert_eq!(initial.suite.common.suite, rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
//! assert!(core::ptr::addr_eq(initial.quic, quic::AES_128_GCM));
//! ```

extern crate alloc;

use alloc::boxed::Box;
use alloc::string::String;
use core::marker::PhantomData;

use aes::cipher::{Block, BlockCipherEncrypt, BlockSizeUser, Key, KeySizeUser, consts::U16};
use gcm_core::{Backend, GcmKey, TAG_LEN};
use rustls::Error;
use rustls::crypto::cipher::{AeadKey, Iv, Nonce};
use rustls::quic::{self as rq, Tag};

/// AES-128-GCM packet protection with AES-128 header protection, for
/// `TLS_AES_128_GCM_SHA256` (and for every Initial packet).
pub static AES_128_GCM: &dyn rq::Algorithm = &AES_128;

/// AES-256-GCM packet protection with AES-256 header protection, for
/// `TLS_AES_256_GCM_SHA384`.
pub static AES_256_GCM: &dyn rq::Algorithm = &AES_256;

pub(super) static AES_128: QuicAesGcm<gcm_core::aes::Aes128> = QuicAesGcm::new(None);
pub(super) static AES_256: QuicAesGcm<gcm_core::aes::Aes256> = QuicAesGcm::new(None);

/// The suite QUIC protects Initial packets with (RFC 9001 §5.2): this crate's
/// `TLS_AES_128_GCM_SHA256` with [`AES_128_GCM`], for quinn's
/// `QuicClientConfig::with_initial` / `QuicServerConfig::with_initial`. quinn also finds
/// it in a provider that offers it, as every provider must for QUIC from rustls 0.23.48
/// on; with older rustls, passing it here lets an AES-256-only provider run QUIC.
pub fn initial_suite() -> rq::Suite {
    rq::Suite {
        suite: &super::TLS13_AES_128_GCM_SHA256_SUITE,
        quic: AES_128_GCM,
    }
}

/// Packets one key may seal before AES-GCM's confidentiality margin for QUIC runs out
/// (RFC 9001 §6.6 and Appendix B.1: 2^23, for packets of up to 2^11 blocks).
pub const CONFIDENTIALITY_LIMIT: u64 = 1 << 23;

/// Packets that may fail authentication, across all keys of a connection, before it must
/// close (RFC 9001 §6.6 and Appendix B.2: 2^52).
pub const INTEGRITY_LIMIT: u64 = 1 << 52;

/// Length of the header-protection sample (RFC 9001 §5.4.3).
const SAMPLE_LEN: usize = 16;

/// Longest packet-number encoding (RFC 9000 §17.1): the mask's bytes 1 to 4.
const MAX_PN_LEN: usize = 4;

/// The header-protection cipher of one AES key size: this crate's block cipher, which
/// picks its back end when keyed, as the GCM key does.
pub(crate) trait HeaderCipher:
    BlockCipherEncrypt + BlockSizeUser<BlockSize = U16> + KeySizeUser + Send + Sync + 'static
{
    /// `None` if `key` is not `key_size()` bytes or `backend` cannot run here.
    fn keyed(key: &[u8], backend: Backend) -> Option<Self>;
}

macro_rules! header_cipher {
    ($($aes:ty),*) => {$(
        impl HeaderCipher for $aes {
            fn keyed(key: &[u8], backend: Backend) -> Option<Self> {
                let key = <&Key<Self>>::try_from(key).ok()?;
                Self::new_with_backend(key, backend).ok()
            }
        }
    )*};
}

header_cipher!(gcm_core::aes::Aes128, gcm_core::aes::Aes256);

/// [`rq::Algorithm`] for the AES key size of `C`. `backend: None` uses the best back end
/// for this CPU; the tests pin each one in turn.
pub(crate) struct QuicAesGcm<C> {
    backend: Option<Backend>,
    _cipher: PhantomData<fn() -> C>,
}

impl<C> QuicAesGcm<C> {
    pub(crate) const fn new(backend: Option<Backend>) -> Self {
        Self {
            backend,
            _cipher: PhantomData,
        }
    }

    fn backend(&self) -> Backend {
        self.backend.unwrap_or_else(Backend::detect)
    }
}

impl<C: HeaderCipher> rq::Algorithm for QuicAesGcm<C> {
    fn packet_key(&self, key: AeadKey, iv: Iv) -> Box<dyn rq::PacketKey> {
        // rustls cuts keys to `aead_key_len()`; anything else leaves a key that fails
        // every call rather than one of another AES size.
        let key = key.as_ref();
        let gcm = (key.len() == C::key_size())
            .then(|| GcmKey::new_with_backend(key, self.backend()).ok())
            .flatten();
        Box::new(PacketKey { gcm, iv })
    }

    fn header_protection_key(&self, key: AeadKey) -> Box<dyn rq::HeaderProtectionKey> {
        Box::new(HeaderProtectionKey {
            cipher: C::keyed(key.as_ref(), self.backend()),
        })
    }

    fn aead_key_len(&self) -> usize {
        C::key_size()
    }
}

/// One direction's packet protection: the GCM key and the packet IV.
struct PacketKey {
    /// `None` only if rustls handed over a key of the wrong length.
    gcm: Option<GcmKey>,
    iv: Iv,
}

impl PacketKey {
    fn seal(&self, nonce: Nonce, header: &[u8], payload: &mut [u8]) -> Result<Tag, Error> {
        let gcm = self.gcm.as_ref().ok_or(Error::EncryptError)?;
        // The only failure left is a payload over GCM's 2^36 - 32 bytes.
        let tag = gcm
            .seal_in_place(&nonce.0, header, payload)
            .map_err(|_| Error::EncryptError)?;
        Ok(Tag::from(&tag[..]))
    }

    fn open<'a>(
        &self,
        nonce: Nonce,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> Result<&'a [u8], Error> {
        let gcm = self.gcm.as_ref().ok_or(Error::DecryptError)?;
        let body_len = payload
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(Error::DecryptError)?;
        let (body, tag) = payload.split_at_mut(body_len);
        // On failure GcmKey puts the ciphertext back: no unauthenticated plaintext stays.
        gcm.open_in_place(&nonce.0, header, body, tag)
            .map_err(|_| Error::DecryptError)?;
        Ok(body)
    }
}

impl rq::PacketKey for PacketKey {
    fn encrypt_in_place(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
    ) -> Result<Tag, Error> {
        self.seal(Nonce::new(&self.iv, packet_number), header, payload)
    }

    fn encrypt_in_place_for_path(
        &self,
        path_id: u32,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
    ) -> Result<Tag, Error> {
        let nonce = Nonce::for_path(path_id, &self.iv, packet_number);
        self.seal(nonce, header, payload)
    }

    fn decrypt_in_place<'a>(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> Result<&'a [u8], Error> {
        self.open(Nonce::new(&self.iv, packet_number), header, payload)
    }

    fn decrypt_in_place_for_path<'a>(
        &self,
        path_id: u32,
        packet_number: u64,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> Result<&'a [u8], Error> {
        let nonce = Nonce::for_path(path_id, &self.iv, packet_number);
        self.open(nonce, header, payload)
    }

    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn confidentiality_limit(&self) -> u64 {
        CONFIDENTIALITY_LIMIT
    }

    fn integrity_limit(&self) -> u64 {
        INTEGRITY_LIMIT
    }
}

/// Header protection for the lifetime of a connection (key updates keep it).
struct HeaderProtectionKey<C> {
    /// `None` only if rustls handed over a key of the wrong length.
    cipher: Option<C>,
}

/// Adding protection reads the packet number length from the first byte before it is
/// masked; removing it, after it is unmasked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Protect,
    Unprotect,
}

impl<C: HeaderCipher> HeaderProtectionKey<C> {
    /// RFC 9001 §5.4.1, with every check made before anything is written.
    fn apply(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
        direction: Direction,
    ) -> Result<(), Error> {
        // Borrowed as a whole array and copied in one piece: a byte-wise copy would be
        // stored in parts and then loaded as one vector, which stalls store forwarding.
        let Ok(sample) = <&[u8; SAMPLE_LEN]>::try_from(sample) else {
            return Err(Error::General(String::from("sample of invalid length")));
        };
        if packet_number.len() > MAX_PN_LEN {
            return Err(Error::General(String::from("packet number too long")));
        }
        let Some(cipher) = &self.cipher else {
            return Err(match direction {
                Direction::Protect => Error::EncryptError,
                Direction::Unprotect => Error::DecryptError,
            });
        };
        let mut block = Block::<C>::from(*sample);
        cipher.encrypt_block(&mut block);
        let mask: [u8; SAMPLE_LEN] = block.into();

        // The header form bit (0x80) is never protected: 4 low bits for a long header,
        // 5 for a short one.
        let long_header = *first >> 7;
        let first_bits = 0x1f ^ (long_header.wrapping_neg() & 0x10);
        let first_mask = mask[0] & first_bits;
        let unprotected_first = match direction {
            Direction::Protect => *first,
            Direction::Unprotect => *first ^ first_mask,
        };
        let pn_len = (unprotected_first & 0x03) + 1;
        *first ^= first_mask;
        for (i, (byte, m)) in packet_number.iter_mut().zip(&mask[1..]).enumerate() {
            // 0xff where i < pn_len, else 0: i - pn_len is negative (top bit set) exactly
            // then, i and pn_len both being at most 4.
            let keep = ((i as u8).wrapping_sub(pn_len) >> 7).wrapping_neg();
            *byte ^= m & keep;
        }
        Ok(())
    }
}

impl<C: HeaderCipher> rq::HeaderProtectionKey for HeaderProtectionKey<C> {
    fn encrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> Result<(), Error> {
        self.apply(sample, first, packet_number, Direction::Protect)
    }

    fn decrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> Result<(), Error> {
        self.apply(sample, first, packet_number, Direction::Unprotect)
    }

    fn sample_len(&self) -> usize {
        SAMPLE_LEN
    }
}

#[cfg(test)]
mod tests {
    //! Every back end this CPU has, through rustls's own key derivation
    //! (`rustls::quic::Keys::initial`, which takes any `Algorithm`): the RFC sample
    //! packets, and randomised agreement with rustls's ring QUIC algorithm.

    extern crate std;

    use std::vec::Vec;

    use rustls::Side;
    use rustls::crypto::ring::cipher_suite as ring_suites;
    use rustls::quic::{DirectionalKeys, Keys, Version};

    use super::*;
    use crate::rustls::{TLS13_AES_128_GCM_SHA256_SUITE, TLS13_AES_256_GCM_SHA384_SUITE};
    use rustls::Tls13CipherSuite;

    #[allow(dead_code)] // the intermediate values are checked by tests/quic_packets.rs
    mod vectors {
        extern crate std;
        use hex_literal::hex;
        use std::vec::Vec;
        include!("../../tests/data/quic_initial_vectors.rs");
    }

    type Aes128 = gcm_core::aes::Aes128;
    type Aes256 = gcm_core::aes::Aes256;

    /// Our algorithm pinned to each back end, in `Backend::ALL` order.
    static PINNED_128: [QuicAesGcm<Aes128>; 4] = [
        QuicAesGcm::new(Some(Backend::ALL[0])),
        QuicAesGcm::new(Some(Backend::ALL[1])),
        QuicAesGcm::new(Some(Backend::ALL[2])),
        QuicAesGcm::new(Some(Backend::ALL[3])),
    ];
    static PINNED_256: [QuicAesGcm<Aes256>; 4] = [
        QuicAesGcm::new(Some(Backend::ALL[0])),
        QuicAesGcm::new(Some(Backend::ALL[1])),
        QuicAesGcm::new(Some(Backend::ALL[2])),
        QuicAesGcm::new(Some(Backend::ALL[3])),
    ];

    fn pinned(aes256: bool, backend: Backend) -> &'static dyn rq::Algorithm {
        let i = Backend::ALL.iter().position(|&b| b == backend).unwrap();
        if aes256 {
            &PINNED_256[i]
        } else {
            &PINNED_128[i]
        }
    }

    fn ring_suite(aes256: bool) -> &'static Tls13CipherSuite {
        let s = if aes256 {
            ring_suites::TLS13_AES_256_GCM_SHA384
        } else {
            ring_suites::TLS13_AES_128_GCM_SHA256
        };
        s.tls13().unwrap()
    }

    fn our_suite(aes256: bool) -> &'static Tls13CipherSuite {
        if aes256 {
            &TLS13_AES_256_GCM_SHA384_SUITE
        } else {
            &TLS13_AES_128_GCM_SHA256_SUITE
        }
    }

    /// Initial keys for `side` from rustls's ring QUIC algorithm.
    fn ring_keys(aes256: bool, version: Version, cid: &[u8], side: Side) -> Keys {
        let suite = ring_suite(aes256);
        Keys::initial(version, suite, suite.quic.unwrap(), cid, side)
    }

    /// The same keys from this module, on `backend`.
    fn our_keys(aes256: bool, backend: Backend, version: Version, cid: &[u8], side: Side) -> Keys {
        Keys::initial(
            version,
            our_suite(aes256),
            pinned(aes256, backend),
            cid,
            side,
        )
    }

    /// Deterministic xorshift64*, so a failure replays.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }

        /// Between `min` and `min + spread - 1` random bytes.
        fn some_bytes(&mut self, min: usize, spread: usize) -> Vec<u8> {
            let n = min + self.below(spread);
            self.bytes(n)
        }
    }

    #[test]
    fn provider_suites_carry_this_module_not_ring() {
        for (aes256, ours) in [(false, AES_128_GCM), (true, AES_256_GCM)] {
            let quic = our_suite(aes256).quic.unwrap();
            // Addresses only: a vtable may be duplicated across codegen units.
            assert!(core::ptr::addr_eq(quic, ours));
            let ring = ring_suite(aes256).quic.unwrap();
            assert!(!core::ptr::addr_eq(quic, ring));
            assert_eq!(quic.aead_key_len(), ring.aead_key_len());
            assert_eq!(quic.aead_key_len(), if aes256 { 32 } else { 16 });
            assert!(!quic.fips());
        }
        // And the provider hands out those suites.
        let provider = crate::rustls::provider();
        for s in &provider.cipher_suites {
            if let Some(s13) = s.tls13()
                && matches!(
                    s.suite(),
                    rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
                        | rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
                )
            {
                let aes256 = s.suite() == rustls::CipherSuite::TLS13_AES_256_GCM_SHA384;
                assert!(core::ptr::eq(s13, our_suite(aes256)));
            }
        }
        let initial = initial_suite();
        assert!(core::ptr::eq(initial.suite, our_suite(false)));
    }

    /// Seals `payload` under `header` and masks the header, the way quinn does: the
    /// packet-number slice is 4 bytes long whatever the encoded length.
    fn protect(keys: &DirectionalKeys, pn: u64, header: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut packet = [header, payload, &[0u8; TAG_LEN]].concat();
        let (h, rest) = packet.split_at_mut(header.len());
        let (body, tag) = rest.split_at_mut(payload.len());
        let t = keys.packet.encrypt_in_place(pn, h, body).unwrap();
        tag.copy_from_slice(t.as_ref());
        let pn_len = usize::from(header[0] & 3) + 1;
        let pn_offset = header.len() - pn_len;
        mask_at(keys.header.as_ref(), &mut packet, pn_offset, true).unwrap();
        packet
    }

    /// Applies (or removes) header protection at `pn_offset`, sample 4 bytes after it.
    fn mask_at(
        hp: &dyn rq::HeaderProtectionKey,
        packet: &mut [u8],
        pn_offset: usize,
        protect: bool,
    ) -> Result<(), Error> {
        let (header, sample) = packet.split_at_mut(pn_offset + 4);
        let (first, rest) = header.split_at_mut(1);
        let pn = &mut rest[pn_offset - 1..];
        let sample = &sample[..hp.sample_len()];
        if protect {
            hp.encrypt_in_place(sample, &mut first[0], pn)
        } else {
            hp.decrypt_in_place(sample, &mut first[0], pn)
        }
    }

    /// Removes header protection and opens; returns (header, payload).
    fn unprotect(
        keys: &DirectionalKeys,
        pn: u64,
        mut packet: Vec<u8>,
        pn_offset: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), Error> {
        mask_at(keys.header.as_ref(), &mut packet, pn_offset, false)?;
        let pn_len = usize::from(packet[0] & 3) + 1;
        let (header, payload) = packet.split_at_mut(pn_offset + pn_len);
        let plain = keys.packet.decrypt_in_place(pn, header, payload)?.to_vec();
        Ok((header.to_vec(), plain))
    }

    #[test]
    fn rfc_sample_initial_packets_on_every_backend() {
        for backend in Backend::available() {
            for (v, version) in [
                (&vectors::RFC9001, Version::V1),
                (&vectors::RFC9369, Version::V2),
            ] {
                let client = our_keys(false, backend, version, &v.dcid, Side::Client);
                let server = our_keys(false, backend, version, &v.dcid, Side::Server);
                for (p, tx, rx) in [
                    (&v.client, &client.local, &server.remote),
                    (&v.server, &server.local, &client.remote),
                ] {
                    let what = std::format!("{} {backend}", v.rfc);
                    let packet = protect(tx, p.packet_number, p.header, &p.payload());
                    assert_eq!(packet, p.packet, "{what}");
                    let pn_offset = p.header.len() - (usize::from(p.header[0] & 3) + 1);
                    let (header, payload) =
                        unprotect(rx, p.packet_number, packet, pn_offset).unwrap();
                    assert_eq!(header, p.header, "{what}");
                    assert_eq!(payload, p.payload(), "{what}");
                }
            }
        }
    }

    /// A random packet header: long or short form, `pn_len` bytes of packet number at
    /// the end, the packet-number length in the first byte, random protected bits.
    fn random_header(rng: &mut Rng, long: bool, pn: u64, pn_len: usize) -> Vec<u8> {
        let first = if long {
            0xc0 | (rng.next() as u8 & 0x3c)
        } else {
            0x40 | (rng.next() as u8 & 0x3c)
        };
        let body = if long {
            6 + rng.below(40)
        } else {
            rng.below(21)
        };
        let mut header = Vec::from([first | (pn_len as u8 - 1)]);
        header.extend(rng.bytes(body));
        header.extend_from_slice(&pn.to_be_bytes()[8 - pn_len..]);
        header
    }

    #[test]
    fn agrees_with_ring_on_random_packets_and_rejects_tampering() {
        let mut rng = Rng(0x5eed_0f90_0100);
        for backend in Backend::available() {
            for aes256 in [false, true] {
                for trial in 0..24 {
                    let cid = rng.some_bytes(0, 21);
                    let version = [Version::V1, Version::V2][trial % 2];
                    let side = [Side::Client, Side::Server][(trial / 2) % 2];
                    let peer = [Side::Server, Side::Client][(trial / 2) % 2];
                    let ring = ring_keys(aes256, version, &cid, side);
                    let ring_peer = ring_keys(aes256, version, &cid, peer);
                    let ours = our_keys(aes256, backend, version, &cid, side);
                    let ours_peer = our_keys(aes256, backend, version, &cid, peer);
                    for pn_len in 1..=4 {
                        for long in [false, true] {
                            let pn = rng.next() >> 2;
                            let header = random_header(&mut rng, long, pn, pn_len);
                            // At least enough payload for the sample (RFC 9001 §5.4.2).
                            let payload = rng.some_bytes(4 - pn_len, 1400);
                            let len = payload.len();
                            let what = std::format!(
                                "{backend} aes256={aes256} pn_len={pn_len} long={long} len={len}"
                            );
                            let theirs = protect(&ring.local, pn, &header, &payload);
                            let mine = protect(&ours.local, pn, &header, &payload);
                            assert_eq!(mine, theirs, "{what}");
                            let pn_offset = header.len() - pn_len;
                            let opened =
                                unprotect(&ours_peer.remote, pn, theirs.clone(), pn_offset);
                            assert_eq!(opened.unwrap(), (header.clone(), payload), "{what}");

                            // Any one bit flipped anywhere: both refuse it.
                            let mut bad = theirs;
                            let bit = rng.below(bad.len() * 8);
                            bad[bit / 8] ^= 1 << (bit % 8);
                            let mine = unprotect(&ours_peer.remote, pn, bad.clone(), pn_offset);
                            let ring = unprotect(&ring_peer.remote, pn, bad, pn_offset);
                            assert!(mine.is_err() && ring.is_err(), "{what} bit {bit}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn per_path_nonces_agree_with_ring() {
        let mut rng = Rng(0x0000_a7b5_11de);
        for backend in Backend::available() {
            for aes256 in [false, true] {
                let cid = rng.bytes(8);
                let ring = ring_keys(aes256, Version::V1, &cid, Side::Client);
                let ours = our_keys(aes256, backend, Version::V1, &cid, Side::Client);
                let ours_rx = our_keys(aes256, backend, Version::V1, &cid, Side::Server);
                for _ in 0..16 {
                    let (path, pn) = (rng.next() as u32, rng.next() >> 2);
                    let header = rng.some_bytes(1, 30);
                    let payload = rng.some_bytes(0, 1500);
                    let seal = |k: &DirectionalKeys| {
                        let mut body = payload.clone();
                        let tag = k
                            .packet
                            .encrypt_in_place_for_path(path, pn, &header, &mut body)
                            .unwrap();
                        body.extend_from_slice(tag.as_ref());
                        body
                    };
                    let mut sealed = seal(&ours.local);
                    assert_eq!(sealed, seal(&ring.local), "{backend} aes256={aes256}");
                    // Same packet number, another path: another nonce.
                    let other_path = path ^ 1;
                    let mut copy = sealed.clone();
                    let r = ours_rx
                        .remote
                        .packet
                        .decrypt_in_place_for_path(other_path, pn, &header, &mut copy);
                    assert!(matches!(r, Err(Error::DecryptError)));
                    assert_eq!(copy, sealed, "a failed open leaves the ciphertext");
                    let plain = ours_rx
                        .remote
                        .packet
                        .decrypt_in_place_for_path(path, pn, &header, &mut sealed)
                        .unwrap();
                    assert_eq!(plain, &payload[..]);
                }
            }
        }
    }

    #[test]
    fn header_mask_covers_what_the_first_byte_says_whatever_the_slice() {
        let mut rng = Rng(0x0bad_5eed);
        for backend in Backend::available() {
            for aes256 in [false, true] {
                let cid = rng.bytes(8);
                let ring = ring_keys(aes256, Version::V1, &cid, Side::Server);
                let ours = our_keys(aes256, backend, Version::V1, &cid, Side::Server);
                let (theirs, mine) = (ring.local.header.as_ref(), ours.local.header.as_ref());
                assert_eq!(mine.sample_len(), 16);
                for first in 0..=255u8 {
                    let sample = rng.bytes(16);
                    let pn = rng.bytes(4);
                    for slice_len in 0..=4 {
                        for protect in [true, false] {
                            let run = |hp: &dyn rq::HeaderProtectionKey| {
                                let (mut f, mut p) = (first, pn.clone());
                                let r = if protect {
                                    hp.encrypt_in_place(&sample, &mut f, &mut p[..slice_len])
                                } else {
                                    hp.decrypt_in_place(&sample, &mut f, &mut p[..slice_len])
                                };
                                r.unwrap();
                                (f, p)
                            };
                            let (f, p) = run(mine);
                            assert_eq!((f, p.clone()), run(theirs), "{backend} first={first:#x}");
                            // The header form bit and, for long headers, the 3 bits after
                            // it are never touched; nor is any byte past the encoded length.
                            let kept = if first & 0x80 != 0 { 0xf0 } else { 0xe0 };
                            assert_eq!(f & kept, first & kept);
                            let plain_first = if protect { first } else { f };
                            let pn_len = usize::from(plain_first & 3) + 1;
                            assert_eq!(p[pn_len.min(slice_len)..], pn[pn_len.min(slice_len)..]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_header_input_is_an_error_that_changes_nothing() {
        for backend in Backend::available() {
            let keys = our_keys(true, backend, Version::V1, &[1; 8], Side::Client);
            let hp = keys.local.header.as_ref();
            for sample_len in [0usize, 1, 15, 17, 32] {
                let sample = std::vec![7u8; sample_len];
                let (mut first, mut pn) = (0xc3u8, [1u8, 2, 3, 4]);
                let r = hp.encrypt_in_place(&sample, &mut first, &mut pn);
                assert!(matches!(r, Err(Error::General(_))), "{r:?}");
                let r = hp.decrypt_in_place(&sample, &mut first, &mut pn);
                assert!(matches!(r, Err(Error::General(_))), "{r:?}");
                assert_eq!((first, pn), (0xc3, [1, 2, 3, 4]));
            }
            let (mut first, mut pn) = (0x43u8, [9u8; 5]);
            for r in [
                hp.encrypt_in_place(&[0; 16], &mut first, &mut pn),
                hp.decrypt_in_place(&[0; 16], &mut first, &mut pn),
            ] {
                assert!(matches!(r, Err(Error::General(_))), "{r:?}");
            }
            assert_eq!((first, pn), (0x43, [9; 5]));
        }
    }

    #[test]
    fn wrong_length_keys_fail_every_call_without_panicking() {
        // rustls never does this (it cuts keys to `aead_key_len()`), but it must not panic.
        let alg: &dyn rq::Algorithm = &AES_128;
        let packet = alg.packet_key(AeadKey::from([3u8; 32]), Iv::from([4u8; 12]));
        let mut payload = [5u8; 40];
        assert!(matches!(
            packet.encrypt_in_place(1, b"h", &mut payload),
            Err(Error::EncryptError)
        ));
        assert!(matches!(
            packet.decrypt_in_place(1, b"h", &mut payload),
            Err(Error::DecryptError)
        ));
        assert_eq!(payload, [5u8; 40]);
        let hp = alg.header_protection_key(AeadKey::from([3u8; 32]));
        let (mut first, mut pn) = (0xc0u8, [0u8; 4]);
        assert!(hp.encrypt_in_place(&[0; 16], &mut first, &mut pn).is_err());
        assert!(hp.decrypt_in_place(&[0; 16], &mut first, &mut pn).is_err());
        assert_eq!((first, pn), (0xc0, [0; 4]));
    }

    #[test]
    fn limits_and_lengths() {
        for aes256 in [false, true] {
            let suite = our_suite(aes256);
            let keys = Keys::initial(
                Version::V1,
                suite,
                suite.quic.unwrap(),
                &[0; 8],
                Side::Client,
            );
            let ring = ring_keys(aes256, Version::V1, &[0; 8], Side::Client);
            let (p, r) = (&keys.local.packet, &ring.local.packet);
            assert_eq!(p.confidentiality_limit(), 1 << 23);
            assert_eq!(p.integrity_limit(), 1 << 52);
            assert_eq!(p.tag_len(), 16);
            assert_eq!(p.confidentiality_limit(), r.confidentiality_limit());
            assert_eq!(p.integrity_limit(), r.integrity_limit());
            assert_eq!(
                keys.local.header.sample_len(),
                ring.local.header.sample_len()
            );
        }
    }
}

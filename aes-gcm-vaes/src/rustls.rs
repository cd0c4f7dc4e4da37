//! rustls 0.23 integration: AES-GCM cipher suites whose record protection runs on this
//! crate, and a [`CryptoProvider`] built around them.
//!
//! Only the AEAD is ours. Key exchange, signatures, the transcript hash, HKDF (TLS 1.3)
//! and the PRF (TLS 1.2) are taken from rustls's *ring* provider by lifting the pieces
//! out of ring's own suite statics, so the handshake is exactly ring's. The TLS 1.3
//! suites also carry QUIC packet and header protection on this crate's AES (the
//! [`quic`] module), which rustls hands to QUIC stacks such as quinn.
//!
//! Records are sealed and opened where rustls keeps them: the encrypter writes into
//! the [`PrefixedPayload`] rustls sizes for it (capacity covers the tag, so it never
//! grows), and the decrypter opens in the [`BorrowedPayload`] of the received record
//! and returns a sub-slice of it. No allocation is made per record beyond the
//! payload buffer that rustls's own API requires of every encrypter. The feature turns
//! on `zeroize`, so a connection's expanded keys are wiped when it lets go of them.
//!
//! ```
//! use std::sync::Arc;
//!
//! use aes_gcm_vaes::rustls::{provider, AES_GCM_CIPHER_SUITES};
//!
//! // A drop-in for `rustls::crypto::ring::default_provider()`:
//! let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider()))
//!     .with_safe_default_protocol_versions()
//!     .unwrap();
//! # let _ = config;
//!
//! // Or only the AES-GCM suites, e.g. for kernel TLS (`enable_secret_extraction`, then
//! // `dangerous_extract_secrets()` yields `ConnectionTrafficSecrets::Aes{128,256}Gcm`).
//! let aes_only = rustls::crypto::CryptoProvider {
//!     cipher_suites: AES_GCM_CIPHER_SUITES.to_vec(),
//!     ..provider()
//! };
//! assert_eq!(aes_only.cipher_suites.len(), 6);
//! ```

extern crate alloc;

pub mod quic;

use alloc::boxed::Box;
use core::marker::PhantomData;
use core::ops::Range;

use aead::array::Array;
use aead::consts::{U12, U16};
use aead::inout::InOutBuf;
use aead::{AeadInOut, KeyInit};
use rustls::crypto::CryptoProvider;
use rustls::crypto::cipher::{
    AeadKey, BorrowedPayload, InboundOpaqueMessage, InboundPlainMessage, Iv, KeyBlockShape,
    MessageDecrypter, MessageEncrypter, Nonce, OutboundOpaqueMessage, OutboundPlainMessage,
    PrefixedPayload, Tls12AeadAlgorithm, Tls13AeadAlgorithm, UnsupportedOperationError,
    make_tls12_aad, make_tls13_aad,
};
use rustls::crypto::ring as ring_provider;
use rustls::{
    CipherSuite, CipherSuiteCommon, ConnectionTrafficSecrets, ContentType, Error, ProtocolVersion,
    SupportedCipherSuite, Tls12CipherSuite, Tls13CipherSuite,
};

// The AEAD behind the suites; only the `aead` traits are used, so any `AesGcm` fits.
type Aes128 = crate::Aes128Gcm;
type Aes256 = crate::Aes256Gcm;

const TAG_LEN: usize = 16;
/// TLS 1.2 GCM records carry the low 8 bytes of the nonce in front of the ciphertext
/// (RFC 5288 §3); the other 4 come from the key block.
const EXPLICIT_NONCE_LEN: usize = 8;
const TLS12_OVERHEAD: usize = EXPLICIT_NONCE_LEN + TAG_LEN;
/// Largest plaintext fragment a peer may send (RFC 8446 §5.1, RFC 5246 §6.2.1).
const MAX_FRAGMENT_LEN: usize = 1 << 14;
/// Records per key before AES-GCM's confidentiality margin runs out (RFC 8446 §5.5);
/// the same figure rustls's own providers use, so key updates happen at the same point.
const AES_GCM_CONFIDENTIALITY_LIMIT: u64 = 1 << 24;

/// An AES-GCM instance the record layer can drive: 96-bit nonces, 128-bit tags, and the
/// `ConnectionTrafficSecrets` variant a kernel-TLS user needs to recognise its keys.
trait RecordAead: KeyInit + AeadInOut<NonceSize = U12, TagSize = U16> + Send + Sync + 'static {
    fn traffic_secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets;
}

impl RecordAead for Aes128 {
    fn traffic_secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv }
    }
}

impl RecordAead for Aes256 {
    fn traffic_secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        ConnectionTrafficSecrets::Aes256Gcm { key, iv }
    }
}

/// Builds the cipher, or `None` if rustls hands over a key of the wrong length (it
/// never should: it cuts keys to `key_len()`); the record layer then fails cleanly
/// instead of panicking.
fn new_cipher<A: RecordAead>(key: &AeadKey) -> Option<A> {
    A::new_from_slice(key.as_ref()).ok()
}

/// Seals `buf` in place and returns the detached tag.
fn seal<A: RecordAead>(
    cipher: &A,
    nonce: Nonce,
    aad: &[u8],
    buf: &mut [u8],
) -> Result<[u8; TAG_LEN], Error> {
    let tag = cipher
        .encrypt_inout_detached(&Array::from(nonce.0), aad, InOutBuf::from(buf))
        .map_err(|_| Error::EncryptError)?;
    Ok(tag.into())
}

/// Opens `ciphertext || tag` in place; on success the plaintext occupies the first
/// `len - TAG_LEN` bytes of `buf`, whose length is returned.
fn open<A: RecordAead>(
    cipher: &A,
    nonce: Nonce,
    aad: &[u8],
    buf: &mut [u8],
) -> Result<usize, Error> {
    let Some(body_len) = buf.len().checked_sub(TAG_LEN) else {
        return Err(Error::DecryptError);
    };
    let (body, tag) = buf.split_at_mut(body_len);
    let tag = Array::try_from(&*tag).map_err(|_| Error::DecryptError)?;
    cipher
        .decrypt_inout_detached(&Array::from(nonce.0), aad, InOutBuf::from(body), &tag)
        .map_err(|_| Error::DecryptError)?;
    Ok(body_len)
}

// ---------------------------------------------------------------------------------------
// TLS 1.3

/// `Tls13AeadAlgorithm` for one AES key size. Zero-sized, so the suites can be statics.
struct Tls13Gcm<A>(PhantomData<fn() -> A>);

impl<A: RecordAead> Tls13AeadAlgorithm for Tls13Gcm<A> {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        Box::new(Tls13Encrypter {
            cipher: new_cipher::<A>(&key),
            iv,
        })
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        Box::new(Tls13Decrypter {
            cipher: new_cipher::<A>(&key),
            iv,
        })
    }

    fn key_len(&self) -> usize {
        A::key_size()
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: Iv,
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        Ok(A::traffic_secrets(key, iv))
    }
}

struct Tls13Encrypter<A> {
    cipher: Option<A>,
    iv: Iv,
}

struct Tls13Decrypter<A> {
    cipher: Option<A>,
    iv: Iv,
}

impl<A: RecordAead> MessageEncrypter for Tls13Encrypter<A> {
    fn encrypt(
        &mut self,
        msg: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        let cipher = self.cipher.as_ref().ok_or(Error::EncryptError)?;
        let total_len = self.encrypted_payload_len(msg.payload.len());
        // TLSInnerPlaintext = content || real content type (no padding), then the tag.
        let mut payload = PrefixedPayload::with_capacity(total_len);
        payload.extend_from_chunks(&msg.payload);
        payload.extend_from_slice(&msg.typ.to_array());
        let tag = seal(
            cipher,
            Nonce::new(&self.iv, seq),
            &make_tls13_aad(total_len),
            payload.as_mut(),
        )?;
        payload.extend_from_slice(&tag);
        // Every protected TLS 1.3 record claims to be TLS 1.2 application data (RFC 8446 §5.2).
        Ok(OutboundOpaqueMessage::new(
            ContentType::ApplicationData,
            ProtocolVersion::TLSv1_2,
            payload,
        ))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + 1 + TAG_LEN
    }
}

impl<A: RecordAead> MessageDecrypter for Tls13Decrypter<A> {
    fn decrypt<'a>(
        &mut self,
        mut msg: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        let cipher = self.cipher.as_ref().ok_or(Error::DecryptError)?;
        let payload: &mut BorrowedPayload<'a> = &mut msg.payload;
        // The AAD is the record header as received, so it uses the ciphertext length.
        let aad = make_tls13_aad(payload.len());
        let plain_len = open(cipher, Nonce::new(&self.iv, seq), &aad, payload)?;
        payload.truncate(plain_len);
        // Strips the padding, recovers the inner content type, enforces the size limit.
        msg.into_tls13_unpadded_message()
    }
}

// ---------------------------------------------------------------------------------------
// TLS 1.2 (RFC 5288)

/// `Tls12AeadAlgorithm` for one AES key size.
struct Tls12Gcm<A>(PhantomData<fn() -> A>);

/// The 12-byte per-connection IV: the 4-byte salt from the key block followed by the
/// 8 bytes rustls derives for the first explicit nonce. XORing the sequence number
/// into it (as TLS 1.3 does) yields unique explicit nonces, and is what ring and
/// aws-lc-rs do, so extracted secrets mean the same thing whichever provider made them.
/// `None` if rustls passes other lengths than `key_block_shape()` asks for (it does not).
fn tls12_iv(salt: &[u8], explicit: &[u8]) -> Option<Iv> {
    let salt: [u8; 4] = salt.try_into().ok()?;
    let explicit: [u8; EXPLICIT_NONCE_LEN] = explicit.try_into().ok()?;
    let mut iv = [0u8; 12];
    iv[..4].copy_from_slice(&salt);
    iv[4..].copy_from_slice(&explicit);
    Some(Iv::from(iv))
}

impl<A: RecordAead> Tls12AeadAlgorithm for Tls12Gcm<A> {
    fn encrypter(&self, key: AeadKey, iv: &[u8], extra: &[u8]) -> Box<dyn MessageEncrypter> {
        // Bad lengths leave the encrypter unusable (every record an error), not a panic.
        let state = tls12_iv(iv, extra).zip(new_cipher::<A>(&key));
        Box::new(Tls12Encrypter { state })
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        let salt: Option<[u8; 4]> = iv.try_into().ok();
        Box::new(Tls12Decrypter {
            state: salt.zip(new_cipher::<A>(&key)),
        })
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        KeyBlockShape {
            enc_key_len: A::key_size(),
            fixed_iv_len: 4,
            explicit_nonce_len: EXPLICIT_NONCE_LEN,
        }
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: &[u8],
        explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        let iv = tls12_iv(iv, explicit).ok_or(UnsupportedOperationError)?;
        Ok(A::traffic_secrets(key, iv))
    }
}

struct Tls12Encrypter<A> {
    state: Option<(Iv, A)>,
}

struct Tls12Decrypter<A> {
    state: Option<([u8; 4], A)>,
}

impl<A: RecordAead> MessageEncrypter for Tls12Encrypter<A> {
    fn encrypt(
        &mut self,
        msg: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        let (iv, cipher) = self.state.as_ref().ok_or(Error::EncryptError)?;
        let nonce = Nonce::new(iv, seq);
        let aad = make_tls12_aad(seq, msg.typ, msg.version, msg.payload.len());
        let mut payload =
            PrefixedPayload::with_capacity(self.encrypted_payload_len(msg.payload.len()));
        payload.extend_from_slice(&nonce.0[4..]);
        payload.extend_from_chunks(&msg.payload);
        let tag = seal(
            cipher,
            nonce,
            &aad,
            &mut payload.as_mut()[EXPLICIT_NONCE_LEN..],
        )?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(msg.typ, msg.version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + TLS12_OVERHEAD
    }
}

impl<A: RecordAead> MessageDecrypter for Tls12Decrypter<A> {
    fn decrypt<'a>(
        &mut self,
        mut msg: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        let (salt, cipher) = self.state.as_ref().ok_or(Error::DecryptError)?;
        let payload = &mut msg.payload;
        let Some(plain_len) = payload.len().checked_sub(TLS12_OVERHEAD) else {
            return Err(Error::DecryptError);
        };
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(salt);
        nonce[4..].copy_from_slice(&payload[..EXPLICIT_NONCE_LEN]);
        let aad = make_tls12_aad(seq, msg.typ, msg.version, plain_len);
        open(
            cipher,
            Nonce(nonce),
            &aad,
            &mut payload[EXPLICIT_NONCE_LEN..],
        )?;
        if plain_len > MAX_FRAGMENT_LEN {
            return Err(Error::PeerSentOversizedRecord);
        }
        // Hand back the plaintext where it was decrypted, behind the explicit nonce,
        // rather than moving it to the front of the buffer.
        let plain: Range<usize> = EXPLICIT_NONCE_LEN..EXPLICIT_NONCE_LEN + plain_len;
        Ok(msg.into_plain_message_range(plain))
    }
}

// ---------------------------------------------------------------------------------------
// Suites

static AES_128_GCM_TLS13: Tls13Gcm<Aes128> = Tls13Gcm(PhantomData);
static AES_256_GCM_TLS13: Tls13Gcm<Aes256> = Tls13Gcm(PhantomData);
static AES_128_GCM_TLS12: Tls12Gcm<Aes128> = Tls12Gcm(PhantomData);
static AES_256_GCM_TLS12: Tls12Gcm<Aes256> = Tls12Gcm(PhantomData);

/// ring's suite of the same name, whose hash, HKDF/PRF, key exchange and signature
/// schemes ours reuse. ring keeps those building blocks private, but its suite statics
/// are public and can be taken apart at compile time.
const fn ring13(suite: SupportedCipherSuite) -> &'static Tls13CipherSuite {
    match suite {
        SupportedCipherSuite::Tls13(s) => s,
        SupportedCipherSuite::Tls12(_) => panic!("expected a TLS 1.3 suite"),
    }
}

const fn ring12(suite: SupportedCipherSuite) -> &'static Tls12CipherSuite {
    match suite {
        SupportedCipherSuite::Tls12(s) => s,
        SupportedCipherSuite::Tls13(_) => panic!("expected a TLS 1.2 suite"),
    }
}

const fn tls13_suite(
    ring: &'static Tls13CipherSuite,
    aead_alg: &'static dyn Tls13AeadAlgorithm,
    quic: &'static dyn rustls::quic::Algorithm,
) -> Tls13CipherSuite {
    Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: ring.common.suite,
            hash_provider: ring.common.hash_provider,
            confidentiality_limit: AES_GCM_CONFIDENTIALITY_LIMIT,
        },
        hkdf_provider: ring.hkdf_provider,
        aead_alg,
        quic: Some(quic),
    }
}

const fn tls12_suite(
    ring: &'static Tls12CipherSuite,
    aead_alg: &'static dyn Tls12AeadAlgorithm,
) -> Tls12CipherSuite {
    Tls12CipherSuite {
        common: CipherSuiteCommon {
            suite: ring.common.suite,
            hash_provider: ring.common.hash_provider,
            confidentiality_limit: AES_GCM_CONFIDENTIALITY_LIMIT,
        },
        prf_provider: ring.prf_provider,
        kx: ring.kx,
        sign: ring.sign,
        aead_alg,
    }
}

use ring_provider::cipher_suite as ring_suites;

static TLS13_AES_128_GCM_SHA256_SUITE: Tls13CipherSuite = tls13_suite(
    ring13(ring_suites::TLS13_AES_128_GCM_SHA256),
    &AES_128_GCM_TLS13,
    &quic::AES_128,
);
static TLS13_AES_256_GCM_SHA384_SUITE: Tls13CipherSuite = tls13_suite(
    ring13(ring_suites::TLS13_AES_256_GCM_SHA384),
    &AES_256_GCM_TLS13,
    &quic::AES_256,
);
static TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256_SUITE: Tls12CipherSuite = tls12_suite(
    ring12(ring_suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    &AES_128_GCM_TLS12,
);
static TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384_SUITE: Tls12CipherSuite = tls12_suite(
    ring12(ring_suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    &AES_256_GCM_TLS12,
);
static TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256_SUITE: Tls12CipherSuite = tls12_suite(
    ring12(ring_suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
    &AES_128_GCM_TLS12,
);
static TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384_SUITE: Tls12CipherSuite = tls12_suite(
    ring12(ring_suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
    &AES_256_GCM_TLS12,
);

/// TLS 1.3 `TLS_AES_128_GCM_SHA256` with records, and QUIC packets, on this crate's
/// AES-128-GCM.
pub static TLS13_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&TLS13_AES_128_GCM_SHA256_SUITE);
/// TLS 1.3 `TLS_AES_256_GCM_SHA384` with records, and QUIC packets, on this crate's
/// AES-256-GCM.
pub static TLS13_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&TLS13_AES_256_GCM_SHA384_SUITE);
/// TLS 1.2 `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256` with records on this crate.
pub static TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256_SUITE);
/// TLS 1.2 `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384` with records on this crate.
pub static TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384_SUITE);
/// TLS 1.2 `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256` with records on this crate.
pub static TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256_SUITE);
/// TLS 1.2 `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384` with records on this crate.
pub static TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384_SUITE);

/// The six AES-GCM suites of this module, in the preference order of rustls's ring
/// provider (TLS 1.3 first, AES-256 before AES-128, ECDSA before RSA).
pub static AES_GCM_CIPHER_SUITES: &[SupportedCipherSuite] = &[
    TLS13_AES_256_GCM_SHA384,
    TLS13_AES_128_GCM_SHA256,
    TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
];

/// Our replacement for a ring suite, if it is one of the AES-GCM ones.
fn replacement(suite: CipherSuite) -> Option<SupportedCipherSuite> {
    AES_GCM_CIPHER_SUITES
        .iter()
        .copied()
        .find(|s| s.suite() == suite)
}

/// rustls's *ring* provider (`rustls::crypto::ring::default_provider()`) with each of
/// its AES-GCM suites swapped for the one of the same name here ([`with_our_aes_gcm`]).
/// Everything else, the ChaCha20-Poly1305 suites, key exchange groups, signature
/// algorithms, randomness and key loading, and the order of preference, is ring's.
pub fn provider() -> CryptoProvider {
    // rustls 0.23.48 deprecates this function, ring's provider having no post-quantum key
    // exchange; it remains the only way to reach ring's randomness and key loading (their
    // type is private), and key exchange stays ring's here by design.
    #[allow(deprecated)]
    let ring = ring_provider::default_provider();
    with_our_aes_gcm(ring)
}

/// `base` with each of its AES-GCM suites swapped for the one of the same name here, in
/// the same place of its order; everything else is `base`'s, suites without AES-GCM
/// included. A suite `base` lacks is not added.
///
/// For a program on another provider, e.g. rustls's default aws-lc-rs one:
/// `with_our_aes_gcm(rustls::crypto::aws_lc_rs::default_provider())` keeps its key
/// exchange (with the post-quantum `X25519MLKEM768` group), signatures and randomness,
/// while its AES-GCM records and QUIC packets run here.
///
/// ```
/// use rustls::crypto::{CryptoProvider, ring::cipher_suite as ring};
///
/// // Any provider; here one preferring ChaCha20-Poly1305 over ring's AES-128-GCM.
/// let base = CryptoProvider {
///     cipher_suites: vec![
///         ring::TLS13_CHACHA20_POLY1305_SHA256,
///         ring::TLS13_AES_128_GCM_SHA256,
///     ],
///     ..aes_gcm_vaes::rustls::provider()
/// };
/// // ChaCha20-Poly1305 still first and ring's; then AES-128-GCM, now ours.
/// let provider = aes_gcm_vaes::rustls::with_our_aes_gcm(base);
/// # let _ = provider;
/// ```
///
/// The swapped suites bring their hash, HKDF (TLS 1.3) and PRF (TLS 1.2) from ring, as
/// every suite here does; so a provider that was FIPS-approved no longer reports itself
/// so (`CryptoProvider::fips`).
pub fn with_our_aes_gcm(mut base: CryptoProvider) -> CryptoProvider {
    for slot in base.cipher_suites.iter_mut() {
        if let Some(ours) = replacement(slot.suite()) {
            *slot = ours;
        }
    }
    base
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec::Vec;

    use super::*;

    fn aead13(s: SupportedCipherSuite) -> &'static dyn Tls13AeadAlgorithm {
        ring13(s).aead_alg
    }

    fn aead12(s: SupportedCipherSuite) -> &'static dyn Tls12AeadAlgorithm {
        ring12(s).aead_alg
    }

    fn ptr_eq13(a: SupportedCipherSuite, b: SupportedCipherSuite) -> bool {
        match (a, b) {
            (SupportedCipherSuite::Tls13(a), SupportedCipherSuite::Tls13(b)) => core::ptr::eq(a, b),
            (SupportedCipherSuite::Tls12(a), SupportedCipherSuite::Tls12(b)) => core::ptr::eq(a, b),
            _ => false,
        }
    }

    #[test]
    fn provider_swaps_only_the_aes_gcm_suites_and_keeps_order() {
        #[allow(deprecated)] // see `provider`
        let ring = ring_provider::default_provider();
        let ours = provider();
        assert_eq!(ring.cipher_suites.len(), ours.cipher_suites.len());
        let mut swapped = 0;
        for (r, o) in ring.cipher_suites.iter().zip(&ours.cipher_suites) {
            assert_eq!(r.suite(), o.suite());
            match replacement(r.suite()) {
                Some(mine) => {
                    assert!(ptr_eq13(*o, mine));
                    swapped += 1;
                }
                None => assert!(ptr_eq13(*o, *r), "{:?} must stay ring's", r.suite()),
            }
        }
        assert_eq!(swapped, 6);
        assert_eq!(ring.kx_groups.len(), ours.kx_groups.len());
    }

    #[test]
    fn any_provider_keeps_its_order_and_its_other_suites() {
        // A provider of ring's suites in another order, one AES-GCM suite left out.
        let base_suites = std::vec![
            ring_suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            ring_suites::TLS13_CHACHA20_POLY1305_SHA256,
            ring_suites::TLS13_AES_128_GCM_SHA256,
            ring_suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            ring_suites::TLS13_AES_256_GCM_SHA384,
        ];
        let kx_groups = std::vec![ring_provider::kx_group::SECP384R1];
        let base = CryptoProvider {
            cipher_suites: base_suites,
            kx_groups: kx_groups.clone(),
            ..provider()
        };
        let swapped = with_our_aes_gcm(base);
        let expected = [
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            ring_suites::TLS13_CHACHA20_POLY1305_SHA256,
            TLS13_AES_128_GCM_SHA256,
            ring_suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            TLS13_AES_256_GCM_SHA384,
        ];
        assert_eq!(swapped.cipher_suites.len(), expected.len());
        for (got, want) in swapped.cipher_suites.iter().zip(expected) {
            assert!(ptr_eq13(*got, want), "{:?}", got.suite());
        }
        assert_eq!(swapped.kx_groups.len(), 1);
        assert!(core::ptr::addr_eq(swapped.kx_groups[0], kx_groups[0]));
    }

    /// A 32-byte key is the only `AeadKey` constructible outside rustls, so the
    /// record-level comparison with ring uses the AES-256 suites; the AES-128 ones are
    /// checked against ring through full handshakes in the integration tests.
    fn key_iv() -> (AeadKey, Iv) {
        let mut key = [0u8; 32];
        for (i, b) in key.iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        (AeadKey::from(key), Iv::from([7u8; 12]))
    }

    fn record_bytes(m: OutboundOpaqueMessage) -> Vec<u8> {
        m.payload.as_ref().to_vec()
    }

    #[test]
    fn tls13_records_match_ring_and_round_trip() {
        let ring_alg = aead13(ring_suites::TLS13_AES_256_GCM_SHA384);
        let our_alg = aead13(TLS13_AES_256_GCM_SHA384);
        let (k, iv) = key_iv();
        let mut ring_enc = ring_alg.encrypter(k, iv);
        let (k, iv) = key_iv();
        let mut our_enc = our_alg.encrypter(k, iv);
        let (k, iv) = key_iv();
        let mut our_dec = our_alg.decrypter(k, iv);
        for (seq, len) in [0usize, 1, 15, 16, 17, 255, 4096, 16384]
            .into_iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 + seq) as u8).collect();
            let msg = || OutboundPlainMessage {
                typ: ContentType::ApplicationData,
                version: ProtocolVersion::TLSv1_3,
                payload: data.as_slice().into(),
            };
            let seq = seq as u64;
            let theirs = record_bytes(ring_enc.encrypt(msg(), seq).unwrap());
            let mut mine = record_bytes(our_enc.encrypt(msg(), seq).unwrap());
            assert_eq!(theirs, mine, "len {len}");
            assert_eq!(mine.len(), our_enc.encrypted_payload_len(len));
            let inbound = InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                &mut mine,
            );
            let plain = our_dec.decrypt(inbound, seq).unwrap();
            assert_eq!(plain.typ, ContentType::ApplicationData);
            assert_eq!(plain.payload, data.as_slice());
        }
    }

    #[test]
    fn tls12_records_match_ring_and_round_trip() {
        let suite = TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384;
        let ring_alg = aead12(ring_suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384);
        let our_alg = aead12(suite);
        assert_eq!(
            ring_alg.key_block_shape().enc_key_len,
            our_alg.key_block_shape().enc_key_len
        );
        let salt = [1, 2, 3, 4];
        let explicit = [9, 8, 7, 6, 5, 4, 3, 2];
        let mut ring_enc = ring_alg.encrypter(key_iv().0, &salt, &explicit);
        let mut our_enc = our_alg.encrypter(key_iv().0, &salt, &explicit);
        let mut our_dec = our_alg.decrypter(key_iv().0, &salt);
        let mut ring_dec = ring_alg.decrypter(key_iv().0, &salt);
        for (seq, len) in [0usize, 1, 16, 100, 16384].into_iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + seq) as u8).collect();
            let msg = || OutboundPlainMessage {
                typ: ContentType::Handshake,
                version: ProtocolVersion::TLSv1_2,
                payload: data.as_slice().into(),
            };
            let seq = seq as u64 + 1000;
            let theirs = record_bytes(ring_enc.encrypt(msg(), seq).unwrap());
            let mut mine = record_bytes(our_enc.encrypt(msg(), seq).unwrap());
            assert_eq!(theirs, mine, "len {len}");
            let mut copy = mine.clone();
            let plain = our_dec
                .decrypt(
                    InboundOpaqueMessage::new(
                        ContentType::Handshake,
                        ProtocolVersion::TLSv1_2,
                        &mut mine,
                    ),
                    seq,
                )
                .unwrap();
            assert_eq!(plain.payload, data.as_slice());
            let plain = ring_dec
                .decrypt(
                    InboundOpaqueMessage::new(
                        ContentType::Handshake,
                        ProtocolVersion::TLSv1_2,
                        &mut copy,
                    ),
                    seq,
                )
                .unwrap();
            assert_eq!(plain.payload, data.as_slice());
        }
    }

    #[test]
    fn tampered_or_short_records_are_decrypt_errors() {
        let (k, iv) = key_iv();
        let mut enc = aead13(TLS13_AES_256_GCM_SHA384).encrypter(k, iv);
        let (k, iv) = key_iv();
        let mut dec13 = aead13(TLS13_AES_256_GCM_SHA384).decrypter(k, iv);
        let data = [0x42u8; 40];
        let msg = OutboundPlainMessage {
            typ: ContentType::ApplicationData,
            version: ProtocolVersion::TLSv1_3,
            payload: data.as_slice().into(),
        };
        let good = record_bytes(enc.encrypt(msg, 3).unwrap());
        for bit in 0..good.len() * 8 {
            let mut bad = good.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let r = dec13.decrypt(
                InboundOpaqueMessage::new(
                    ContentType::ApplicationData,
                    ProtocolVersion::TLSv1_2,
                    &mut bad,
                ),
                3,
            );
            assert!(matches!(r, Err(Error::DecryptError)), "bit {bit}");
        }
        // Right bytes, wrong sequence number.
        let mut replay = good.clone();
        let r = dec13.decrypt(
            InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                &mut replay,
            ),
            4,
        );
        assert!(matches!(r, Err(Error::DecryptError)));

        let mut dec12 =
            aead12(TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384).decrypter(key_iv().0, &[0; 4]);
        for len in [0usize, 1, 15, 16, 23] {
            let mut short = std::vec![0u8; len];
            let r = dec13.decrypt(
                InboundOpaqueMessage::new(
                    ContentType::ApplicationData,
                    ProtocolVersion::TLSv1_2,
                    &mut short,
                ),
                0,
            );
            if len < 16 {
                assert!(matches!(r, Err(Error::DecryptError)), "tls13 len {len}");
            } else {
                assert!(r.is_err());
            }
            let mut short = std::vec![0u8; len];
            let r = dec12.decrypt(
                InboundOpaqueMessage::new(
                    ContentType::ApplicationData,
                    ProtocolVersion::TLSv1_2,
                    &mut short,
                ),
                0,
            );
            assert!(matches!(r, Err(Error::DecryptError)), "tls12 len {len}");
        }
    }

    #[test]
    fn wrong_length_key_fails_without_panicking() {
        // AES-128 suites given a 32-byte key: rustls never does this, but it must not panic.
        let (k, iv) = key_iv();
        let mut enc = aead13(TLS13_AES_128_GCM_SHA256).encrypter(k, iv);
        let msg = OutboundPlainMessage {
            typ: ContentType::ApplicationData,
            version: ProtocolVersion::TLSv1_3,
            payload: [1u8, 2, 3].as_slice().into(),
        };
        assert!(matches!(enc.encrypt(msg, 0), Err(Error::EncryptError)));
    }

    #[test]
    fn tls12_bad_iv_lengths_fail_without_panicking() {
        let alg = aead12(TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384);
        let mut enc = alg.encrypter(key_iv().0, &[1, 2, 3], &[0; 8]);
        let msg = OutboundPlainMessage {
            typ: ContentType::ApplicationData,
            version: ProtocolVersion::TLSv1_2,
            payload: [1u8, 2, 3].as_slice().into(),
        };
        assert!(matches!(enc.encrypt(msg, 0), Err(Error::EncryptError)));
        let mut dec = alg.decrypter(key_iv().0, &[1, 2, 3, 4, 5]);
        let mut record = std::vec![0u8; 64];
        let msg = InboundOpaqueMessage::new(
            ContentType::ApplicationData,
            ProtocolVersion::TLSv1_2,
            &mut record,
        );
        assert!(matches!(dec.decrypt(msg, 0), Err(Error::DecryptError)));
        assert!(
            alg.extract_keys(key_iv().0, &[1, 2, 3, 4], &[0; 7])
                .is_err()
        );
    }

    #[test]
    fn extract_keys_names_the_cipher() {
        let (k, iv) = key_iv();
        assert!(matches!(
            aead13(TLS13_AES_256_GCM_SHA384).extract_keys(k, iv),
            Ok(ConnectionTrafficSecrets::Aes256Gcm { .. })
        ));
        let secrets = aead12(TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
            .extract_keys(key_iv().0, &[1, 2, 3, 4], &[5, 6, 7, 8, 9, 10, 11, 12])
            .unwrap();
        match secrets {
            ConnectionTrafficSecrets::Aes256Gcm { iv, .. } => {
                assert_eq!(iv.as_ref(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
            }
            _ => panic!("wrong variant"),
        }
    }
}

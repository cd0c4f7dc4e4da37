//! TLS 1.2 CBC-then-HMAC record protection (AES-128/256 with SHA-1, SHA-256, SHA-384; 3DES
//! with SHA-1), ours (`tls-cbc-aead`, behind the `tls-cbc` feature) against OpenSSL driven
//! the way a record layer without stitched code does it, and against OpenSSL's own stitched
//! ciphers (`openssl-stitched`, AES only).
//!
//! OpenSSL side, per record: seal = HMAC over seq||type||version||length||plaintext, then
//! CBC-encrypt plaintext||MAC||padding (minimal padding); open = CBC-decrypt, check the
//! padding and HMAC, compare. The HMAC and CBC contexts are keyed once and only re-armed per
//! record. That open is not constant-time (no Lucky 13 countermeasures), so it is an upper
//! bound on what a safe composition of the same two calls could reach.
//!
//! OpenSSL's stitched side is `EVP_aes_{128,256}_cbc_hmac_sha{1,256}` (AES-NI with SHA-NI
//! or SSSE3/AVX hashing; SHA-384 has none) in TLS mode, as OpenSSL's own record layer
//! drives it: per record, the 13-byte TLS AAD through `EVP_CIPHER_CTX_ctrl`, then one
//! `EVP_Cipher` call over `explicit IV block || plaintext`, which the cipher MACs, pads and
//! encrypts in place (one more AES block than ours: the explicit IV is encrypted too). Its
//! open checks padding and MAC in constant time as OpenSSL does it.
//!
//! Every side copies the input record into the working buffer before each operation (seal
//! grows the buffer and open shrinks it, so the input cannot be reused in place); the copy is
//! the same for all (16 bytes more for the stitched side's IV block) and small next to the work,
//! as long as its source and destination share their address modulo 64 ([`SourceAlignedTo`]).

use std::hint::black_box;

use crate::clock::{Sample, run_for};
use crate::{Op, message};

/// Sizes measured unless `--chunks` says otherwise.
pub const TLS_SIZES: [usize; 5] = [16, 256, 1350, 8192, 16384];

/// seq_num (8) || type (1) || version (2); the length is added by the AEAD itself.
pub const TLS_AD: [u8; 11] = [0, 0, 0, 0, 0, 0, 0, 9, 0x17, 0x03, 0x03];

const IV: [u8; 16] = [
    0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0,
];

/// The CBC-HMAC suites (TLS 1.2 with an explicit IV).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CbcAlg {
    Aes128Sha1,
    Aes256Sha1,
    Aes128Sha256,
    Aes256Sha256,
    Aes256Sha384,
    TdesSha1,
}

impl CbcAlg {
    pub const ALL: [CbcAlg; 6] = [
        CbcAlg::Aes128Sha1,
        CbcAlg::Aes256Sha1,
        CbcAlg::Aes128Sha256,
        CbcAlg::Aes256Sha256,
        CbcAlg::Aes256Sha384,
        CbcAlg::TdesSha1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CbcAlg::Aes128Sha1 => "AES-128-CBC-SHA1",
            CbcAlg::Aes256Sha1 => "AES-256-CBC-SHA1",
            CbcAlg::Aes128Sha256 => "AES-128-CBC-SHA256",
            CbcAlg::Aes256Sha256 => "AES-256-CBC-SHA256",
            CbcAlg::Aes256Sha384 => "AES-256-CBC-SHA384",
            CbcAlg::TdesSha1 => "3DES-EDE-CBC-SHA1",
        }
    }

    /// Bytes per cipher block, and of explicit IV.
    pub fn block_len(self) -> usize {
        if self == CbcAlg::TdesSha1 { 8 } else { 16 }
    }

    /// The explicit IV the records carry.
    fn iv(self) -> &'static [u8] {
        &IV[..self.block_len()]
    }

    fn enc_key_len(self) -> usize {
        match self {
            CbcAlg::Aes128Sha1 | CbcAlg::Aes128Sha256 => 16,
            CbcAlg::Aes256Sha1 | CbcAlg::Aes256Sha256 | CbcAlg::Aes256Sha384 => 32,
            CbcAlg::TdesSha1 => 24,
        }
    }

    /// HMAC output length, which is also the MAC key length in TLS.
    pub fn mac_len(self) -> usize {
        match self {
            CbcAlg::Aes128Sha1 | CbcAlg::Aes256Sha1 | CbcAlg::TdesSha1 => 20,
            CbcAlg::Aes128Sha256 | CbcAlg::Aes256Sha256 => 32,
            CbcAlg::Aes256Sha384 => 48,
        }
    }

    /// mac_key || enc_key, BoringSSL's layout.
    pub fn key(self) -> Vec<u8> {
        (0..self.mac_len() + self.enc_key_len())
            .map(|i| (i * 29 + 3) as u8)
            .collect()
    }
}

/// A copy of some bytes placed at the same address modulo 64 as the destination that each
/// timed operation copies them to.
///
/// glibc's `memcpy` moves a few KiB or more with `rep movsb`, which on AMD Zen 3 runs 20-40
/// times slower when source and destination differ in their address modulo 32: 16 KiB at
/// 1.2-1.8 cycles/byte against 0.03-0.07 (measured on an EPYC, family 25 model 1, glibc
/// 2.36). Heap buffers land at any multiple of 16, so which side of a comparison paid that
/// (about as much as a whole AES-CBC pass) was chance: in one run, ours paid it in the
/// seal and OpenSSL's stitched cipher, which copies to 16 bytes further on, did not.
struct SourceAlignedTo {
    /// The bytes at `start`, with 64 bytes of slack.
    buf: Vec<u8>,
    start: usize,
}

impl SourceAlignedTo {
    fn new(data: &[u8], dst: *const u8) -> Self {
        let mut buf = vec![0u8; data.len() + 64];
        // Both addresses are taken modulo 64, which divides 2^64, so wrapping is harmless.
        let start = (dst as usize).wrapping_sub(buf.as_ptr() as usize) % 64;
        buf[start..start + data.len()].copy_from_slice(data);
        Self { buf, start }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.buf.len() - 64 + self.start]
    }
}

/// Record protection as both sides offer it: the buffer holds the plaintext and grows to the
/// CBC ciphertext on seal, and the reverse on open.
pub trait TlsCbc {
    fn seal(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>);
    fn open(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>) -> bool;
}

/// Object-safe face of one side, so the tool can keep both in one list.
pub trait CbcSubject {
    fn name(&self) -> &str;
    fn is_ours(&self) -> bool;
    fn measure(&mut self, op: Op, len: usize, budget_ns: u64) -> Sample;
    fn seal_once(&mut self, len: usize) -> Vec<u8>;
    fn open_once(&mut self, record: &[u8]) -> Option<Vec<u8>>;
}

struct Named<T> {
    name: &'static str,
    ours: bool,
    /// The suite's explicit IV.
    iv: &'static [u8],
    t: T,
}

impl<T: TlsCbc> CbcSubject for Named<T> {
    fn name(&self) -> &str {
        self.name
    }

    fn is_ours(&self) -> bool {
        self.ours
    }

    fn measure(&mut self, op: Op, len: usize, budget_ns: u64) -> Sample {
        let mut work = Vec::with_capacity(len + 128);
        // `work` never grows past its capacity, so the copies below always go here.
        let dst = work.as_ptr();
        let (t, iv) = (&mut self.t, self.iv);
        match op {
            Op::Seal => {
                let pt = SourceAlignedTo::new(&message(len), dst);
                run_for(budget_ns, || {
                    work.clear();
                    work.extend_from_slice(black_box(pt.bytes()));
                    t.seal(iv, black_box(&TLS_AD), &mut work);
                    black_box(&work);
                })
            }
            Op::Open => {
                let mut record = message(len);
                t.seal(iv, &TLS_AD, &mut record);
                let record = SourceAlignedTo::new(&record, dst);
                run_for(budget_ns, || {
                    work.clear();
                    work.extend_from_slice(black_box(record.bytes()));
                    let ok = t.open(iv, black_box(&TLS_AD), &mut work);
                    assert!(ok, "open of an authentic record failed");
                    black_box(&work);
                })
            }
        }
    }

    fn seal_once(&mut self, len: usize) -> Vec<u8> {
        let mut r = message(len);
        self.t.seal(self.iv, &TLS_AD, &mut r);
        r
    }

    fn open_once(&mut self, record: &[u8]) -> Option<Vec<u8>> {
        let mut r = record.to_vec();
        self.t.open(self.iv, &TLS_AD, &mut r).then_some(r)
    }
}

/// Ours (when built with the `tls-cbc` feature; with `all_engines`, also on every other
/// engine choice this CPU has), OpenSSL's composition and, where OpenSSL has one for
/// `alg` on this CPU, its stitched cipher.
pub fn subjects(alg: CbcAlg, all_engines: bool, forced: Forced) -> Vec<Box<dyn CbcSubject>> {
    let key = alg.key();
    let mut v: Vec<Box<dyn CbcSubject>> = Vec::new();
    #[cfg(feature = "tls-cbc")]
    v.extend(ours::subjects(alg, &key, all_engines, forced));
    #[cfg(not(feature = "tls-cbc"))]
    let _ = (all_engines, forced);
    v.push(Box::new(Named {
        name: "openssl",
        ours: false,
        iv: alg.iv(),
        t: openssl_side::OpenSslCbcHmac::new(alg, &key),
    }));
    if let Some(s) = openssl_stitched::OpenSslStitched::new(alg, &key) {
        v.push(Box::new(s));
    }
    v
}

/// Checks that every side opens what every other side sealed, at each size.
pub fn cross_check(
    alg: CbcAlg,
    sizes: &[usize],
    all_engines: bool,
    forced: Forced,
) -> Result<(), String> {
    let mut subs = subjects(alg, all_engines, forced);
    for &len in sizes {
        for i in 0..subs.len() {
            let record = subs[i].seal_once(len);
            for j in 0..subs.len() {
                match subs[j].open_once(&record) {
                    Some(pt) if pt == message(len) => {}
                    _ => {
                        return Err(format!(
                            "{} {len} bytes: {} cannot open what {} sealed",
                            alg.name(),
                            subs[j].name(),
                            subs[i].name()
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(feature = "tls-cbc")]
mod ours {
    use aead::{AeadInOut, KeyInit, Nonce};
    use tls_cbc_aead::{
        Aes128CbcSha1, Aes128CbcSha256, Aes256CbcSha1, Aes256CbcSha256, Aes256CbcSha384,
        DesEde3CbcSha1, Engines,
    };

    use super::{CbcAlg, CbcSubject, Forced, Named, TlsCbc};

    struct Ours<A: AeadInOut>(A);

    impl<A: AeadInOut> TlsCbc for Ours<A> {
        #[inline]
        fn seal(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>) {
            let nonce = Nonce::<A>::try_from(iv).expect("one block of IV");
            self.0.encrypt_in_place(&nonce, ad, record).expect("seal");
        }

        #[inline]
        fn open(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>) -> bool {
            let nonce = Nonce::<A>::try_from(iv).expect("one block of IV");
            self.0.decrypt_in_place(&nonce, ad, record).is_ok()
        }
    }

    /// What the suites offer beyond the AEAD traits: keys on chosen engines.
    trait Suite: AeadInOut + KeyInit + 'static {
        fn best() -> Engines;
        fn all() -> Vec<Engines>;
        fn with(key: &[u8], e: Engines) -> Self;
        /// What `KeyInit` picks, with the form of the SHA-512 rounds where it has one.
        fn picked() -> String;
    }

    macro_rules! suite {
        ($($t:ty),*) => {$(
            impl Suite for $t {
                fn best() -> Engines {
                    <$t>::best_engines()
                }
                fn all() -> Vec<Engines> {
                    <$t>::available_engines().collect()
                }
                fn with(key: &[u8], e: Engines) -> Self {
                    <$t>::new_with_engines(key.try_into().expect("key length"), e)
                        .expect("available engines")
                }
                fn picked() -> String {
                    let picked = <$t>::new(&Default::default()).ct_engines();
                    // The cipher by its own name: an AES back end, or 3DES's kernel.
                    let seal = if picked.engines.stitched_seal { "stitched" } else { "plain" };
                    let engines = format!("{}/{}/{seal}", picked.cipher, picked.engines.hash);
                    match (picked.rounds, picked.stitched_rounds) {
                        ("-", _) => engines,
                        (rounds, stitched) if stitched == rounds || stitched == "-" => {
                            format!("{engines} ({rounds} SHA-512 rounds)")
                        }
                        (rounds, stitched) => format!(
                            "{engines} ({rounds} SHA-512 rounds, {stitched} in the stitched seal)"
                        ),
                    }
                }
            }
        )*};
    }
    suite!(
        Aes128CbcSha1,
        Aes256CbcSha1,
        Aes128CbcSha256,
        Aes256CbcSha256,
        Aes256CbcSha384,
        DesEde3CbcSha1
    );

    /// The engines `forced` asks of `A` (each part not forced as `A` picks it), with the
    /// stitched seal where it has one; `None` if nothing is forced, or if `A` cannot run
    /// those engines here.
    fn forced<A: Suite>(forced: Forced) -> Option<Engines> {
        let best = A::best();
        let cipher = forced.cipher.unwrap_or(best.cipher);
        let hash = forced.hash.unwrap_or(best.hash.name());
        A::all()
            .into_iter()
            .filter(|e| forced.any() && e.cipher == cipher && e.hash.name() == hash)
            .max_by_key(|e| e.stitched_seal)
    }

    /// `ours` (the engines `KeyInit` picks, or those `forced` asks for where `A` has
    /// them) and, with `all_engines`, `ours-<hash>-<seal>` for every other hash engine and
    /// seal path on the same cipher engine.
    fn named<A: Suite>(
        alg: CbcAlg,
        key: &[u8],
        all_engines: bool,
        forced: Forced,
    ) -> Vec<Box<dyn CbcSubject>> {
        let forced = self::forced::<A>(forced);
        let best = forced.unwrap_or_else(A::best);
        let t = match forced {
            Some(e) => A::with(key, e),
            None => A::new_from_slice(key).expect("key length"),
        };
        let mut v: Vec<Box<dyn CbcSubject>> = vec![Box::new(Named {
            name: "ours",
            ours: true,
            iv: alg.iv(),
            t: Ours(t),
        })];
        if all_engines {
            for e in A::all() {
                if e == best || e.cipher != best.cipher {
                    continue;
                }
                let seal = if e.stitched_seal { "stitched" } else { "plain" };
                // Leaked: a handful of names, alive for the whole run.
                let name = Box::leak(format!("ours-{}-{seal}", e.hash).into_boxed_str());
                v.push(Box::new(Named {
                    name,
                    ours: true,
                    iv: alg.iv(),
                    t: Ours(A::with(key, e)),
                }));
            }
        }
        v
    }

    pub fn subjects(
        alg: CbcAlg,
        key: &[u8],
        all_engines: bool,
        hash: Forced,
    ) -> Vec<Box<dyn CbcSubject>> {
        match alg {
            CbcAlg::Aes128Sha1 => named::<Aes128CbcSha1>(alg, key, all_engines, hash),
            CbcAlg::Aes256Sha1 => named::<Aes256CbcSha1>(alg, key, all_engines, hash),
            CbcAlg::Aes128Sha256 => named::<Aes128CbcSha256>(alg, key, all_engines, hash),
            CbcAlg::Aes256Sha256 => named::<Aes256CbcSha256>(alg, key, all_engines, hash),
            CbcAlg::Aes256Sha384 => named::<Aes256CbcSha384>(alg, key, all_engines, hash),
            CbcAlg::TdesSha1 => named::<DesEde3CbcSha1>(alg, key, all_engines, hash),
        }
    }

    /// Whether `alg` can run on the engines `f` forces here.
    pub fn can_force(alg: CbcAlg, f: Forced) -> bool {
        match alg {
            CbcAlg::Aes128Sha1 => forced::<Aes128CbcSha1>(f).is_some(),
            CbcAlg::Aes256Sha1 => forced::<Aes256CbcSha1>(f).is_some(),
            CbcAlg::Aes128Sha256 => forced::<Aes128CbcSha256>(f).is_some(),
            CbcAlg::Aes256Sha256 => forced::<Aes256CbcSha256>(f).is_some(),
            CbcAlg::Aes256Sha384 => forced::<Aes256CbcSha384>(f).is_some(),
            CbcAlg::TdesSha1 => forced::<DesEde3CbcSha1>(f).is_some(),
        }
    }

    /// What `ours` runs on: the engines `KeyInit` picks, or those forced.
    fn report<A: Suite>(f: Forced) -> String {
        match forced::<A>(f) {
            Some(e) => format!("{e} ({} forced)", f.what()),
            None => A::picked(),
        }
    }

    /// The engines `ours` runs on for `alg`, for the report.
    pub fn engines(alg: CbcAlg, hash: Forced) -> String {
        match alg {
            CbcAlg::Aes128Sha1 => report::<Aes128CbcSha1>(hash),
            CbcAlg::Aes256Sha1 => report::<Aes256CbcSha1>(hash),
            CbcAlg::Aes128Sha256 => report::<Aes128CbcSha256>(hash),
            CbcAlg::Aes256Sha256 => report::<Aes256CbcSha256>(hash),
            CbcAlg::Aes256Sha384 => report::<Aes256CbcSha384>(hash),
            CbcAlg::TdesSha1 => report::<DesEde3CbcSha1>(hash),
        }
    }
}

/// The engines `ours` runs on for `alg`, with those `hash` forces (`None` without the
/// `tls-cbc` feature).
pub fn our_engines(alg: CbcAlg, hash: Forced) -> Option<String> {
    #[cfg(feature = "tls-cbc")]
    return Some(ours::engines(alg, hash));
    #[cfg(not(feature = "tls-cbc"))]
    {
        let _ = (alg, hash);
        None
    }
}

/// Whether our `alg` can run on the engines `f` forces on this CPU (true if nothing is
/// forced; false without the `tls-cbc` feature).
pub fn can_force(alg: CbcAlg, f: Forced) -> bool {
    #[cfg(feature = "tls-cbc")]
    return !f.any() || ours::can_force(alg, f);
    #[cfg(not(feature = "tls-cbc"))]
    {
        let _ = (alg, f);
        false
    }
}

/// The engines `ours` is held to in the TLS CBC runs: the hash engine (`--hash-engine`,
/// by [`tls_cbc_aead::HashEngine`] name) and, with it or alone, the AES suites' cipher
/// engine (`--backend`). What is not forced is what a key would pick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forced {
    pub hash: Option<&'static str>,
    pub cipher: Option<gcm_core::Backend>,
}

impl Forced {
    /// Whether anything is forced.
    pub fn any(self) -> bool {
        self.hash.is_some() || self.cipher.is_some()
    }

    /// What is forced, for the report: "hash engine", "cipher engine" or both.
    pub fn what(self) -> &'static str {
        match (self.hash, self.cipher) {
            (Some(_), Some(_)) => "hash and cipher engines",
            (Some(_), None) => "hash engine",
            _ => "cipher engine",
        }
    }
}

/// A hash engine's name as `--hash-engine` takes it (`HashEngine::name`).
pub fn parse_hash_engine(name: &str) -> Result<&'static str, String> {
    #[cfg(feature = "tls-cbc")]
    {
        let all = tls_cbc_aead::HashEngine::ALL.map(|e| e.name());
        all.into_iter()
            .find(|&n| n == name)
            .ok_or_else(|| format!("--hash-engine {name:?}: one of {}", all.join(", ")))
    }
    #[cfg(not(feature = "tls-cbc"))]
    Err(format!("--hash-engine {name:?}: needs the tls-cbc feature"))
}

mod openssl_side {
    use std::ffi::{c_int, c_uint};

    use openssl::cipher::Cipher;
    use openssl::cipher_ctx::CipherCtx;
    use openssl::hash::MessageDigest;
    use openssl_sys as ffi;

    use super::{CbcAlg, TlsCbc};

    /// A keyed `HMAC_CTX`. The `openssl` crate has no reusable HMAC object (its `Signer`
    /// re-derives the key pads every time), so this holds the C one directly.
    struct Hmac {
        ctx: *mut ffi::HMAC_CTX,
        len: usize,
    }

    impl Hmac {
        fn new(md: MessageDigest, key: &[u8]) -> Hmac {
            // SAFETY: HMAC_CTX_new has no preconditions; null is checked below.
            let ctx = unsafe { ffi::HMAC_CTX_new() };
            assert!(!ctx.is_null(), "HMAC_CTX_new");
            let klen = c_int::try_from(key.len()).expect("key length");
            // SAFETY: `ctx` is a fresh context, `key` is valid for `klen` bytes and `md` is a
            // static digest from OpenSSL; a null ENGINE means the default implementation.
            let rc = unsafe {
                ffi::HMAC_Init_ex(
                    ctx,
                    key.as_ptr().cast(),
                    klen,
                    md.as_ptr(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, 1, "HMAC_Init_ex");
            Hmac {
                ctx,
                len: md.size(),
            }
        }

        /// HMAC of the concatenation of `parts` into `out`, leaving the context keyed.
        fn mac(&mut self, parts: &[&[u8]], out: &mut [u8; 64]) {
            // SAFETY: `self.ctx` was keyed in `new`; a null key with a null digest re-arms
            // it with the same key without recomputing the pads.
            let rc = unsafe {
                ffi::HMAC_Init_ex(
                    self.ctx,
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, 1, "HMAC_Init_ex");
            for p in parts {
                // SAFETY: `p` is valid for reading `p.len()` bytes; the context is armed.
                let rc = unsafe { ffi::HMAC_Update(self.ctx, p.as_ptr(), p.len()) };
                assert_eq!(rc, 1, "HMAC_Update");
            }
            let mut n: c_uint = 0;
            // SAFETY: `out` has room for the largest digest (64 bytes); `n` receives the length.
            let rc = unsafe { ffi::HMAC_Final(self.ctx, out.as_mut_ptr(), &mut n) };
            assert_eq!(rc, 1, "HMAC_Final");
            debug_assert_eq!(n as usize, self.len);
        }
    }

    impl Drop for Hmac {
        fn drop(&mut self) {
            // SAFETY: `self.ctx` came from HMAC_CTX_new and is freed only here.
            unsafe { ffi::HMAC_CTX_free(self.ctx) }
        }
    }

    pub struct OpenSslCbcHmac {
        block_len: usize,
        hmac: Hmac,
        enc: CipherCtx,
        dec: CipherCtx,
    }

    impl OpenSslCbcHmac {
        pub fn new(alg: CbcAlg, key: &[u8]) -> Self {
            let (md, cipher) = match alg {
                CbcAlg::Aes128Sha1 => (MessageDigest::sha1(), Cipher::aes_128_cbc()),
                CbcAlg::Aes256Sha1 => (MessageDigest::sha1(), Cipher::aes_256_cbc()),
                CbcAlg::Aes128Sha256 => (MessageDigest::sha256(), Cipher::aes_128_cbc()),
                CbcAlg::Aes256Sha256 => (MessageDigest::sha256(), Cipher::aes_256_cbc()),
                CbcAlg::Aes256Sha384 => (MessageDigest::sha384(), Cipher::aes_256_cbc()),
                CbcAlg::TdesSha1 => (MessageDigest::sha1(), Cipher::des_ede3_cbc()),
            };
            let (mac_key, enc_key) = key.split_at(alg.mac_len());
            let mut enc = CipherCtx::new().expect("ctx");
            enc.encrypt_init(Some(cipher), Some(enc_key), None)
                .expect("init");
            enc.set_padding(false);
            let mut dec = CipherCtx::new().expect("ctx");
            dec.decrypt_init(Some(cipher), Some(enc_key), None)
                .expect("init");
            dec.set_padding(false);
            OpenSslCbcHmac {
                block_len: alg.block_len(),
                hmac: Hmac::new(md, mac_key),
                enc,
                dec,
            }
        }
    }

    impl TlsCbc for OpenSslCbcHmac {
        fn seal(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>) {
            let len = (record.len() as u16).to_be_bytes();
            let mut mac = [0u8; 64];
            self.hmac.mac(&[ad, &len, record], &mut mac);
            record.extend_from_slice(&mac[..self.hmac.len]);
            let pad = self.block_len - record.len() % self.block_len;
            record.resize(record.len() + pad, (pad - 1) as u8);
            let n = record.len();
            // OpenSSL's update wants a block of slack in the output even with padding off.
            record.resize(n + 16, 0);
            self.enc.encrypt_init(None, None, Some(iv)).expect("iv");
            let out = self.enc.cipher_update_inplace(record, n).expect("cbc");
            debug_assert_eq!(out, n);
            record.truncate(n);
        }

        fn open(&mut self, iv: &[u8], ad: &[u8; 11], record: &mut Vec<u8>) -> bool {
            let n = record.len();
            if !n.is_multiple_of(self.block_len) || n < self.hmac.len + 1 {
                return false;
            }
            record.resize(n + 16, 0);
            self.dec.decrypt_init(None, None, Some(iv)).expect("iv");
            let out = self.dec.cipher_update_inplace(record, n).expect("cbc");
            debug_assert_eq!(out, n);
            record.truncate(n);
            let pad = record[n - 1] as usize + 1;
            if pad + self.hmac.len > n || record[n - pad..].iter().any(|&b| b as usize != pad - 1) {
                return false;
            }
            let pt_len = n - pad - self.hmac.len;
            let len = (pt_len as u16).to_be_bytes();
            let mut mac = [0u8; 64];
            self.hmac.mac(&[ad, &len, &record[..pt_len]], &mut mac);
            let ok = openssl::memcmp::eq(&mac[..self.hmac.len], &record[pt_len..n - pad]);
            record.truncate(pt_len);
            ok
        }
    }
}

mod openssl_stitched {
    use std::ffi::{c_int, c_void};

    use openssl::cipher::Cipher;
    use openssl::cipher_ctx::CipherCtx;
    use openssl_sys as ffi;

    use super::{CbcAlg, CbcSubject, IV, Op, SourceAlignedTo, TLS_AD, message};
    use crate::clock::{Sample, run_for};

    // Not bound by openssl-sys; exported by libcrypto 1.0.1 and later (3.x included).
    unsafe extern "C" {
        fn EVP_aes_128_cbc_hmac_sha1() -> *const ffi::EVP_CIPHER;
        fn EVP_aes_256_cbc_hmac_sha1() -> *const ffi::EVP_CIPHER;
        fn EVP_aes_128_cbc_hmac_sha256() -> *const ffi::EVP_CIPHER;
        fn EVP_aes_256_cbc_hmac_sha256() -> *const ffi::EVP_CIPHER;
        fn EVP_Cipher(
            ctx: *mut ffi::EVP_CIPHER_CTX,
            out: *mut u8,
            input: *const u8,
            len: std::ffi::c_uint,
        ) -> c_int;
    }
    const EVP_CTRL_AEAD_TLS1_AAD: c_int = 0x16;
    const EVP_CTRL_AEAD_SET_MAC_KEY: c_int = 0x17;

    /// One direction of the stitched cipher, keyed.
    struct Ctx(*mut ffi::EVP_CIPHER_CTX);

    impl Ctx {
        fn new(
            cipher: *const ffi::EVP_CIPHER,
            enc_key: &[u8],
            mac_key: &[u8],
            enc: bool,
        ) -> Option<Ctx> {
            // SAFETY: no preconditions; null is checked.
            let ctx = unsafe { ffi::EVP_CIPHER_CTX_new() };
            if ctx.is_null() {
                return None;
            }
            let ctx = Ctx(ctx);
            // SAFETY: `ctx` is fresh, `cipher` a static cipher from libcrypto, the key as
            // long as the cipher's; a zero IV (seal sets its chaining value itself).
            let ok = unsafe {
                ffi::EVP_CipherInit_ex(
                    ctx.0,
                    cipher,
                    std::ptr::null_mut(),
                    enc_key.as_ptr(),
                    [0u8; 16].as_ptr(),
                    c_int::from(enc),
                )
            } == 1;
            // SAFETY: the MAC key ctrl reads `mac_key.len()` bytes.
            let ok = ok
                && unsafe {
                    ffi::EVP_CIPHER_CTX_ctrl(
                        ctx.0,
                        EVP_CTRL_AEAD_SET_MAC_KEY,
                        mac_key.len() as c_int,
                        mac_key.as_ptr() as *mut c_void,
                    )
                } > 0;
            // Absent on CPUs without AES-NI (the provider then has no such cipher).
            ok.then_some(ctx)
        }

        /// Announces a record: the 13-byte TLS AAD whose length field is `len`. Returns
        /// what the ctrl returns (for seal: the MAC and padding bytes to append).
        fn aad(&mut self, len: usize) -> c_int {
            let mut aad = [0u8; 13];
            aad[..11].copy_from_slice(&TLS_AD);
            aad[11..].copy_from_slice(&(len as u16).to_be_bytes());
            // SAFETY: the ctrl reads (and may rewrite) the 13 bytes of `aad`.
            unsafe {
                ffi::EVP_CIPHER_CTX_ctrl(
                    self.0,
                    EVP_CTRL_AEAD_TLS1_AAD,
                    13,
                    aad.as_mut_ptr().cast(),
                )
            }
        }

        /// `EVP_Cipher` in place over all of `buf`; true on success.
        fn run(&mut self, buf: &mut [u8]) -> bool {
            let p = buf.as_mut_ptr();
            // SAFETY: in place over `buf.len()` bytes, which the cipher reads and writes.
            unsafe { EVP_Cipher(self.0, p, p, buf.len() as std::ffi::c_uint) > 0 }
        }
    }

    impl Drop for Ctx {
        fn drop(&mut self) {
            // SAFETY: allocated in `new`, freed only here.
            unsafe { ffi::EVP_CIPHER_CTX_free(self.0) }
        }
    }

    /// OpenSSL's stitched AES-CBC-HMAC cipher in TLS 1.2 mode: a record on the wire is
    /// `explicit IV || ciphertext`; seal encrypts `IV block || plaintext` (so the wire IV
    /// is the encryption of that block), open takes the wire IV as the chaining value.
    pub struct OpenSslStitched {
        seal: Ctx,
        open: Ctx,
        /// The block whose encryption under a zero chaining value is [`IV`], so that a
        /// record sealed for the cross-check starts exactly like ours.
        iv_block: [u8; 16],
        mac_len: usize,
    }

    impl OpenSslStitched {
        pub fn new(alg: CbcAlg, key: &[u8]) -> Option<Self> {
            // SAFETY: these return static cipher descriptions.
            let (cipher, ecb) = unsafe {
                match alg {
                    CbcAlg::Aes128Sha1 => (EVP_aes_128_cbc_hmac_sha1(), Cipher::aes_128_ecb()),
                    CbcAlg::Aes256Sha1 => (EVP_aes_256_cbc_hmac_sha1(), Cipher::aes_256_ecb()),
                    CbcAlg::Aes128Sha256 => (EVP_aes_128_cbc_hmac_sha256(), Cipher::aes_128_ecb()),
                    CbcAlg::Aes256Sha256 => (EVP_aes_256_cbc_hmac_sha256(), Cipher::aes_256_ecb()),
                    CbcAlg::Aes256Sha384 | CbcAlg::TdesSha1 => return None,
                }
            };
            if cipher.is_null() {
                return None;
            }
            let (mac_key, enc_key) = key.split_at(alg.mac_len());
            let seal = Ctx::new(cipher, enc_key, mac_key, true)?;
            let open = Ctx::new(cipher, enc_key, mac_key, false)?;
            let mut ecb_dec = CipherCtx::new().ok()?;
            ecb_dec.decrypt_init(Some(ecb), Some(enc_key), None).ok()?;
            ecb_dec.set_padding(false);
            let mut iv_block = [0u8; 32];
            let n = ecb_dec.cipher_update(&IV, Some(&mut iv_block)).ok()?;
            debug_assert_eq!(n, 16);
            Some(OpenSslStitched {
                seal,
                open,
                iv_block: iv_block[..16].try_into().ok()?,
                mac_len: alg.mac_len(),
            })
        }

        /// Seals the plaintext after the IV block at the front of `buf`, in place.
        fn seal(&mut self, buf: &mut Vec<u8>) {
            let extra = self.seal.aad(buf.len());
            assert!(extra > 0, "TLS AAD");
            buf.resize(buf.len() + extra as usize, 0);
            assert!(self.seal.run(buf), "EVP_Cipher seal");
        }

        /// Opens `IV || record` in place; the plaintext length if it is authentic.
        fn open(&mut self, buf: &mut [u8]) -> Option<usize> {
            if self.open.aad(buf.len()) <= 0 || !self.open.run(buf) {
                return None;
            }
            let pad = usize::from(*buf.last()?) + 1;
            Some(buf.len() - 16 - self.mac_len - pad)
        }
    }

    impl CbcSubject for OpenSslStitched {
        fn name(&self) -> &str {
            "openssl-stitched"
        }

        fn is_ours(&self) -> bool {
            false
        }

        fn measure(&mut self, op: Op, len: usize, budget_ns: u64) -> Sample {
            let mut work = Vec::with_capacity(len + 128);
            // `work` never grows past its capacity, so the copies below always go here.
            let dst: *const u8 = work.as_ptr();
            match op {
                Op::Seal => {
                    // The plaintext goes after the IV block.
                    let pt = SourceAlignedTo::new(&message(len), dst.wrapping_add(16));
                    run_for(budget_ns, || {
                        work.clear();
                        work.extend_from_slice(&self.iv_block);
                        work.extend_from_slice(std::hint::black_box(pt.bytes()));
                        self.seal(&mut work);
                        std::hint::black_box(&work);
                    })
                }
                Op::Open => {
                    let mut record = IV.to_vec();
                    record.extend_from_slice(&self.seal_once(len));
                    let record = SourceAlignedTo::new(&record, dst);
                    run_for(budget_ns, || {
                        work.clear();
                        work.extend_from_slice(std::hint::black_box(record.bytes()));
                        let ok = self.open(&mut work).is_some();
                        assert!(ok, "open of an authentic record failed");
                        std::hint::black_box(&work);
                    })
                }
            }
        }

        /// A record as ours would write it for [`IV`]: the chaining value is reset to
        /// zero first, so that the encrypted IV block is exactly `IV`.
        fn seal_once(&mut self, len: usize) -> Vec<u8> {
            // SAFETY: re-arms the chaining value only (no cipher, no key).
            let rc = unsafe {
                ffi::EVP_CipherInit_ex(
                    self.seal.0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    [0u8; 16].as_ptr(),
                    1,
                )
            };
            assert_eq!(rc, 1, "EVP_CipherInit_ex");
            let mut buf = self.iv_block.to_vec();
            buf.extend_from_slice(&message(len));
            self.seal(&mut buf);
            assert_eq!(buf[..16], IV, "the IV block encrypts to the IV");
            buf.split_off(16)
        }

        fn open_once(&mut self, record: &[u8]) -> Option<Vec<u8>> {
            let mut buf = IV.to_vec();
            buf.extend_from_slice(record);
            let n = self.open(&mut buf)?;
            Some(buf[16..16 + n].to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_side_opens_every_other_side() {
        for alg in CbcAlg::ALL {
            cross_check(alg, &[0, 15, 16, 17, 255, 1350], true, Forced::default()).unwrap();
        }
    }

    /// `--hash-engine`, alone and with `--backend`: RustCrypto's hashes and the portable
    /// cipher run everywhere, so every suite's `ours` takes them when they are forced,
    /// says so, and still opens what every other side seals.
    #[test]
    fn forced_engines() {
        let hash = Forced {
            hash: Some("rustcrypto"),
            cipher: None,
        };
        let both = Forced {
            cipher: Some(gcm_core::Backend::Portable),
            ..hash
        };
        for alg in CbcAlg::ALL {
            for (f, cipher, what) in [
                (hash, "", "(hash engine forced)"),
                (both, "portable", "(hash and cipher engines forced)"),
            ] {
                assert!(can_force(alg, f) || cfg!(not(feature = "tls-cbc")));
                cross_check(alg, &[0, 255, 1350], false, f).unwrap();
                if let Some(e) = our_engines(alg, f) {
                    assert!(
                        e.contains(&format!("{cipher}/rustcrypto/")) && e.ends_with(what),
                        "{e}"
                    );
                }
            }
        }
        assert!(parse_hash_engine("no-such-engine").is_err());
    }

    #[test]
    fn openssl_side_rejects_a_flipped_bit() {
        let mut s = subjects(CbcAlg::Aes128Sha1, false, Forced::default()).remove(1);
        assert_eq!(s.name(), "openssl");
        let mut r = s.seal_once(100);
        assert_eq!(r.len(), 128);
        r[5] ^= 1;
        assert!(s.open_once(&r).is_none());
    }
}

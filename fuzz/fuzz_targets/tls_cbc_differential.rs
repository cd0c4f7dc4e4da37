//! Differential TLS CBC: `tls-cbc-aead` against a plain composition written here from
//! RustCrypto `aes`/`des` (CBC chaining by hand), `hmac`, `sha1` and `sha2`.
//!
//! The composition is the textbook MAC-then-encrypt record: decrypt, read the last byte as
//! the padding length, require every padding byte to equal it and room for the MAC, then
//! compare HMAC(mac_key, ad || len16 || data). It is neither constant time nor clever,
//! which is the point: it is easy to check by reading.
//!
//! Modes, chosen by the input:
//! * open a record of raw fuzzer bytes;
//! * open a record whose *plaintext* the fuzzer writes (CBC-encrypted by the composition),
//!   optionally with the correct MAC put where the padding byte says it sits and with the
//!   padding made consistent, so that accepted records and near misses are common;
//! * seal the fuzzer's plaintext: the record must equal the composition's (minimal
//!   padding) and open back to the plaintext.
//!
//! Accept/reject and the plaintext must agree; a rejected record leaves the buffer empty.
//! Explicit-IV suites go through the `aead` traits, implicit-IV suites through their
//! stateful methods, with a second record chained after the first.
#![no_main]

use cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, BlockSizeUser, typenum::Unsigned};
use hardening_fuzz::Cursor;
use hmac::Mac;
use libfuzzer_sys::fuzz_target;
use tls_cbc_aead::{
    aead::{AeadInOut, Nonce},
    *,
};

#[derive(Clone, Copy, Debug)]
enum Hash {
    Sha1,
    Sha256,
    Sha384,
}

#[derive(Clone, Copy, Debug)]
enum Enc {
    Aes128,
    Aes256,
    Tdes,
}

/// One cipher suite of the composition.
#[derive(Clone, Copy, Debug)]
struct Model {
    hash: Hash,
    enc: Enc,
}

fn cbc_encrypt_with<C: BlockCipherEncrypt>(c: &C, iv: &[u8], data: &[u8]) -> Vec<u8> {
    let bl = <C as BlockSizeUser>::BlockSize::USIZE;
    let mut chain = iv.to_vec();
    let mut out = Vec::with_capacity(data.len());
    for chunk in data.chunks(bl) {
        let mut b = Array::<u8, C::BlockSize>::try_from(chunk).expect("whole blocks");
        for (x, p) in b.iter_mut().zip(&chain) {
            *x ^= p;
        }
        c.encrypt_block(&mut b);
        chain.copy_from_slice(&b);
        out.extend_from_slice(&b);
    }
    out
}

fn cbc_decrypt_with<C: BlockCipherDecrypt>(c: &C, iv: &[u8], data: &[u8]) -> Vec<u8> {
    let bl = <C as BlockSizeUser>::BlockSize::USIZE;
    let mut chain = iv.to_vec();
    let mut out = Vec::with_capacity(data.len());
    for chunk in data.chunks(bl) {
        let mut b = Array::<u8, C::BlockSize>::try_from(chunk).expect("whole blocks");
        c.decrypt_block(&mut b);
        for (x, p) in b.iter_mut().zip(&chain) {
            *x ^= p;
        }
        chain.copy_from_slice(chunk);
        out.extend_from_slice(&b);
    }
    out
}

impl Model {
    fn mac_len(self) -> usize {
        match self.hash {
            Hash::Sha1 => 20,
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }

    fn enc_len(self) -> usize {
        match self.enc {
            Enc::Aes128 => 16,
            Enc::Aes256 => 32,
            Enc::Tdes => 24,
        }
    }

    fn block(self) -> usize {
        match self.enc {
            Enc::Tdes => 8,
            _ => 16,
        }
    }

    fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        fn with<M: Mac + hmac::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = <M as hmac::KeyInit>::new_from_slice(key).expect("any HMAC key");
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().to_vec()
        }
        match self.hash {
            Hash::Sha1 => with::<hmac::Hmac<sha1::Sha1>>(key, parts),
            Hash::Sha256 => with::<hmac::Hmac<sha2::Sha256>>(key, parts),
            Hash::Sha384 => with::<hmac::Hmac<sha2::Sha384>>(key, parts),
        }
    }

    fn cbc(self, encrypt: bool, key: &[u8], iv: &[u8], data: &[u8]) -> Vec<u8> {
        macro_rules! go {
            ($c:ty) => {{
                let c = <$c as cipher::KeyInit>::new_from_slice(key).expect("cipher key");
                if encrypt {
                    cbc_encrypt_with(&c, iv, data)
                } else {
                    cbc_decrypt_with(&c, iv, data)
                }
            }};
        }
        match self.enc {
            Enc::Aes128 => go!(aes::Aes128),
            Enc::Aes256 => go!(aes::Aes256),
            Enc::Tdes => go!(des::TdesEde3),
        }
    }

    /// `mac_key || enc_key`: the key split (the implicit-IV IV is handled by the caller).
    fn split(self, key: &[u8]) -> (&[u8], &[u8]) {
        let (m, rest) = key.split_at(self.mac_len());
        (m, &rest[..self.enc_len()])
    }

    fn seal(self, key: &[u8], iv: &[u8], ad: &[u8], pt: &[u8]) -> Option<Vec<u8>> {
        if ad.len() != 11 || pt.len() > 0xffff {
            return None;
        }
        let (mk, ek) = self.split(key);
        let mut p = pt.to_vec();
        p.extend(self.hmac(mk, &[ad, &(pt.len() as u16).to_be_bytes(), pt]));
        let pad = self.block() - p.len() % self.block();
        p.extend(std::iter::repeat_n((pad - 1) as u8, pad));
        Some(self.cbc(true, ek, iv, &p))
    }

    fn open(self, key: &[u8], iv: &[u8], ad: &[u8], record: &[u8]) -> Option<Vec<u8>> {
        let bl = self.block();
        if ad.len() != 11 || record.is_empty() || record.len() % bl != 0 {
            return None;
        }
        let (mk, ek) = self.split(key);
        let p = self.cbc(false, ek, iv, record);
        let pad = usize::from(*p.last()?);
        let unpadded = p.len().checked_sub(pad + 1)?;
        if p[unpadded..].iter().any(|&b| usize::from(b) != pad) {
            return None;
        }
        let data_len = unpadded.checked_sub(self.mac_len())?;
        if data_len > 0xffff {
            return None;
        }
        let (data, mac) = p[..unpadded].split_at(data_len);
        let want = self.hmac(mk, &[ad, &(data_len as u16).to_be_bytes(), data]);
        (want == mac).then(|| data.to_vec())
    }

    /// A record whose plaintext is `p` (zero-extended to whole blocks); with `fix`, the
    /// padding bytes are made equal to the last byte and the right MAC is put where that
    /// padding says it is, when it fits.
    fn craft(self, key: &[u8], iv: &[u8], ad: &[u8], p: &[u8], fix: bool) -> Vec<u8> {
        let bl = self.block();
        let mut p = p.to_vec();
        if p.is_empty() {
            p.push(0);
        }
        while p.len() % bl != 0 {
            p.push(0);
        }
        if fix {
            let len = p.len();
            let pad = usize::from(p[len - 1]);
            if let Some(data_len) = len.checked_sub(pad + 1 + self.mac_len()) {
                p[len - pad - 1..].fill(pad as u8);
                let (mk, _) = self.split(key);
                let data = p[..data_len].to_vec();
                let mac = self.hmac(mk, &[ad, &(data_len as u16).to_be_bytes(), &data]);
                p[data_len..data_len + mac.len()].copy_from_slice(&mac);
            }
        }
        let (_, ek) = self.split(key);
        self.cbc(true, ek, iv, &p)
    }
}

/// What the input asks for, parsed once.
struct Case<'a> {
    mode: u8,
    fix: bool,
    ad: Vec<u8>,
    body: &'a [u8],
}

fn parse<'a>(c: &mut Cursor<'a>) -> Case<'a> {
    let mode = c.byte() % 3;
    let fix = c.byte() & 1 == 1;
    // Mostly well-formed 11-byte AD; sometimes a wrong length.
    let ad_sel = c.byte();
    let ad_len = if ad_sel < 240 {
        11
    } else {
        usize::from(ad_sel - 240)
    };
    let ad = c.exact(ad_len);
    Case {
        mode,
        fix,
        ad,
        body: c.rest(),
    }
}

/// A key on one of the engine choices this CPU has (`available_engines`, inherent on each
/// suite type), picked by the key's first byte, so that every hash engine and seal path
/// is fuzzed, not only those `KeyInit` picks.
trait OnSomeEngines: Sized {
    fn on_some_engines(key: &[u8]) -> Self;
}

macro_rules! on_some_engines {
    ($($t:ty),*) => {$(
        impl OnSomeEngines for $t {
            fn on_some_engines(key: &[u8]) -> Self {
                let all: Vec<Engines> = <$t>::available_engines().collect();
                let engines = all[usize::from(key[0]) % all.len()];
                <$t>::new_with_engines(key.try_into().expect("key length"), engines)
                    .expect("an available engine choice")
            }
        }
    )*};
}
on_some_engines!(
    Aes128CbcSha1,
    Aes256CbcSha1,
    Aes128CbcSha256,
    Aes256CbcSha256,
    Aes256CbcSha384,
    DesEde3CbcSha1,
    Aes128CbcSha1ImplicitIv,
    Aes256CbcSha1ImplicitIv,
    DesEde3CbcSha1ImplicitIv
);

fn explicit<A: AeadInOut + OnSomeEngines>(m: Model, c: &mut Cursor<'_>) {
    let key = c.exact(m.mac_len() + m.enc_len());
    let iv = c.exact(m.block());
    let case = parse(c);
    let a = A::on_some_engines(&key);
    let nonce = Nonce::<A>::try_from(iv.as_slice()).expect("IV length");
    let open = |record: &[u8]| {
        let mut buf = record.to_vec();
        match a.decrypt_in_place(&nonce, &case.ad, &mut buf) {
            Ok(()) => Some(buf),
            Err(_) => {
                assert!(
                    buf.is_empty(),
                    "{m:?}: failed open left {} bytes",
                    buf.len()
                );
                None
            }
        }
    };
    match case.mode {
        0 => {
            let want = m.open(&key, &iv, &case.ad, case.body);
            assert_eq!(open(case.body), want, "{m:?}: raw record");
        }
        1 => {
            let record = m.craft(&key, &iv, &case.ad, case.body, case.fix);
            let want = m.open(&key, &iv, &case.ad, &record);
            assert_eq!(open(&record), want, "{m:?}: crafted record");
        }
        _ => {
            let mut buf = case.body.to_vec();
            let ours = a
                .encrypt_in_place(&nonce, &case.ad, &mut buf)
                .ok()
                .map(|_| buf);
            let want = m.seal(&key, &iv, &case.ad, case.body);
            assert_eq!(ours, want, "{m:?}: seal");
            if let Some(record) = ours {
                assert_eq!(
                    open(&record).as_deref(),
                    Some(case.body),
                    "{m:?}: round trip"
                );
            }
        }
    }
}

macro_rules! implicit {
    ($ty:ty, $m:expr, $c:expr) => {{
        let m: Model = $m;
        let c: &mut Cursor<'_> = $c;
        let key = c.exact(m.mac_len() + m.enc_len() + m.block());
        let iv = key[m.mac_len() + m.enc_len()..].to_vec();
        let case = parse(c);
        let mut opener = <$ty>::on_some_engines(&key);
        match case.mode {
            0 | 1 => {
                let record = if case.mode == 0 {
                    case.body.to_vec()
                } else {
                    m.craft(&key, &iv, &case.ad, case.body, case.fix)
                };
                let want = m.open(&key, &iv, &case.ad, &record);
                let mut buf = record.clone();
                let got = opener.open_in_place(&case.ad, &mut buf).ok().map(|_| buf);
                assert_eq!(got, want, "{m:?} implicit IV: open");
            }
            _ => {
                // Two records chained: the second uses the last block of the first as IV.
                let mut sealer = <$ty>::on_some_engines(&key);
                let mut chain = iv.clone();
                for part in [
                    case.body,
                    case.body.get(..case.body.len() / 2).unwrap_or(&[]),
                ] {
                    let mut buf = part.to_vec();
                    let ours = sealer.seal_in_place(&case.ad, &mut buf).ok().map(|_| buf);
                    let want = m.seal(&key, &chain, &case.ad, part);
                    assert_eq!(ours, want, "{m:?} implicit IV: seal");
                    let Some(record) = ours else { break };
                    chain = record[record.len() - m.block()..].to_vec();
                    assert_eq!(sealer.iv(), chain.as_slice());
                    let mut buf = record.clone();
                    opener
                        .open_in_place(&case.ad, &mut buf)
                        .expect("round trip");
                    assert_eq!(buf, part, "{m:?} implicit IV: round trip");
                }
            }
        }
    }};
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let (s1, s2, s3) = (Hash::Sha1, Hash::Sha256, Hash::Sha384);
    let (a128, a256, tdes) = (Enc::Aes128, Enc::Aes256, Enc::Tdes);
    let m = |hash, enc| Model { hash, enc };
    match c.byte() % 9 {
        0 => explicit::<Aes128CbcSha1>(m(s1, a128), &mut c),
        1 => explicit::<Aes256CbcSha1>(m(s1, a256), &mut c),
        2 => explicit::<Aes128CbcSha256>(m(s2, a128), &mut c),
        3 => explicit::<Aes256CbcSha256>(m(s2, a256), &mut c),
        4 => explicit::<Aes256CbcSha384>(m(s3, a256), &mut c),
        5 => explicit::<DesEde3CbcSha1>(m(s1, tdes), &mut c),
        6 => implicit!(Aes128CbcSha1ImplicitIv, m(s1, a128), &mut c),
        7 => implicit!(Aes256CbcSha1ImplicitIv, m(s1, a256), &mut c),
        _ => implicit!(DesEde3CbcSha1ImplicitIv, m(s1, tdes), &mut c),
    }
});

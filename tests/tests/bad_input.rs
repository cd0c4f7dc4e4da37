//! Bad input through the public APIs of `gcm-core`, `aes-gcm-vaes` and `tls-cbc-aead`: every case must
//! come back as an error (never a panic), and no failed call may leave plaintext behind.
//!
//! Each test prints its part of a table of the inputs tried and what each returned
//! (`cargo test -p tests --test bad_input -- --nocapture --test-threads=1`), which
//! `.ci/hardening.sh` keeps as a CI log.

use aes_gcm_vaes::{
    Aes128Gcm, Aes256Gcm, AesGcm,
    aead::{
        Aead, AeadInOut, KeyInit,
        arrayvec::ArrayVec,
        consts::{U0, U12},
    },
};
use gcm_core::{Backend, Error, GcmKey, InOutBuf, P_MAX};
use std::fmt::Debug;
use tests::Rng;

/// One line of the table: what was called, with what, and what came back.
struct Table {
    title: &'static str,
    rows: Vec<[String; 3]>,
}

impl Table {
    fn new(title: &'static str) -> Self {
        Self {
            title,
            rows: Vec::new(),
        }
    }

    fn row(&mut self, api: &str, input: impl Into<String>, result: impl Debug) {
        self.rows
            .push([api.to_string(), input.into(), short(format!("{result:?}"))]);
    }

    fn note(&mut self, api: &str, input: impl Into<String>, what: impl Into<String>) {
        self.rows.push([api.to_string(), input.into(), what.into()]);
    }
}

/// Keys and ciphers have long `Debug` forms; the table only needs the variant.
fn short(s: String) -> String {
    if let Some(rest) = s.strip_prefix("Ok(") {
        let inner = rest.split(['(', ' ', '{']).next().unwrap_or("");
        format!("Ok({inner}..)")
    } else {
        s
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // One print per table, so tables from parallel tests do not interleave.
        let mut out = format!(
            "\n### {}\n\n| API | input | returned |\n|---|---|---|\n",
            self.title
        );
        for [a, i, r] in &self.rows {
            out.push_str(&format!("| {a} | {i} | {r} |\n"));
        }
        print!("{out}");
    }
}

fn ok_name<T>(r: &Result<T, impl Debug>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => format!("Err({e:?})"),
    }
}

#[test]
fn wrong_key_lengths() {
    let mut t = Table::new("wrong key lengths");
    let key = [0x42u8; 65];
    for n in (0..=64).filter(|n| !matches!(n, 16 | 24 | 32)) {
        for b in Backend::ALL {
            let r = GcmKey::new_with_backend(&key[..n], b);
            assert_eq!(r.as_ref().err(), Some(&Error::InvalidKeyLength), "{n} {b}");
        }
        let r = GcmKey::new(&key[..n]);
        assert_eq!(r.as_ref().err(), Some(&Error::InvalidKeyLength));
        if matches!(n, 0 | 1 | 15 | 17 | 23 | 25 | 31 | 33 | 64) {
            t.note(
                "GcmKey::new / new_with_backend(every back end)",
                format!("{n}-byte key"),
                ok_name(&r),
            );
        }
    }
    for b in Backend::ALL {
        let r = GcmKey::new_with_backend(&key[..16], b);
        assert_eq!(r.is_ok(), b.is_available(), "{b}");
        t.note(
            "GcmKey::new_with_backend",
            format!("16-byte key, {b}"),
            ok_name(&r),
        );
    }
    for n in [0usize, 15, 17, 24, 32, 64] {
        let r = Aes128Gcm::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "Aes128Gcm::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
    for n in [0usize, 16, 24, 31, 33] {
        let r = Aes256Gcm::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "Aes256Gcm::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
    for n in [0usize, 16, 23, 25, 32] {
        let r = AesGcm::<aes_gcm_vaes::aes::Aes192, U12>::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "AesGcm<aes::Aes192, U12>::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
    for n in [0usize, 15, 17, 24, 32] {
        let r = gcm_core::aes::Aes128::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "gcm_core::aes::Aes128::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
        let r = gcm_core::ghash::GHash::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "gcm_core::ghash::GHash::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
    for n in [0usize, 16, 24, 31, 33] {
        let r = gcm_core::aes::Aes256::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "gcm_core::aes::Aes256::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
    for n in [0usize, 16, 23, 25, 32] {
        let r = gcm_core::aes::Aes192::new_from_slice(&key[..n]);
        assert!(r.is_err());
        t.note(
            "gcm_core::aes::Aes192::new_from_slice",
            format!("{n} bytes"),
            ok_name(&r),
        );
    }
}

#[test]
fn empty_nonce() {
    let mut t = Table::new("empty nonce");
    for b in Backend::available() {
        let key = GcmKey::new_with_backend(&[7; 16], b).unwrap();
        let msg = *b"attack at dawn!!";
        let mut buf = msg;
        let r = key.seal_in_place(&[], b"ad", &mut buf);
        assert_eq!(r, Err(Error::EmptyNonce));
        assert_eq!(buf, msg, "{b}: untouched");
        t.row("GcmKey::seal_in_place", format!("{b}, nonce = []"), r);
        let r = key.open_in_place(&[], b"ad", &mut buf, &[0; 16]);
        assert_eq!(r, Err(Error::EmptyNonce));
        assert_eq!(buf, msg, "{b}: untouched");
        t.row("GcmKey::open_in_place", format!("{b}, nonce = []"), r);
        let mut out = [0u8; 16];
        let r = key.open_inout(&[], b"", InOutBuf::new(&msg, &mut out).unwrap(), &[0; 16]);
        assert_eq!(r, Err(Error::EmptyNonce));
        assert_eq!(out, [0; 16], "{b}: output untouched");
        t.row(
            "GcmKey::open_inout (separate)",
            format!("{b}, nonce = []"),
            r,
        );
    }
    // The typed API with a zero-length nonce type.
    let c = AesGcm::<aes_gcm_vaes::aes::Aes128, U0>::new(&[7; 16].into());
    let mut buf = *b"attack at dawn!!";
    let r = c.encrypt_inout_detached(&Default::default(), b"", (&mut buf[..]).into());
    assert!(r.is_err());
    assert_eq!(&buf, b"attack at dawn!!");
    t.row(
        "AesGcm<Aes128, U0>::encrypt_inout_detached",
        "nonce = []",
        r,
    );
    let r = c.decrypt_inout_detached(
        &Default::default(),
        b"",
        (&mut buf[..]).into(),
        &Default::default(),
    );
    assert!(r.is_err());
    t.row(
        "AesGcm<Aes128, U0>::decrypt_inout_detached",
        "nonce = []",
        r,
    );
    let r = c.decrypt(&Default::default(), &[0u8; 40][..]);
    assert!(r.is_err());
    t.row(
        "AesGcm<Aes128, U0>::decrypt (Aead)",
        "nonce = [], 40 bytes",
        r,
    );
}

#[test]
fn ciphertext_shorter_than_tag_and_bad_tag_lengths() {
    let mut t = Table::new("ciphertext shorter than the tag, bad tag lengths");
    let c = Aes128Gcm::new(&[3; 16].into());
    let nonce = [9u8; 12].into();
    let junk = [0xA5u8; 16];
    for n in 0..16 {
        let r = c.decrypt(&nonce, &junk[..n]);
        assert!(r.is_err(), "{n}");
        let mut v = junk[..n].to_vec();
        let r2 = c.decrypt_in_place(&nonce, b"", &mut v);
        assert!(r2.is_err());
        assert_eq!(v, &junk[..n], "untouched");
        let mut a: ArrayVec<u8, 64> = junk[..n].iter().copied().collect();
        let r3 = c.decrypt_in_place(&nonce, b"", &mut a);
        assert!(r3.is_err());
        assert_eq!(a.as_slice(), &junk[..n], "untouched");
        if matches!(n, 0 | 1 | 15) {
            t.row(
                "Aes128Gcm::decrypt (Aead, Vec)",
                format!("{n}-byte ciphertext"),
                r,
            );
            t.row(
                "Aes128Gcm::decrypt_in_place (Vec)",
                format!("{n} bytes"),
                r2,
            );
            t.row(
                "Aes128Gcm::decrypt_in_place (ArrayVec<64>)",
                format!("{n} bytes"),
                r3,
            );
        }
    }
    for b in Backend::available() {
        let key = GcmKey::new_with_backend(&[3; 16], b).unwrap();
        for tag_len in [0usize, 1, 3, 17, 32] {
            let mut buf = [1u8; 20];
            let r = key.open_in_place(&[9; 12], b"", &mut buf, &[0u8; 32][..tag_len]);
            assert_eq!(r, Err(Error::InvalidTagLength));
            assert_eq!(buf, [1u8; 20], "untouched");
            if b == Backend::Portable || tag_len == 3 {
                t.row(
                    "GcmKey::open_in_place",
                    format!("{b}, {tag_len}-byte tag"),
                    r,
                );
            }
        }
    }
}

/// An anonymous private mapping: real, readable and writable memory that the kernel
/// only backs with pages when they are touched, so a slice of 64 GiB costs nothing as
/// long as nobody reads or writes most of it.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> Result<Self, std::io::Error> {
        // SAFETY: an anonymous mapping with no address hint and no file touches no
        // existing memory; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { ptr: p.cast(), len })
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes of zero-filled (so initialised), readable and
        // writable memory owned by `self` alone; `len` is far below `isize::MAX`; the
        // borrow of `self` keeps it mapped for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the range `new` mapped; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[test]
fn message_and_aad_over_the_limits() {
    let mut t = Table::new("message and associated data over the limits");
    let too_long = usize::try_from(P_MAX + 1).unwrap();
    // Two mappings so that separate input and output buffers can be tried as well.
    let maps = Mapping::new(too_long).and_then(|a| Ok((a, Mapping::new(too_long)?)));
    match maps {
        Ok((mut a, mut b)) => {
            for backend in Backend::available() {
                let key = GcmKey::new_with_backend(&[1; 32], backend).unwrap();
                let huge = a.as_mut_slice();
                let r = key.seal_in_place(&[0; 12], b"", huge);
                assert_eq!(r, Err(Error::MessageTooLong));
                t.row(
                    "GcmKey::seal_in_place",
                    format!("{backend}, P_MAX + 1 bytes"),
                    r,
                );
                let r = key.open_in_place(&[0; 12], b"", huge, &[0; 16]);
                assert_eq!(r, Err(Error::MessageTooLong));
                t.row(
                    "GcmKey::open_in_place",
                    format!("{backend}, P_MAX + 1 bytes"),
                    r,
                );
                let r = key.open_inout(
                    &[0; 12],
                    b"",
                    InOutBuf::new(a.as_mut_slice(), b.as_mut_slice()).unwrap(),
                    &[0; 16],
                );
                assert_eq!(r, Err(Error::MessageTooLong));
                t.row(
                    "GcmKey::open_inout (separate)",
                    format!("{backend}, P_MAX + 1 bytes"),
                    r,
                );
            }
            let c = Aes256Gcm::new(&[1; 32].into());
            let r = c.encrypt_inout_detached(&[0; 12].into(), b"", a.as_mut_slice().into());
            assert!(r.is_err());
            t.row("Aes256Gcm::encrypt_inout_detached", "P_MAX + 1 bytes", r);
            let r = c.decrypt_inout_detached(
                &[0; 12].into(),
                b"",
                a.as_mut_slice().into(),
                &Default::default(),
            );
            assert!(r.is_err());
            t.row("Aes256Gcm::decrypt_inout_detached", "P_MAX + 1 bytes", r);
            // Nothing was written: the ends (and so, page by page, nothing was faulted in)
            // are still zero.
            for m in [&mut a, &mut b] {
                let s = m.as_mut_slice();
                assert_eq!((s[0], s[s.len() / 2], s[s.len() - 1]), (0, 0, 0));
            }
        }
        Err(e) => {
            t.note(
                "mmap",
                format!("{too_long} bytes (MAP_NORESERVE)"),
                format!("refused ({e}): message limit not reachable here, covered by gcm-core's check_lengths unit test"),
            );
        }
    }
    // A_MAX + 1 = 2^61 bytes of associated data cannot exist: user address spaces are
    // 2^47 bytes (2^56 with five-level paging). Show that the kernel refuses such a
    // mapping, so no safe slice of that length can be made; gcm-core's `check_lengths`
    // unit test covers the branch directly.
    let aad_len = usize::try_from(gcm_core::A_MAX + 1).unwrap();
    let r = Mapping::new(aad_len).map(|_| ());
    assert!(r.is_err(), "a 2^61-byte mapping unexpectedly succeeded");
    t.note(
        "mmap for AD of A_MAX + 1 bytes",
        "2^61 bytes",
        format!(
            "{} — no slice that long can exist, so Error::AadTooLong is unreachable through the API (unit-tested in gcm-core)",
            ok_name(&r)
        ),
    );
}

/// QUIC packet and header protection (`aes_gcm_vaes::rustls::quic`, through the keys
/// rustls derives for our TLS 1.3 suites): every bad input is an error and leaves the
/// header bytes and the payload as they were.
#[test]
fn quic_packet_and_header_protection() {
    use aes_gcm_vaes::rustls::{TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384};
    use rustls::Side;
    use rustls::quic::Version;

    let mut t = Table::new("QUIC packet and header protection (aes_gcm_vaes::rustls::quic)");
    let too_long = usize::try_from(P_MAX + 1).unwrap();
    let mut huge = Mapping::new(too_long);
    for suite in [TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384] {
        let name = if suite == TLS13_AES_128_GCM_SHA256 {
            "AES-128"
        } else {
            "AES-256"
        };
        let quic = suite.tls13().unwrap().quic_suite().unwrap();
        let tx = quic.keys(&[9; 8], Side::Client, Version::V1).local;
        let rx = quic.keys(&[9; 8], Side::Server, Version::V1).remote;

        let hp = |api: &str| format!("HeaderProtectionKey::{api} ({name})");
        for protect in [true, false] {
            let api = hp(if protect {
                "encrypt_in_place"
            } else {
                "decrypt_in_place"
            });
            let run = |sample: &[u8], first: &mut u8, pn: &mut [u8]| {
                if protect {
                    tx.header.encrypt_in_place(sample, first, pn)
                } else {
                    rx.header.decrypt_in_place(sample, first, pn)
                }
            };
            for sample_len in [0usize, 1, 15, 17, 32] {
                let (mut first, mut pn) = (0xc3u8, [1u8, 2, 3, 4]);
                let r = run(&vec![5; sample_len], &mut first, &mut pn);
                assert!(matches!(r, Err(rustls::Error::General(_))), "{r:?}");
                assert_eq!((first, pn), (0xc3, [1, 2, 3, 4]), "changed on error");
                t.row(&api, format!("{sample_len}-byte sample"), r);
            }
            for pn_len in [5usize, 8] {
                let (mut first, mut pn) = (0x43u8, vec![6u8; pn_len]);
                let r = run(&[5; 16], &mut first, &mut pn);
                assert!(matches!(r, Err(rustls::Error::General(_))), "{r:?}");
                assert_eq!((first, &pn[..]), (0x43, &vec![6u8; pn_len][..]));
                t.row(&api, format!("{pn_len}-byte packet number"), r);
            }
        }

        let api = format!("PacketKey::decrypt_in_place ({name})");
        let header = [0x41u8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1];
        for len in [0usize, 1, 15, 16] {
            let mut payload = vec![7u8; len];
            let r = rx
                .packet
                .decrypt_in_place(1, &header, &mut payload)
                .map(<[u8]>::len);
            assert!(matches!(r, Err(rustls::Error::DecryptError)), "{r:?}");
            assert_eq!(payload, vec![7u8; len]);
            t.row(&api, format!("{len}-byte payload (tag is 16)"), r);
        }
        let mut sealed = vec![0x33u8; 1200];
        let tag = tx.packet.encrypt_in_place(1, &header, &mut sealed).unwrap();
        sealed.extend_from_slice(tag.as_ref());
        let cases: [(&str, u64, &[u8], usize); 5] = [
            (
                "genuine packet, wrong packet number",
                2,
                &header,
                usize::MAX,
            ),
            (
                "genuine packet, header (AD) changed",
                1,
                &header[..10],
                usize::MAX,
            ),
            ("first ciphertext bit flipped", 1, &header, 0),
            ("last ciphertext bit flipped", 1, &header, 1199),
            ("tag bit flipped", 1, &header, 1215),
        ];
        for (what, pn, h, flip) in cases {
            let mut bad = sealed.clone();
            if let Some(b) = bad.get_mut(flip) {
                *b ^= 0x80;
            }
            let before = bad.clone();
            let r = rx.packet.decrypt_in_place(pn, h, &mut bad).map(<[u8]>::len);
            assert!(
                matches!(r, Err(rustls::Error::DecryptError)),
                "{what}: {r:?}"
            );
            assert_eq!(bad, before, "{what}: the ciphertext is back");
            t.row(&api, what, r);
        }
        let mut copy = sealed.clone();
        let r = rx
            .packet
            .decrypt_in_place_for_path(1, 1, &header, &mut copy)
            .map(<[u8]>::len);
        assert!(matches!(r, Err(rustls::Error::DecryptError)), "{r:?}");
        assert_eq!(copy, sealed);
        t.row(
            &format!("PacketKey::decrypt_in_place_for_path ({name})"),
            "packet sealed for no path, opened for path 1",
            r,
        );

        match &mut huge {
            Ok(map) => {
                let payload = map.as_mut_slice();
                let r = tx.packet.encrypt_in_place(1, &header, payload);
                assert!(
                    matches!(r, Err(rustls::Error::EncryptError)),
                    "{:?}",
                    r.is_ok()
                );
                t.row(
                    &format!("PacketKey::encrypt_in_place ({name})"),
                    "P_MAX + 1 bytes of payload",
                    r.map(|_| ()),
                );
                let r = tx.packet.encrypt_in_place_for_path(3, 1, &header, payload);
                assert!(matches!(r, Err(rustls::Error::EncryptError)));
                t.row(
                    &format!("PacketKey::encrypt_in_place_for_path ({name})"),
                    "P_MAX + 1 bytes of payload",
                    r.map(|_| ()),
                );
                assert_eq!((payload[0], payload[payload.len() - 1]), (0, 0));
            }
            Err(e) => t.note(
                "mmap",
                format!("{too_long} bytes (MAP_NORESERVE)"),
                format!("refused ({e}): payload limit not reachable here"),
            ),
        }
    }
}

#[test]
fn arrayvec_buffers_too_small() {
    let mut t = Table::new("arrayvec buffers too small");
    let c = Aes128Gcm::new(&[5; 16].into());
    let nonce = [2u8; 12].into();
    let msg = b"twenty bytes of text";

    // Room for the message but not for the tag.
    let mut a: ArrayVec<u8, 30> = msg.iter().copied().collect();
    let r = c.encrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_err());
    // The blanket `encrypt_in_place` encrypts, then fails to append the tag: what is
    // left is ciphertext without its tag, not the plaintext.
    assert_eq!(a.len(), msg.len());
    assert_ne!(a.as_slice(), msg);
    t.row(
        "Aes128Gcm::encrypt_in_place",
        "20-byte message in ArrayVec<u8, 30> (needs 36)",
        r,
    );
    t.note(
        "",
        "buffer afterwards",
        "20 bytes of ciphertext, no tag (not the plaintext)",
    );

    let mut a: ArrayVec<u8, 16> = [1u8].into_iter().collect();
    let r = c.encrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_err());
    assert_ne!(a.as_slice(), &[1u8]);
    t.row(
        "Aes128Gcm::encrypt_in_place",
        "1-byte message in ArrayVec<u8, 16>",
        r,
    );

    let mut a: ArrayVec<u8, 0> = ArrayVec::new();
    let r = c.encrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_err());
    t.row(
        "Aes128Gcm::encrypt_in_place",
        "empty message in ArrayVec<u8, 0>",
        r,
    );

    // Exactly enough room works, and a tampered ciphertext in an ArrayVec is restored.
    let mut a: ArrayVec<u8, 36> = msg.iter().copied().collect();
    let r = c.encrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_ok());
    t.row(
        "Aes128Gcm::encrypt_in_place",
        "20-byte message in ArrayVec<u8, 36>",
        r,
    );
    let sealed = a.clone();
    a[3] ^= 0x10;
    let tampered = a.clone();
    let r = c.decrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_err());
    assert_eq!(
        a, tampered,
        "failed open leaves the ciphertext and tag as they were"
    );
    t.row(
        "Aes128Gcm::decrypt_in_place",
        "tampered 36-byte record in ArrayVec<u8, 36>",
        r,
    );
    a[3] ^= 0x10;
    assert_eq!(a, sealed);
    assert!(c.decrypt_in_place(&nonce, b"", &mut a).is_ok());
    assert_eq!(a.as_slice(), msg);

    let mut a: ArrayVec<u8, 8> = [0u8; 8].into_iter().collect();
    let r = c.decrypt_in_place(&nonce, b"", &mut a);
    assert!(r.is_err());
    assert_eq!(a.as_slice(), &[0u8; 8]);
    t.row(
        "Aes128Gcm::decrypt_in_place",
        "8 bytes in ArrayVec<u8, 8>",
        r,
    );
}

/// A tampered message: what was changed, nonce, AD, ciphertext, tag.
type Case = (&'static str, Vec<u8>, Vec<u8>, Vec<u8>, [u8; 16]);

#[test]
fn tampered_messages_leave_no_plaintext() {
    let mut t = Table::new("tampered messages (each back end)");
    let mut rng = Rng::new(6);
    for b in Backend::available() {
        for len in [0usize, 1, 16, 100, 513] {
            let key = GcmKey::new_with_backend(&rng.bytes(16), b).unwrap();
            let nonce = rng.bytes(12);
            let aad = rng.bytes(5);
            let msg = rng.bytes(len);
            let mut ct = msg.clone();
            let tag = key.seal_in_place(&nonce, &aad, &mut ct).unwrap();
            let mut cases: Vec<Case> = vec![
                ("tag bit", nonce.clone(), aad.clone(), ct.clone(), {
                    let mut x = tag;
                    x[15] ^= 0x80;
                    x
                }),
                (
                    "nonce bit",
                    {
                        let mut n = nonce.clone();
                        n[0] ^= 1;
                        n
                    },
                    aad.clone(),
                    ct.clone(),
                    tag,
                ),
                (
                    "AD bit",
                    nonce.clone(),
                    {
                        let mut a = aad.clone();
                        a[4] ^= 2;
                        a
                    },
                    ct.clone(),
                    tag,
                ),
            ];
            if len > 0 {
                let mut c2 = ct.clone();
                c2[len - 1] ^= 4;
                cases.push(("ciphertext bit", nonce.clone(), aad.clone(), c2, tag));
            }
            for (what, n, a, c, tg) in cases {
                let mut buf = c.clone();
                let r = key.open_in_place(&n, &a, &mut buf, &tg);
                assert_eq!(r, Err(Error::AuthenticationFailed), "{b} {what} {len}");
                assert_eq!(buf, c, "in place: ciphertext restored");
                let mut out = vec![0x77; len];
                let r2 = key.open_inout(&n, &a, InOutBuf::new(&c, &mut out).unwrap(), &tg);
                assert_eq!(r2, Err(Error::AuthenticationFailed));
                assert!(out.iter().all(|&x| x == 0), "separate: output zeroed");
                if len == 513 {
                    t.note(
                        "GcmKey::open_in_place / open_inout",
                        format!("{b}, {len}-byte message, flipped {what}"),
                        format!("{r:?}; buffer = ciphertext / output zeroed"),
                    );
                }
            }
        }
    }
}

/// What happened to a batch of bad records: every result and the state of the buffer.
#[derive(Default)]
struct Batch {
    tried: usize,
    errors: usize,
    left_empty: usize,
}

impl Batch {
    fn add(&mut self, r: Result<(), aes_gcm_vaes::aead::Error>, buf: &[u8]) {
        self.tried += 1;
        if r.is_err() {
            self.errors += 1;
        }
        if buf.is_empty() {
            self.left_empty += 1;
        }
    }

    fn summary(&self) -> String {
        assert_eq!(self.errors, self.tried, "a bad TLS record was accepted");
        assert_eq!(
            self.left_empty, self.tried,
            "a failed TLS open left bytes behind"
        );
        format!("{} × Err(Error), buffer empty each time", self.errors)
    }
}

/// Bad records for one explicit-IV TLS suite; returns rows for the table.
fn tls_explicit_suite<A: AeadInOut + KeyInit>(name: &str, key_len: usize, t: &mut Table) {
    use aes_gcm_vaes::aead::{AeadCore, Nonce, array::typenum::Unsigned};
    let block = <A as AeadCore>::NonceSize::USIZE;
    let mut rng = Rng::new(key_len as u64 * 31 + block as u64);
    for n in [0, key_len - 1, key_len + 1] {
        let r = A::new_from_slice(&rng.bytes(n));
        assert!(r.is_err());
        t.note(
            &format!("{name}::new_from_slice"),
            format!("{n}-byte key"),
            ok_name(&r),
        );
    }
    let a = A::new_from_slice(&rng.bytes(key_len)).unwrap();
    let iv = rng.bytes(block);
    let nonce = Nonce::<A>::try_from(iv.as_slice()).unwrap();
    let ad = rng.bytes(11);

    // Random bytes as records, every length 0..=600.
    let mut random = Batch::default();
    for len in 0..=600 {
        let mut buf = rng.bytes(len);
        let r = a.decrypt_in_place(&nonce, &ad, &mut buf);
        random.add(r, &buf);
    }
    t.note(
        &format!("{name}::decrypt_in_place"),
        "random records, every length 0..=600",
        random.summary(),
    );

    // Genuine records of every length up to 600, each tampered in one way: a bit of the
    // record (anywhere), of the IV or of the AD, the last block dropped, a block added.
    let mut tampered = Batch::default();
    let mut lengths = std::collections::BTreeSet::new();
    for pt_len in 0..=600 {
        let mut rec = rng.bytes(pt_len);
        a.encrypt_in_place(&nonce, &ad, &mut rec).unwrap();
        if rec.len() > 600 {
            break;
        }
        lengths.insert(rec.len());
        let how = pt_len % 5;
        let (mut n2, mut ad2, mut buf) = (iv.clone(), ad.clone(), rec.clone());
        match how {
            0 => {
                let i = rng.below(buf.len());
                buf[i] ^= 1 << rng.below(8);
            }
            1 => n2[rng.below(block)] ^= 0x80,
            2 => ad2[rng.below(11)] ^= 1,
            3 => buf.truncate(buf.len() - block),
            _ => buf.extend_from_slice(&rng.bytes(block)),
        }
        let nonce2 = Nonce::<A>::try_from(n2.as_slice()).unwrap();
        let r = a.decrypt_in_place(&nonce2, &ad2, &mut buf);
        tampered.add(r, &buf);
        // Untampered, it opens.
        let mut ok = rec.clone();
        a.decrypt_in_place(&nonce, &ad, &mut ok).unwrap();
    }
    t.note(
        &format!("{name}::decrypt_in_place"),
        format!(
            "genuine records of all {} lengths {}..={} with a bit of record/IV/AD flipped, a block dropped or added",
            lengths.len(),
            lengths.first().unwrap(),
            lengths.last().unwrap()
        ),
        tampered.summary(),
    );

    // AD of the wrong length, both ways.
    for n in [0usize, 10, 12, 13] {
        let mut buf = b"hello".to_vec();
        let r = a.encrypt_in_place(&nonce, &rng.bytes(n), &mut buf);
        assert!(r.is_err());
        assert_eq!(buf, b"hello", "a refused seal leaves the input as it was");
        let mut rec = b"hello".to_vec();
        a.encrypt_in_place(&nonce, &ad, &mut rec).unwrap();
        let r2 = a.decrypt_in_place(&nonce, &rng.bytes(n), &mut rec);
        assert!(r2.is_err() && rec.is_empty());
        if n == 10 || n == 12 {
            t.note(
                &format!("{name}::encrypt_in_place / decrypt_in_place"),
                format!("{n}-byte AD"),
                format!(
                    "{}, input untouched / {}, buffer empty",
                    ok_name(&r),
                    ok_name(&r2)
                ),
            );
        }
    }

    // Too small a fixed buffer for the sealed record.
    let mut small: ArrayVec<u8, 40> = (0..30u8).collect();
    let r = a.encrypt_in_place(&nonce, &ad, &mut small);
    assert!(r.is_err());
    assert_eq!(small.as_slice(), &(0..30u8).collect::<Vec<_>>()[..]);
    t.note(
        &format!("{name}::encrypt_in_place"),
        "30-byte plaintext in ArrayVec<u8, 40>",
        format!(
            "{}, plaintext left as it was (nothing encrypted)",
            ok_name(&r)
        ),
    );

    // Over the length limits, and the detached methods that cannot work for TLS records.
    let mut big = vec![0u8; tls_cbc_aead::MAX_PLAINTEXT_LEN + 1];
    let r = a.encrypt_in_place(&nonce, &ad, &mut big);
    assert!(r.is_err());
    t.note(
        &format!("{name}::encrypt_in_place"),
        "plaintext of 2^16 bytes",
        ok_name(&r),
    );
    let mut huge =
        vec![0u8; (tls_cbc_aead::MAX_PLAINTEXT_LEN + 48 + 256 + 16) / block * block + block];
    let r = a.decrypt_in_place(&nonce, &ad, &mut huge);
    assert!(r.is_err() && huge.is_empty());
    t.note(
        &format!("{name}::decrypt_in_place"),
        "record longer than any sealed record",
        format!("{}, buffer empty", ok_name(&r)),
    );
    let mut buf = [0u8; 32];
    let r = a.encrypt_inout_detached(&nonce, &ad, (&mut buf[..]).into());
    assert!(r.is_err());
    t.note(
        &format!("{name}::encrypt_inout_detached"),
        "any input",
        ok_name(&r),
    );
}

#[test]
fn tls_records_of_every_length() {
    use tls_cbc_aead::*;
    let mut t = Table::new("TLS CBC records (every suite)");
    tls_explicit_suite::<Aes128CbcSha1>("Aes128CbcSha1", 36, &mut t);
    tls_explicit_suite::<Aes256CbcSha1>("Aes256CbcSha1", 52, &mut t);
    tls_explicit_suite::<Aes128CbcSha256>("Aes128CbcSha256", 48, &mut t);
    tls_explicit_suite::<Aes256CbcSha256>("Aes256CbcSha256", 64, &mut t);
    tls_explicit_suite::<Aes256CbcSha384>("Aes256CbcSha384", 80, &mut t);
    tls_explicit_suite::<DesEde3CbcSha1>("DesEde3CbcSha1", 44, &mut t);

    macro_rules! implicit {
        ($ty:ty, $name:literal, $key_len:expr) => {{
            let mut rng = Rng::new($key_len);
            let r = <$ty>::new_from_slice(&rng.bytes($key_len - 1));
            assert!(r.is_err());
            t.note(
                concat!($name, "::new_from_slice"),
                format!("{}-byte key", $key_len - 1),
                ok_name(&r),
            );
            let key = rng.bytes($key_len);
            let mut random = Batch::default();
            for len in 0..=600 {
                let mut s = <$ty>::new_from_slice(&key).unwrap();
                let mut buf = rng.bytes(len);
                let r = s.open_in_place(&rng.bytes(11), &mut buf);
                random.add(r, &buf);
            }
            t.note(
                concat!($name, "::open_in_place"),
                "random records, every length 0..=600",
                random.summary(),
            );
            let mut tampered = Batch::default();
            for len in 0..=560 {
                let (mut sealer, mut opener) = (
                    <$ty>::new_from_slice(&key).unwrap(),
                    <$ty>::new_from_slice(&key).unwrap(),
                );
                let ad = rng.bytes(11);
                let mut rec = rng.bytes(len);
                sealer.seal_in_place(&ad, &mut rec).unwrap();
                let i = rng.below(rec.len());
                rec[i] ^= 1 << rng.below(8);
                let r = opener.open_in_place(&ad, &mut rec);
                tampered.add(r, &rec);
            }
            t.note(
                concat!($name, "::open_in_place"),
                "genuine records of plaintext 0..=560 bytes, one bit flipped",
                tampered.summary(),
            );
        }};
    }
    implicit!(Aes128CbcSha1ImplicitIv, "Aes128CbcSha1ImplicitIv", 52);
    implicit!(Aes256CbcSha1ImplicitIv, "Aes256CbcSha1ImplicitIv", 68);
    implicit!(DesEde3CbcSha1ImplicitIv, "DesEde3CbcSha1ImplicitIv", 52);
}

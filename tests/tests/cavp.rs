//! NIST's CAVP AES-GCM vectors (CAVS 14.0, `gcmEncryptExtIV{128,192,256}.rsp` and
//! `gcmDecrypt{128,192,256}.rsp`: 47,250 vectors) on every back end this CPU has, through
//! `gcm_core::GcmKey` and through the typed `aes-gcm-vaes` API with the nonce and tag sizes
//! the files use: 8-, 96- and 1024-bit IVs (`U1`, `U12`, `U128`), tags of 32 to 128 bits
//! (`U4`, `U8` with `hazmat`, `U12` to `U16`), 0 to 720 bits of associated data, and the
//! decryption files' forgeries, which must be rejected with the ciphertext left in place.
//!
//! The files are not in the repository (about 18 MB): `bash tests/fetch-cavp.sh` puts
//! them in `target/cavp` (or the directory it is given; `CAVP_DIR` tells this test
//! where, if not there). Without them the test says so and passes, unless
//! `CAVP_REQUIRED` is set, as CI sets it after fetching them.

use aes_gcm_vaes::{
    AesGcm, AesKeySize, Key, Nonce, Tag, TagSize,
    aead::{
        AeadInOut,
        array::ArraySize,
        consts::{U1, U4, U8, U12, U13, U14, U15, U16, U128},
    },
    aes,
};
use gcm_core::{Backend, GcmKey};
use std::collections::HashMap;
use tests::cavp::{self, hex};

/// One vector: `pt` is `None` where the file says `FAIL` (a forgery to reject).
struct Vector {
    count: usize,
    key: Vec<u8>,
    iv: Vec<u8>,
    aad: Vec<u8>,
    ct: Vec<u8>,
    tag: Vec<u8>,
    pt: Option<Vec<u8>>,
}

/// The six files, with how many vectors each holds and how many of those are forgeries.
const FILES: [(&str, usize, usize); 6] = [
    ("gcmEncryptExtIV128.rsp", 7875, 0),
    ("gcmEncryptExtIV192.rsp", 7875, 0),
    ("gcmEncryptExtIV256.rsp", 7875, 0),
    ("gcmDecrypt128.rsp", 7875, 4011),
    ("gcmDecrypt192.rsp", 7875, 3978),
    ("gcmDecrypt256.rsp", 7875, 3919),
];

/// One vector's fields as the file spells them, with the section header in force.
struct Record {
    header: HashMap<String, usize>,
    fields: HashMap<String, String>,
    fail: bool,
}

impl Record {
    /// The vector, its field lengths checked against the header's bit lengths
    /// (`[Keylen = 128]`, `[IVlen = 96]`, ...), so that a field read wrongly fails here
    /// rather than passing as an odd vector.
    fn vector(&self, name: &str) -> Vector {
        let get = |k: &str| {
            hex(self
                .fields
                .get(k)
                .unwrap_or_else(|| panic!("{name}: a vector without {k}")))
        };
        let v = Vector {
            count: self.fields["Count"].parse().expect("Count"),
            key: get("Key"),
            iv: get("IV"),
            aad: get("AAD"),
            ct: get("CT"),
            tag: get("Tag"),
            pt: (!self.fail).then(|| get("PT")),
        };
        let bits = |k: &str| self.header[k];
        let at = format!("{name} Count {}", v.count);
        assert_eq!(v.key.len() * 8, bits("Keylen"), "{at}");
        assert_eq!(v.iv.len() * 8, bits("IVlen"), "{at}");
        assert_eq!(v.ct.len() * 8, bits("PTlen"), "{at}");
        assert_eq!(v.aad.len() * 8, bits("AADlen"), "{at}");
        assert_eq!(v.tag.len() * 8, bits("Taglen"), "{at}");
        if let Some(pt) = &v.pt {
            assert_eq!(pt.len(), v.ct.len(), "{at}");
        }
        v
    }
}

/// Parses a `.rsp` file: `[name = bits]` section headers, then vectors, each starting at
/// its `Count = n` line, of `Name = hex` lines and, for a forgery, a bare `FAIL`.
fn parse(name: &str, text: &str) -> Vec<Vector> {
    let mut header = HashMap::new();
    let mut records: Vec<Record> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let (k, v) = h.split_once(" = ").expect("[name = value]");
            header.insert(k.to_string(), v.parse().expect("a number of bits"));
            continue;
        }
        let last = records.last_mut();
        if line == "FAIL" {
            last.expect("FAIL inside a vector").fail = true;
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{name}: unexpected line {line:?}"));
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        if k == "Count" {
            records.push(Record {
                header: header.clone(),
                fields: HashMap::from([(k, v)]),
                fail: false,
            });
        } else {
            let r = last.unwrap_or_else(|| panic!("{name}: {k} before any Count"));
            r.fields.insert(k, v);
        }
    }
    records.iter().map(|r| r.vector(name)).collect()
}

/// Seals (for a vector with a plaintext) and opens `v` through `GcmKey` on `backend`.
fn core_case(v: &Vector, backend: Backend) -> Result<(), String> {
    let key = GcmKey::new_with_backend(&v.key, backend).map_err(|e| format!("key: {e:?}"))?;
    if let Some(pt) = &v.pt {
        let mut buf = pt.clone();
        let tag = key
            .seal_in_place(&v.iv, &v.aad, &mut buf)
            .map_err(|e| format!("seal: {e:?}"))?;
        if buf != v.ct || tag[..v.tag.len()] != v.tag[..] {
            return Err("seal: wrong ciphertext or tag".into());
        }
    }
    let mut buf = v.ct.clone();
    let opened = key.open_in_place(&v.iv, &v.aad, &mut buf, &v.tag).is_ok();
    open_verdict(v, opened, &buf)
}

/// Whether an open of `v`'s ciphertext (in place, leaving `buf`) did what the file
/// says: the plaintext for a valid vector; for a forgery, a rejection with the
/// ciphertext left in place.
fn open_verdict(v: &Vector, opened: bool, buf: &[u8]) -> Result<(), String> {
    match (opened, &v.pt) {
        (true, Some(pt)) if buf == pt.as_slice() => Ok(()),
        (true, Some(_)) => Err("open: wrong plaintext".into()),
        (true, None) => Err("open: accepted a forgery".into()),
        (false, None) if buf == v.ct.as_slice() => Ok(()),
        (false, None) => Err("open: rejected, but the ciphertext was not left in place".into()),
        (false, Some(_)) => Err("open: rejected a valid vector".into()),
    }
}

/// The same through `AesGcm<A, N, T>` (`aead` 0.6 `AeadInOut`, detached tags).
fn api_case<A, N, T>(v: &Vector, backend: Backend) -> Result<(), String>
where
    A: AesKeySize,
    N: ArraySize,
    T: TagSize,
{
    let key = Key::<AesGcm<A, N, T>>::try_from(&v.key[..]).map_err(|_| "key size")?;
    let gcm = AesGcm::<A, N, T>::new_with_backend(&key, backend).map_err(|_| "key")?;
    let nonce = Nonce::<N>::try_from(&v.iv[..]).map_err(|_| "nonce size")?;
    let tag = Tag::<T>::try_from(&v.tag[..]).map_err(|_| "tag size")?;
    if let Some(pt) = &v.pt {
        let mut buf = pt.clone();
        let sealed = gcm
            .encrypt_inout_detached(&nonce, &v.aad, (&mut buf[..]).into())
            .map_err(|_| "seal failed")?;
        if buf != v.ct || sealed != tag {
            return Err("seal: wrong ciphertext or tag".into());
        }
    }
    let mut buf = v.ct.clone();
    let opened = gcm
        .decrypt_inout_detached(&nonce, &v.aad, (&mut buf[..]).into(), &tag)
        .is_ok();
    open_verdict(v, opened, &buf)
}

/// [`api_case`] with the types that fit `v`'s key, IV and tag lengths.
fn api_case_typed(v: &Vector, backend: Backend) -> Result<(), String> {
    macro_rules! by_tag {
        ($a:ty, $n:ty) => {
            match v.tag.len() {
                4 => api_case::<$a, $n, U4>(v, backend),
                8 => api_case::<$a, $n, U8>(v, backend),
                12 => api_case::<$a, $n, U12>(v, backend),
                13 => api_case::<$a, $n, U13>(v, backend),
                14 => api_case::<$a, $n, U14>(v, backend),
                15 => api_case::<$a, $n, U15>(v, backend),
                16 => api_case::<$a, $n, U16>(v, backend),
                n => Err(format!("no tag type for {n} bytes")),
            }
        };
    }
    macro_rules! by_iv {
        ($a:ty) => {
            match v.iv.len() {
                1 => by_tag!($a, U1),
                12 => by_tag!($a, U12),
                128 => by_tag!($a, U128),
                n => Err(format!("no nonce type for {n} bytes")),
            }
        };
    }
    match v.key.len() {
        16 => by_iv!(aes::Aes128),
        24 => by_iv!(aes::Aes192),
        32 => by_iv!(aes::Aes256),
        n => Err(format!("no AES for a {n}-byte key")),
    }
}

#[test]
fn cavp_aes_gcm_every_vector_every_backend() {
    let Some(dir) = cavp::dir(&FILES.map(|(f, ..)| f), "AES-GCM") else {
        return;
    };
    for (file, count, forgeries) in FILES {
        let text = std::fs::read_to_string(dir.join(file)).expect("readable file");
        let vectors = parse(file, &text);
        assert_eq!(vectors.len(), count, "{file}: every vector read");
        let fails = vectors.iter().filter(|v| v.pt.is_none()).count();
        assert_eq!(fails, forgeries, "{file}: every FAIL read");
        for backend in Backend::available() {
            let mut failures = Vec::new();
            for v in &vectors {
                for (how, r) in [
                    ("GcmKey", core_case(v, backend)),
                    ("AesGcm", api_case_typed(v, backend)),
                ] {
                    if let Err(e) = r {
                        failures.push(format!("Count {} via {how}: {e}", v.count));
                    }
                }
            }
            let what = format!(
                "{} vectors ({fails} forgeries) through GcmKey and AesGcm",
                vectors.len()
            );
            cavp::report(file, backend, &what, &failures);
        }
    }
}

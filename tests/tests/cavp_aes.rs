//! NIST's AESAVS vectors (CAVS 11.1) for the block cipher itself: the known-answer files
//! (`GFSbox`, `KeySbox`, `VarKey`, `VarTxt`) and the multi-block message files (`MMT`,
//! 1 to 10 blocks) for ECB and CBC, AES-128/192/256, encryption and decryption sections,
//! on every back end this CPU has, through `gcm_core::aes::Aes128/192/256`:
//! - ECB one block at a time (`encrypt_block`, `decrypt_block`) and as one call over the
//!   whole message (`encrypt_blocks`, `decrypt_blocks`: the back ends' parallel paths);
//! - CBC through the types' own `cbc_encrypt`/`cbc_decrypt` (what `tls-cbc-aead` runs;
//!   decryption in parallel), checking the chaining value left for what follows, and
//!   chained block by block over the block functions.
//!
//! Each vector runs both ways: a decryption vector is also encrypted, and the other way.
//!
//! The files come with the AES-GCM ones (`bash tests/fetch-cavp.sh`, see `cavp.rs`).

use cipher::{
    Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit, consts::U16, typenum::Unsigned,
};
use gcm_core::Backend;
use gcm_core::aes::{Aes128, Aes192, Aes256};
use std::collections::BTreeMap;
use tests::cavp::{self, hex};

/// One vector of a file: which section it is in, and its fields.
struct Vector {
    encrypt: bool,
    count: usize,
    key: Vec<u8>,
    iv: Option<[u8; 16]>,
    plaintext: Vec<u8>,
    ciphertext: Vec<u8>,
}

/// Parses an AESAVS `.rsp` file: `[ENCRYPT]` and `[DECRYPT]` sections of vectors, each
/// starting at its `COUNT = n` line, with `KEY`, `IV` (CBC), `PLAINTEXT` and `CIPHERTEXT`.
fn parse(name: &str, text: &str) -> Vec<Vector> {
    let mut section = None;
    let mut records: Vec<(bool, BTreeMap<String, String>)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line {
            "[ENCRYPT]" => section = Some(true),
            "[DECRYPT]" => section = Some(false),
            _ => {
                let (k, v) = line
                    .split_once('=')
                    .unwrap_or_else(|| panic!("{name}: unexpected line {line:?}"));
                let (k, v) = (k.trim().to_string(), v.trim().to_string());
                if k == "COUNT" {
                    let encrypt = section.unwrap_or_else(|| panic!("{name}: no section"));
                    records.push((encrypt, BTreeMap::new()));
                }
                let (_, fields) = records
                    .last_mut()
                    .unwrap_or_else(|| panic!("{name}: {k} before any COUNT"));
                assert!(fields.insert(k, v).is_none(), "{name}: a field twice");
            }
        }
    }
    records
        .into_iter()
        .map(|(encrypt, f)| {
            let get = |k: &str| hex(f.get(k).unwrap_or_else(|| panic!("{name}: no {k}")));
            let v = Vector {
                encrypt,
                count: f["COUNT"].parse().expect("COUNT"),
                key: get("KEY"),
                iv: f
                    .get("IV")
                    .map(|iv| hex(iv).try_into().expect("16-byte IV")),
                plaintext: get("PLAINTEXT"),
                ciphertext: get("CIPHERTEXT"),
            };
            let at = format!("{name} COUNT {}", v.count);
            assert_eq!(v.plaintext.len(), v.ciphertext.len(), "{at}");
            assert!(
                !v.plaintext.is_empty() && v.plaintext.len().is_multiple_of(16),
                "{at}"
            );
            v
        })
        .collect()
}

type Block = Array<u8, U16>;

fn blocks(bytes: &[u8]) -> Vec<Block> {
    bytes
        .chunks(16)
        .map(|c| Block::try_from(c).unwrap())
        .collect()
}

fn xor(a: &mut Block, b: &Block) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x ^= y);
}

/// The checks of one vector on one key; `Err` names the first that failed.
fn check<C>(
    v: &Vector,
    cipher: &C,
    cbc_encrypt: impl Fn(&C, &mut [u8; 16], &mut [[u8; 16]]),
    cbc_decrypt: impl Fn(&C, &mut [u8; 16], &mut [[u8; 16]]),
) -> Result<(), &'static str>
where
    C: BlockCipherEncrypt<BlockSize = U16> + BlockCipherDecrypt,
{
    let (pt, ct) = (blocks(&v.plaintext), blocks(&v.ciphertext));
    let Some(iv) = v.iv else {
        // ECB: block by block, then the whole message in one call.
        for (p, c) in pt.iter().zip(&ct) {
            let mut b = *p;
            cipher.encrypt_block(&mut b);
            (b == *c).then_some(()).ok_or("ECB encrypt_block")?;
            cipher.decrypt_block(&mut b);
            (b == *p).then_some(()).ok_or("ECB decrypt_block")?;
        }
        let mut all = pt.clone();
        cipher.encrypt_blocks(&mut all);
        (all == ct).then_some(()).ok_or("ECB encrypt_blocks")?;
        cipher.decrypt_blocks(&mut all);
        return (all == pt).then_some(()).ok_or("ECB decrypt_blocks");
    };
    // CBC through the type's own mode, which must leave the last ciphertext block as
    // the chaining value.
    let as_arrays = |b: &[Block]| -> Vec<[u8; 16]> { b.iter().map(|x| (*x).into()).collect() };
    let last: [u8; 16] = (*ct.last().unwrap()).into();
    let (mut chain, mut buf) = (iv, as_arrays(&pt));
    cbc_encrypt(cipher, &mut chain, &mut buf);
    (buf == as_arrays(&ct)).then_some(()).ok_or("cbc_encrypt")?;
    (chain == last)
        .then_some(())
        .ok_or("cbc_encrypt chaining value")?;
    let mut chain = iv;
    cbc_decrypt(cipher, &mut chain, &mut buf);
    (buf == as_arrays(&pt)).then_some(()).ok_or("cbc_decrypt")?;
    (chain == last)
        .then_some(())
        .ok_or("cbc_decrypt chaining value")?;
    // CBC chained here over the block functions.
    let mut prev = Block::from(iv);
    for (p, c) in pt.iter().zip(&ct) {
        let mut b = *p;
        xor(&mut b, &prev);
        cipher.encrypt_block(&mut b);
        (b == *c).then_some(()).ok_or("CBC over encrypt_block")?;
        cipher.decrypt_block(&mut b);
        xor(&mut b, &prev);
        (b == *p).then_some(()).ok_or("CBC over decrypt_block")?;
        prev = *c;
    }
    Ok(())
}

macro_rules! by_key_size {
    ($v:expr, $backend:expr, $($ty:ty),*) => {
        match $v.key.len() {
            $(n if n == <$ty as cipher::KeySizeUser>::KeySize::USIZE => {
                let key = <$ty>::new_with_backend(
                    &cipher::Key::<$ty>::try_from(&$v.key[..]).unwrap(),
                    $backend,
                )
                .map_err(|_| "key")?;
                check($v, &key, <$ty>::cbc_encrypt, <$ty>::cbc_decrypt)
            })*
            _ => Err("key length"),
        }
    };
}

fn run(v: &Vector, backend: Backend) -> Result<(), &'static str> {
    by_key_size!(v, backend, Aes128, Aes192, Aes256)
}

/// The 30 files, with how many vectors each holds (encryption and decryption sections).
const FILES: [(&str, usize); 30] = [
    ("ECBGFSbox128.rsp", 14),
    ("ECBGFSbox192.rsp", 12),
    ("ECBGFSbox256.rsp", 10),
    ("ECBKeySbox128.rsp", 42),
    ("ECBKeySbox192.rsp", 48),
    ("ECBKeySbox256.rsp", 32),
    ("ECBVarKey128.rsp", 256),
    ("ECBVarKey192.rsp", 384),
    ("ECBVarKey256.rsp", 512),
    ("ECBVarTxt128.rsp", 256),
    ("ECBVarTxt192.rsp", 256),
    ("ECBVarTxt256.rsp", 256),
    ("ECBMMT128.rsp", 20),
    ("ECBMMT192.rsp", 20),
    ("ECBMMT256.rsp", 20),
    ("CBCGFSbox128.rsp", 14),
    ("CBCGFSbox192.rsp", 12),
    ("CBCGFSbox256.rsp", 10),
    ("CBCKeySbox128.rsp", 42),
    ("CBCKeySbox192.rsp", 48),
    ("CBCKeySbox256.rsp", 32),
    ("CBCVarKey128.rsp", 256),
    ("CBCVarKey192.rsp", 384),
    ("CBCVarKey256.rsp", 512),
    ("CBCVarTxt128.rsp", 256),
    ("CBCVarTxt192.rsp", 256),
    ("CBCVarTxt256.rsp", 256),
    ("CBCMMT128.rsp", 20),
    ("CBCMMT192.rsp", 20),
    ("CBCMMT256.rsp", 20),
];

#[test]
fn cavp_aes_ecb_and_cbc_every_vector_every_backend() {
    let Some(dir) = cavp::dir(&FILES.map(|(f, _)| f), "AES ECB/CBC") else {
        return;
    };
    for (file, count) in FILES {
        let text = std::fs::read_to_string(dir.join(file)).expect("readable file");
        let vectors = parse(file, &text);
        assert_eq!(vectors.len(), count, "{file}: every vector read");
        let decrypt = vectors.iter().filter(|v| !v.encrypt).count();
        assert_eq!(decrypt * 2, count, "{file}: half the vectors decrypt");
        let cbc = file.starts_with("CBC");
        assert!(vectors.iter().all(|v| v.iv.is_some() == cbc), "{file}: IVs");
        let key_bits: usize = file[file.len() - 7..file.len() - 4].parse().unwrap();
        assert!(
            vectors.iter().all(|v| v.key.len() * 8 == key_bits),
            "{file}"
        );
        for backend in Backend::available() {
            let failures: Vec<String> = vectors
                .iter()
                .filter_map(|v| {
                    run(v, backend).err().map(|e| {
                        let section = if v.encrypt { "ENCRYPT" } else { "DECRYPT" };
                        format!("[{section}] COUNT {}: {e}", v.count)
                    })
                })
                .collect();
            cavp::report(
                file,
                backend,
                &format!("{} vectors", vectors.len()),
                &failures,
            );
        }
    }
}

/// The checks themselves can fail: a changed ciphertext byte is caught on every path.
#[test]
fn a_wrong_vector_fails() {
    let mut v = Vector {
        encrypt: true,
        count: 0,
        // FIPS-197 appendix C.1.
        key: hex("000102030405060708090a0b0c0d0e0f"),
        iv: None,
        plaintext: hex("00112233445566778899aabbccddeeff"),
        ciphertext: hex("69c4e0d86a7b0430d8cdb78070b4c55a"),
    };
    for backend in Backend::available() {
        assert_eq!(run(&v, backend), Ok(()), "{backend:?}");
    }
    v.ciphertext[15] ^= 1;
    for backend in Backend::available() {
        assert_eq!(run(&v, backend), Err("ECB encrypt_block"), "{backend:?}");
    }
    v.iv = Some([0; 16]);
    for backend in Backend::available() {
        assert_eq!(run(&v, backend), Err("cbc_encrypt"), "{backend:?}");
    }
    // `KeyInit` builds the same cipher as `new_with_backend` on the detected back end.
    let k = Aes128::new(&Array::try_from(&v.key[..]).unwrap());
    assert_eq!(k.backend(), Backend::detect());
}

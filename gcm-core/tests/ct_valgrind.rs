//! Constant-time check of key set-up, sealing and opening under valgrind memcheck.
//!
//! Built only with the `ct-check` feature (see `src/ct.rs`) and run by `.ci/ct-gcm.sh`
//! as `valgrind --error-exitcode=99 BIN [CASE]`. Each case marks the AES key (and, for
//! sealing, the plaintext) secret, runs the public API, and only then declares the
//! outputs public again to compare them with results computed beforehand from public
//! copies, so a case that silently did nothing would fail. Memcheck reports any branch
//! or address that depends on the secrets; the library declassifies only the accept bit
//! of the tag comparison, and lengths are public throughout.
//!
//! Cases: `all` (the default: every back end below), `aesni`, `portable`, and `control`,
//! a deliberately leaky tag check that memcheck must flag (the script asserts that it
//! does, which shows the annotations reach valgrind at all).
//!
//! valgrind 3.19 executes neither VAES nor AVX-512, and its CPUID hides them, so under it
//! detection must land on `AesNi` (or `Portable` on a CPU without AES-NI); this is checked
//! too. The two paths valgrind can run are each checked explicitly via `new_with_backend`.

use gcm_core::{
    Backend, Error, GcmKey, InOutBuf,
    aes::{Aes128, Aes192, Aes256},
    ct,
    ghash::GHash,
};
use std::{hint::black_box, process::ExitCode};

use cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use universal_hash::UniversalHash;

/// Deterministic bytes (SplitMix64), so a reported line is reproducible.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// Message lengths: empty, sub-block, block edges, each kernel's bulk width and tails.
const MSG_LENS: [usize; 10] = [0, 1, 15, 16, 17, 64, 127, 128 + 7, 255, 1024 + 3];
/// Nonce lengths: the 96-bit fast path, and two that derive `J0` with the secret `H`.
const NONCE_LENS: [usize; 3] = [12, 8, 60];
const KEY_LENS: [usize; 3] = [16, 24, 32];

/// Counts of what ran, printed at the end (all public).
#[derive(Default)]
struct Tally {
    setups: usize,
    seals: usize,
    opens_ok: usize,
    opens_rejected: usize,
    block_ops: usize,
}

fn check_gcm(backend: Backend, t: &mut Tally) {
    for (ki, &klen) in KEY_LENS.iter().enumerate() {
        let key = bytes(ki as u64, klen);
        let public_key = GcmKey::new_with_backend(&key, backend).expect("available");

        // Key set-up with a secret key: the AES schedule and the powers of H.
        let secret_key_bytes = key.clone();
        ct::poison(&secret_key_bytes);
        let secret =
            GcmKey::new_with_backend(black_box(&secret_key_bytes), backend).expect("available");
        assert_eq!(secret.backend(), backend);
        t.setups += 1;

        for (ni, &nlen) in NONCE_LENS.iter().enumerate() {
            let nonce = bytes(100 + ni as u64, nlen);
            for (mi, &mlen) in MSG_LENS.iter().enumerate() {
                let mlen = black_box(mlen);
                let seed = 1000 * ki as u64 + 10 * ni as u64 + mi as u64;
                let msg = bytes(seed, mlen);
                let aad = bytes(seed + 7, mi * 3);

                // Reference results from the public key.
                let mut want_ct = msg.clone();
                let want_tag = public_key
                    .seal_in_place(&nonce, &aad, &mut want_ct)
                    .expect("seal");

                // Seal: secret key and secret plaintext.
                let mut buf = msg.clone();
                ct::poison(&buf);
                let tag = secret.seal_in_place(&nonce, &aad, &mut buf).expect("seal");
                ct::unpoison(&buf);
                ct::unpoison(&tag);
                assert_eq!((&buf, tag), (&want_ct, want_tag), "seal {backend:?}");
                t.seals += 1;

                // Open with the right tag, full and truncated, in place.
                for tag_len in [16, 12, 4] {
                    let mut buf = want_ct.clone();
                    let r = secret.open_in_place(&nonce, &aad, &mut buf, &want_tag[..tag_len]);
                    assert_eq!(r, Ok(()), "open {backend:?}");
                    ct::unpoison(&buf);
                    assert_eq!(buf, msg);
                    t.opens_ok += 1;
                }

                // Open with a wrong tag: one bit flipped at a place that varies.
                let mut bad_tag = want_tag;
                bad_tag[mi % 16] ^= 1 << (ni % 8);
                let mut buf = want_ct.clone();
                let r = secret.open_in_place(&nonce, &aad, &mut buf, &bad_tag);
                assert_eq!(r, Err(Error::AuthenticationFailed));
                ct::unpoison(&buf);
                assert_eq!(buf, want_ct, "failed open restores the ciphertext");
                t.opens_rejected += 1;

                // Separate buffers, accepted and rejected.
                let mut out = vec![0u8; mlen];
                let r = secret.open_inout(
                    &nonce,
                    &aad,
                    InOutBuf::new(&want_ct, &mut out).expect("equal lengths"),
                    &want_tag,
                );
                assert_eq!(r, Ok(()));
                ct::unpoison(&out);
                assert_eq!(out, msg);
                t.opens_ok += 1;
                let r = secret.open_inout(
                    &nonce,
                    &aad,
                    InOutBuf::new(&want_ct, &mut out).expect("equal lengths"),
                    &bad_tag,
                );
                assert_eq!(r, Err(Error::AuthenticationFailed));
                ct::unpoison(&out);
                assert!(out.iter().all(|&b| b == 0), "failed open zeroes the output");
                t.opens_rejected += 1;
            }
        }
    }
}

/// The block ciphers and GHASH on their own: key set-up with secret keys, then secret data.
fn check_primitives(backend: Backend, t: &mut Tally) {
    macro_rules! block_cipher {
        ($ty:ty, $klen:literal) => {{
            let key = bytes($klen, $klen);
            let public = <$ty>::new_with_backend(&Array::try_from(&key[..]).unwrap(), backend)
                .expect("available");
            ct::poison(&key);
            let secret = <$ty>::new_with_backend(&Array::try_from(&key[..]).unwrap(), backend)
                .expect("available");
            t.setups += 1;
            for n in [1usize, 3, 8, 17, 40] {
                let n = black_box(n);
                let data = bytes(n as u64, 16 * n);
                let mut blocks: Vec<Array<u8, _>> = data
                    .chunks_exact(16)
                    .map(|c| Array::try_from(c).unwrap())
                    .collect();
                let mut want = blocks.clone();
                public.encrypt_blocks(&mut want);
                for b in &blocks {
                    ct::poison(b);
                }
                secret.encrypt_blocks(&mut blocks);
                secret.decrypt_blocks(&mut blocks);
                secret.encrypt_blocks(&mut blocks);
                for b in &blocks {
                    ct::unpoison(b);
                }
                assert_eq!(blocks, want);

                let mut cbc: Vec<[u8; 16]> = data
                    .chunks_exact(16)
                    .map(|c| c.try_into().unwrap())
                    .collect();
                let orig = cbc.clone();
                let iv0: [u8; 16] = bytes(99, 16).try_into().unwrap();
                for b in &cbc {
                    ct::poison(b);
                }
                let mut iv = iv0;
                secret.cbc_encrypt(&mut iv, &mut cbc);
                let mut iv = iv0;
                secret.cbc_decrypt(&mut iv, &mut cbc);
                for b in &cbc {
                    ct::unpoison(b);
                }
                assert_eq!(cbc, orig);
                t.block_ops += 5;
            }
            // A GCM key taken over from the block cipher's schedule.
            let gcm = GcmKey::from(secret);
            assert_eq!(gcm.backend(), backend);
            let mut buf = bytes(5, 40);
            let tag = gcm.seal_in_place(&[1; 12], b"", &mut buf).expect("seal");
            assert_eq!(gcm.open_in_place(&[1; 12], b"", &mut buf, &tag), Ok(()));
            t.setups += 1;
        }};
    }
    block_cipher!(Aes128, 16);
    block_cipher!(Aes192, 24);
    block_cipher!(Aes256, 32);

    let h = bytes(7, 16);
    let public = GHash::new_with_backend(&Array::try_from(&h[..]).unwrap(), backend).unwrap();
    ct::poison(&h);
    let secret = GHash::new_with_backend(&Array::try_from(&h[..]).unwrap(), backend).unwrap();
    t.setups += 1;
    for n in [0usize, 5, 16, 33, 200] {
        let data = bytes(n as u64 + 50, black_box(n));
        let mut p = public.clone();
        p.update_padded(&data);
        let want = p.finalize();
        let mut s = secret.clone();
        ct::poison(&data);
        s.update_padded(&data);
        let got = s.finalize();
        ct::unpoison(&got);
        assert_eq!(got, want);
        t.block_ops += 1;
    }
    // Keep `KeyInit` in use for the `new` path (detection) as well.
    let _ = GHash::new(&Array::from([0u8; 16]));
}

fn run(backend: Backend) -> bool {
    if !backend.is_available() {
        println!("ct-check: {backend}: not available on this CPU, skipped");
        return true;
    }
    let mut t = Tally::default();
    check_gcm(backend, &mut t);
    check_primitives(backend, &mut t);
    println!(
        "ct-check: {backend}: {} key set-ups, {} seals, {} opens accepted, {} opens rejected, \
         {} block-cipher/GHASH calls, all on secret keys",
        t.setups, t.seals, t.opens_ok, t.opens_rejected, t.block_ops
    );
    true
}

/// A tag check written the obvious, leaky way: `==` on slices stops at the first
/// differing byte. Memcheck must report it; if it does not, the check proves nothing.
fn control() {
    let key = bytes(1, 16);
    ct::poison(&key);
    let k = GcmKey::new_with_backend(&key, Backend::Portable).expect("portable");
    let mut buf = bytes(2, 32);
    let tag = k.seal_in_place(&[0; 12], b"", &mut buf).expect("seal");
    let guess = [0u8; 16];
    let len = black_box(16);
    if tag[..len] == guess[..len] {
        println!("control: guessed the tag");
    } else {
        println!("control: tag rejected");
    }
}

fn main() -> ExitCode {
    let under_valgrind = ct::running_on_valgrind();
    if std::env::var_os("CT_REQUIRE_VALGRIND").is_some() && !under_valgrind {
        eprintln!("ct-check: CT_REQUIRE_VALGRIND is set but this is not running under valgrind");
        return ExitCode::from(2);
    }
    let case = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let detected = Backend::detect();
    let available: Vec<&str> = Backend::available().map(Backend::name).collect();
    println!(
        "ct-check: under valgrind: {under_valgrind}; detected back end: {detected}; available: {}",
        available.join(", ")
    );
    if under_valgrind {
        // valgrind cannot run the VAES kernels; detection must not offer them.
        assert!(
            matches!(detected, Backend::AesNi | Backend::Portable),
            "under valgrind detection picked {detected}"
        );
        assert!(!Backend::Vaes256.is_available() && !Backend::Vaes512.is_available());
    }
    let ok = match case.as_str() {
        "control" => {
            control();
            true
        }
        "all" => run(Backend::AesNi) && run(Backend::Portable),
        name => match name.parse::<Backend>() {
            Ok(b) => run(b),
            Err(e) => {
                eprintln!("ct-check: {e}");
                false
            }
        },
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

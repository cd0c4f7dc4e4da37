//! AES-GCM (`gcm_core::GcmKey`, forced onto each back end), the block cipher and GHASH
//! types, and `aes-gcm-vaes`'s AEAD types (the calls its rustls provider makes).
//!
//! Secret: the AES key (so the round keys and the powers of H), the plaintext, and the
//! tag handed to open. Public: lengths, nonces, associated data, the accept bit (which
//! the library declassifies itself) and the ciphertext. Every case first checks that an
//! output derived from the secrets comes out poisoned (else the sanitizer lost them on
//! the way), then declassifies it and compares it with the result of a public key.

use std::hint::black_box;

use aead::AeadInOut;
use cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use gcm_core::{
    Backend, Error, GcmKey, InOutBuf,
    aes::{Aes128, Aes192, Aes256},
    ghash::GHash,
};
use universal_hash::UniversalHash;

use crate::check::{Rng, expect, expect_secret, expect_secret_value, public, secret};

/// Message lengths: every length class of the three kernels. Empty; partial, single and
/// few blocks (masked or byte-wise tails); either side of 4, 8 and 16 blocks (the AES-NI
/// batch, the VAES-256 batches, the VAES-512 batch of 4 x 512 bits); two and three
/// batches (the stitched loops, which encrypt one batch ahead of the hashing); long
/// messages with every tail; and every way the VAES-512 pairs of batches (AES-128 from 2
/// KiB on AMD Zen 4 and 5 and Intel's AVX-512 cores) can end: 2049 and 4111 bytes end a
/// seal on the first half of a pair and 2321 on a whole one; their opens run 8 and 16
/// batches (whole pairs) and 9 (a single batch after the pairs); on Intel the opens hash
/// each batch late, as seals do, so they end as the seals do.
/// With the 96-bit nonce every length up to 600 runs, then these.
const MSG_LENS: [usize; 35] = [
    0, 1, 15, 16, 17, 31, 33, 48, 63, 64, 65, 100, 127, 128, 129, 191, 192, 255, 256, 257, 300,
    383, 384, 385, 511, 512, 513, 767, 768, 769, 1024, 1500, 2049, 2321, 4111,
];
/// Every length up to here, with the 96-bit nonce.
const ALL_LENS_UP_TO: usize = 600;
/// Associated-data lengths, one per message (cycled): GHASH's own length classes.
const AAD_LENS: [usize; 11] = [0, 1, 13, 16, 17, 64, 127, 128, 129, 300, 513];
/// The 96-bit nonce (public counters), and others (`J0` = GHASH under the secret H).
const NONCE_LENS: [usize; 4] = [12, 1, 8, 60];
const KEY_LENS: [usize; 3] = [16, 24, 32];

/// Key set-up, seal and open on `backend`; returns the number of operations.
pub fn gcm(backend: Backend) -> usize {
    let mut ops = 0;
    let mut rng = Rng::new(0x6C6D + backend as u64);
    for key_len in KEY_LENS {
        let key = rng.bytes(key_len);
        let reference = GcmKey::new_with_backend(&key, backend).expect("available");
        let mut secret_key = key.clone();
        secret(&mut secret_key);
        let k = GcmKey::new_with_backend(&secret_key, backend).expect("available");
        expect(k.backend() == backend, "GcmKey on the requested back end");
        expect_secret_value(&k, "GcmKey: round keys and powers of H");
        ops += 1;
        for nonce_len in NONCE_LENS {
            let nonce = rng.bytes(nonce_len);
            let lens: Vec<usize> = match nonce_len {
                12 => (0..=ALL_LENS_UP_TO)
                    .chain(MSG_LENS.into_iter().filter(|&l| l > ALL_LENS_UP_TO))
                    .collect(),
                _ => MSG_LENS.to_vec(),
            };
            for (i, len) in lens.into_iter().enumerate() {
                let len = black_box(len);
                let aad = rng.bytes(AAD_LENS[i % AAD_LENS.len()]);
                let msg = rng.bytes(len);
                ops += seal_and_open(&reference, &k, &nonce, &aad, &msg, &mut rng);
            }
        }
    }
    ops
}

fn seal_and_open(
    reference: &GcmKey,
    k: &GcmKey,
    nonce: &[u8],
    aad: &[u8],
    msg: &[u8],
    rng: &mut Rng,
) -> usize {
    let len = msg.len();
    let mut want_ct = msg.to_vec();
    let want_tag = reference
        .seal_in_place(nonce, aad, &mut want_ct)
        .expect("seal");

    // Seal in place, plaintext secret.
    let mut buf = msg.to_vec();
    secret(&mut buf);
    let tag = k.seal_in_place(nonce, aad, &mut buf).expect("seal");
    expect_secret(&buf, "seal in place: ciphertext");
    expect_secret(&tag, "seal in place: tag");
    public(&buf);
    public(&tag);
    expect(buf == want_ct && tag == want_tag, "seal in place");

    // Seal from a separate buffer.
    let mut input = msg.to_vec();
    secret(&mut input);
    let mut out = vec![0u8; len];
    let tag = k
        .seal_inout(nonce, aad, InOutBuf::new(&input, &mut out).expect("equal"))
        .expect("seal");
    expect_secret(&out, "seal separate: ciphertext");
    public(&out);
    public(&tag);
    expect(out == want_ct && tag == want_tag, "seal separate");

    // Open in place with the right tag, full and truncated; the tag is secret too.
    for tag_len in [16, 12, 4] {
        let mut buf = want_ct.clone();
        let mut t = want_tag[..tag_len].to_vec();
        secret(&mut t);
        let r = k.open_in_place(nonce, aad, &mut buf, &t);
        expect_secret(&buf, "open in place: plaintext");
        public(&buf);
        expect(r == Ok(()) && buf == msg, "open in place");
    }

    // Open into a separate buffer.
    let mut out = vec![0u8; len];
    let mut t = want_tag;
    secret(&mut t);
    let r = k.open_inout(
        nonce,
        aad,
        InOutBuf::new(&want_ct, &mut out).expect("equal"),
        &t,
    );
    expect_secret(&out, "open separate: plaintext");
    public(&out);
    expect(r == Ok(()) && out == msg, "open separate");

    // A wrong tag, one bit off somewhere: rejected, in place (the ciphertext is put
    // back) and separate (the output is zeroed).
    let mut bad = want_tag;
    bad[rng.below(16)] ^= 1 << rng.below(8);
    let mut buf = want_ct.clone();
    let mut t = bad;
    secret(&mut t);
    let r = k.open_in_place(nonce, aad, &mut buf, &t);
    public(&buf);
    expect(
        r == Err(Error::AuthenticationFailed) && buf == want_ct,
        "rejected open in place restores the ciphertext",
    );
    let mut out = vec![0xAAu8; len];
    let r = k.open_inout(
        nonce,
        aad,
        InOutBuf::new(&want_ct, &mut out).expect("equal"),
        &t,
    );
    public(&out);
    expect(
        r == Err(Error::AuthenticationFailed) && out.iter().all(|&b| b == 0),
        "rejected open separate zeroes the output",
    );
    8
}

/// The block ciphers and GHASH on `backend`: key set-up with secret keys, then secret
/// blocks through every path (one block, the parallel batches, CBC both ways).
pub fn primitives(backend: Backend) -> usize {
    let mut ops = 0;
    let mut rng = Rng::new(0xB10C + backend as u64);
    ops += block_cipher::<Aes128>(backend, &mut rng);
    ops += block_cipher::<Aes192>(backend, &mut rng);
    ops += block_cipher::<Aes256>(backend, &mut rng);
    ops += ghash(backend, &mut rng);
    ops
}

/// The `gcm_core::aes` types, whatever the key size.
trait Cipher: BlockCipherEncrypt + BlockCipherDecrypt + KeyInit + Into<GcmKey> {
    fn new_on(key: &[u8], backend: Backend) -> Self;
    fn backend_of(&self) -> Backend;
    fn cbc_encrypt_blocks(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]);
    fn cbc_decrypt_blocks(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]);
}

macro_rules! cipher {
    ($($t:ty),*) => {$(
        impl Cipher for $t {
            fn new_on(key: &[u8], backend: Backend) -> Self {
                <$t>::new_with_backend(&Array::try_from(key).expect("key length"), backend)
                    .expect("available")
            }
            fn backend_of(&self) -> Backend {
                self.backend()
            }
            fn cbc_encrypt_blocks(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
                self.cbc_encrypt(iv, blocks)
            }
            fn cbc_decrypt_blocks(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
                self.cbc_decrypt(iv, blocks)
            }
        }
    )*};
}
cipher!(Aes128, Aes192, Aes256);

fn block_cipher<C: Cipher>(backend: Backend, rng: &mut Rng) -> usize {
    let mut ops = 0;
    let key = rng.bytes(C::key_size());
    let reference = C::new_on(&key, backend);
    let mut secret_key = key.clone();
    secret(&mut secret_key);
    let c = C::new_on(&secret_key, backend);
    expect(
        c.backend_of() == backend,
        "block cipher on the requested back end",
    );
    expect_secret_value(&c, "block cipher: round keys");
    for n in [
        1usize, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 100,
    ] {
        let n = black_box(n);
        let data = rng.bytes(16 * n);
        let mut want: Vec<Array<u8, _>> = data
            .chunks_exact(16)
            .map(|b| Array::try_from(b).expect("16"))
            .collect();
        reference.encrypt_blocks(&mut want);

        let mut blocks: Vec<Array<u8, _>> = data
            .chunks_exact(16)
            .map(|b| Array::try_from(b).expect("16"))
            .collect();
        blocks.iter_mut().for_each(|b| secret(b));
        c.encrypt_blocks(&mut blocks);
        blocks
            .iter()
            .for_each(|b| expect_secret(b, "encrypt_blocks"));
        c.decrypt_blocks(&mut blocks);
        c.encrypt_blocks(&mut blocks);
        blocks.iter().for_each(|b| public(b));
        expect(blocks == want, "encrypt, decrypt, encrypt blocks");

        let mut one = Array::try_from(&data[..16]).expect("16");
        secret(&mut one);
        c.encrypt_block(&mut one);
        c.decrypt_block(&mut one);
        public(&one);
        expect(one[..] == data[..16], "one block both ways");

        let mut cbc: Vec<[u8; 16]> = data
            .chunks_exact(16)
            .map(|b| b.try_into().expect("16"))
            .collect();
        let plain = cbc.clone();
        cbc.iter_mut().for_each(|b| secret(b));
        let iv0: [u8; 16] = rng.bytes(16).try_into().expect("16");
        let mut iv = iv0;
        c.cbc_encrypt_blocks(&mut iv, &mut cbc);
        cbc.iter().for_each(|b| expect_secret(b, "CBC encrypt"));
        let mut iv = iv0;
        c.cbc_decrypt_blocks(&mut iv, &mut cbc);
        cbc.iter().for_each(|b| public(b));
        expect(cbc == plain, "CBC round trip");
        ops += 7;
    }
    // A GCM key that takes over the cipher's schedule.
    let gcm: GcmKey = c.into();
    expect(gcm.backend() == backend, "GcmKey from the block cipher");
    let mut buf = rng.bytes(300);
    let plain = buf.clone();
    secret(&mut buf);
    let tag = gcm.seal_in_place(&[3; 12], b"ad", &mut buf).expect("seal");
    expect_secret(&buf, "GcmKey from the block cipher: ciphertext");
    let r = gcm.open_in_place(&[3; 12], b"ad", &mut buf, &tag);
    public(&buf);
    expect(r == Ok(()) && buf == plain, "GcmKey from the block cipher");
    ops + 3
}

fn ghash(backend: Backend, rng: &mut Rng) -> usize {
    let mut ops = 0;
    let h = rng.bytes(16);
    let reference =
        GHash::new_with_backend(&Array::try_from(&h[..]).expect("16"), backend).expect("available");
    let mut secret_h = h.clone();
    secret(&mut secret_h);
    let g = GHash::new_with_backend(&Array::try_from(&secret_h[..]).expect("16"), backend)
        .expect("available");
    expect(g.backend() == backend, "GHash on the requested back end");
    for n in [
        0usize, 1, 5, 15, 16, 17, 33, 64, 127, 128, 129, 200, 256, 257, 1000,
    ] {
        let n = black_box(n);
        let data = rng.bytes(n);
        let mut r = reference.clone();
        r.update_padded(&data);
        let want = r.finalize();

        let mut s = g.clone();
        let mut d = data.clone();
        secret(&mut d);
        s.update_padded(&d);
        let got = s.finalize();
        if n > 0 {
            // (GHASH of nothing is zero, whatever H.)
            expect_secret(&got, "GHASH");
        }
        public(&got);
        expect(got == want, "GHASH update_padded");

        // Whole blocks through `update`, then the rest.
        let mut s = g.clone();
        let (blocks, rest) = d.as_chunks::<16>();
        let blocks: Vec<Array<u8, _>> = blocks.iter().map(|b| Array::from(*b)).collect();
        s.update(&blocks);
        s.update_padded(rest);
        let got = s.finalize();
        public(&got);
        expect(got == want, "GHASH update");
        ops += 2;
    }
    ops
}

/// `aes-gcm-vaes`'s AEAD types made with `KeyInit` (the back end detection picks, under
/// the CPU profile the caller set): seal and open the way its rustls provider does (in
/// place, detached 16-byte tag, 96-bit nonce), and through `aead`'s `Buffer` API.
pub fn aead_api(rng: &mut Rng) -> usize {
    let mut ops = 0;
    ops += aead_type::<aes_gcm_vaes::Aes128Gcm>(rng);
    ops += aead_type::<aes_gcm_vaes::Aes256Gcm>(rng);
    ops
}

fn aead_type<A>(rng: &mut Rng) -> usize
where
    A: AeadInOut<NonceSize = aead::consts::U12, TagSize = aead::consts::U16> + aead::KeyInit,
{
    let mut ops = 0;
    let key = rng.bytes(A::key_size());
    let reference = A::new_from_slice(&key).expect("key length");
    let mut secret_key = key.clone();
    secret(&mut secret_key);
    let a = A::new_from_slice(&secret_key).expect("key length");
    expect_secret_value(&a, "AesGcm: key schedule");
    for len in [0usize, 1, 16, 100, 256, 1000, 5000] {
        let len = black_box(len);
        let nonce = aead::Nonce::<A>::try_from(&rng.bytes(12)[..]).expect("12");
        let aad = rng.bytes(13);
        let msg = rng.bytes(len);
        let mut want = msg.clone();
        let want_tag = reference
            .encrypt_inout_detached(&nonce, &aad, InOutBuf::from(&mut want[..]))
            .expect("seal");

        let mut buf = msg.clone();
        secret(&mut buf);
        let tag = a
            .encrypt_inout_detached(&nonce, &aad, InOutBuf::from(&mut buf[..]))
            .expect("seal");
        expect_secret(&buf, "AesGcm seal: ciphertext");
        public(&buf);
        public(&tag);
        expect(buf == want && tag == want_tag, "AesGcm seal");

        for flip in [false, true] {
            let mut tag = want_tag;
            if flip {
                tag[len % 16] ^= 0x20;
            }
            secret(&mut tag);
            let mut buf = want.clone();
            let r = a.decrypt_inout_detached(&nonce, &aad, InOutBuf::from(&mut buf[..]), &tag);
            public(&buf);
            if flip {
                expect(r.is_err() && buf == want, "AesGcm rejects a wrong tag");
            } else {
                expect(r.is_ok() && buf == msg, "AesGcm open");
            }
        }

        // `aead`'s buffer API: tag appended, then checked and removed.
        let mut v = msg.clone();
        secret(&mut v);
        a.encrypt_in_place(&nonce, &aad, &mut v).expect("seal");
        secret(&mut v);
        let r = a.decrypt_in_place(&nonce, &aad, &mut v);
        public(&v);
        expect(r.is_ok() && v == msg, "AesGcm buffer API round trip");
        ops += 5;
    }
    ops
}

/// `aes-gcm-vaes`'s `AesGcm` from a RustCrypto `aes` cipher (which runs on the portable
/// back end): the cipher object is made from a public key and then marked secret as a
/// whole, its round keys being the secret from then on.
pub fn from_rustcrypto_aes(rng: &mut Rng) -> usize {
    let key = rng.bytes(32);
    let mut cipher = aes::Aes256::new(&Array::try_from(&key[..]).expect("32"));
    crate::check::secret_value(&mut cipher);
    let a = aes_gcm_vaes::Aes256Gcm::from(cipher);
    expect(
        a.backend() == Backend::Portable,
        "AesGcm from aes::Aes256 is portable",
    );
    let reference = aes_gcm_vaes::Aes256Gcm::new_from_slice(&key).expect("32");
    let nonce = aead::Nonce::<aes_gcm_vaes::Aes256Gcm>::from([9u8; 12]);
    let msg = rng.bytes(777);
    let mut want = msg.clone();
    let want_tag = reference
        .encrypt_inout_detached(&nonce, b"", InOutBuf::from(&mut want[..]))
        .expect("seal");
    let mut buf = msg.clone();
    secret(&mut buf);
    let tag = a
        .encrypt_inout_detached(&nonce, b"", InOutBuf::from(&mut buf[..]))
        .expect("seal");
    expect_secret(&buf, "AesGcm from aes::Aes256: ciphertext");
    let r = a.decrypt_inout_detached(&nonce, b"", InOutBuf::from(&mut buf[..]), &tag);
    public(&buf);
    public(&tag);
    expect(
        r.is_ok() && buf == msg && tag == want_tag,
        "AesGcm from aes::Aes256",
    );
    2
}

//! Sealing and opening one TLS CBC record, shared by the explicit- and implicit-IV suites.
//!
//! Seal: `CBC(plaintext || HMAC(ad || len16 || plaintext) || padding)` with minimal padding.
//! Open: decrypt, then check padding, recompute the MAC over the secret-length data and
//! extract the received MAC, all in constant time, and branch only on the final accept
//! bit. Every failure after decryption is the same error after the same work, and leaves
//! the buffer empty and zeroed.

use aead::{Buffer, Error, Result};

use crate::{
    cbc::CbcCipher,
    copy_mac::copy_mac,
    ct, ct_check,
    digest::{HashAlg, MAX_OUTPUT_LEN},
    hmac_key::HmacKey,
    padding,
};

/// Length of the associated data: sequence number (8), content type (1), version (2).
pub const AD_LEN: usize = 11;

/// The largest plaintext whose length fits the 16-bit length in the MAC input.
pub const MAX_PLAINTEXT_LEN: usize = u16::MAX as usize;

/// Largest CBC block among the suites (AES).
const MAX_CIPHER_BLOCK: usize = 16;

/// What seal appends before it writes the MAC and padding there: enough for the longest.
static TRAILER_ROOM: [u8; MAX_OUTPUT_LEN + MAX_CIPHER_BLOCK] =
    [0; MAX_OUTPUT_LEN + MAX_CIPHER_BLOCK];

/// Seals the plaintext in `buffer` into a record, chaining from `iv`.
pub(crate) fn seal<C: CbcCipher, H: HashAlg>(
    cipher: &C,
    mac: &HmacKey<H>,
    iv: &mut C::Block,
    ad: &[u8],
    buffer: &mut dyn Buffer,
) -> Result<()> {
    let len = buffer.len();
    if ad.len() != AD_LEN || len > MAX_PLAINTEXT_LEN {
        return Err(Error);
    }
    let mac_len = H::OUTPUT_LEN;
    // 1..=BLOCK_LEN bytes, length byte included, to reach a whole number of blocks.
    let pad_len = C::BLOCK_LEN - (len + mac_len) % C::BLOCK_LEN;

    // Room first: the stitched path encrypts the plaintext while it computes the MAC, so
    // a buffer that cannot grow must be found out before anything is overwritten. The MAC
    // and the padding are then written straight into the room made (no trailer on the
    // stack to fill and copy).
    if let Err(e) = buffer.extend_from_slice(&TRAILER_ROOM[..mac_len + pad_len]) {
        buffer.truncate(len);
        return Err(e);
    }
    let (data, tail) = buffer.as_mut().split_at_mut(len);
    let (mac_out, padding) = tail.split_at_mut(mac_len);
    let encrypted = mac_record_and_encrypt(cipher, mac, iv, ad, data, mac_out);
    padding.fill((pad_len - 1) as u8);
    cipher.cbc_encrypt(iv, &mut buffer.as_mut()[encrypted..]);
    Ok(())
}

/// The record MAC of `data` into `out`; on the stitched path also CBC-encrypts the whole
/// blocks of `data` (returned: their length in bytes) and advances `iv` past them.
#[inline]
fn mac_record_and_encrypt<C: CbcCipher, H: HashAlg>(
    cipher: &C,
    mac: &HmacKey<H>,
    iv: &mut C::Block,
    ad: &[u8],
    data: &mut [u8],
    out: &mut [u8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if mac.seal_path == SealPath::Stitched
        && let (Some(keys), Ok(iv)) = (
            cipher.aesni_round_keys(),
            <&mut [u8; 16]>::try_from(iv.as_mut()),
        )
    {
        // SAFETY: round keys are only handed out by AES-NI back ends, which proves
        // AES-NI.
        if let Some(encrypted) = unsafe { mac.mac_record_encrypting(ad, data, keys, iv, out) } {
            return encrypted;
        }
    }
    // Only the stitched path, on x86_64, encrypts here.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (cipher, iv);
    mac.mac_record(ad, data, out);
    0
}

/// Whether seal runs CBC encryption inside the MAC's hash (`x86_64::stitch`): chosen
/// once, when the key is made (see `engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SealPath {
    Plain = 0,
    Stitched,
}

/// Opens the record in `buffer`, chaining from `iv`; on success `buffer` holds the
/// plaintext, on any failure it is empty (and what was decrypted has been zeroed).
pub(crate) fn open<C: CbcCipher, H: HashAlg>(
    cipher: &C,
    mac: &HmacKey<H>,
    iv: &mut C::Block,
    ad: &[u8],
    buffer: &mut dyn Buffer,
) -> Result<()> {
    match mac.open_path {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `OpenPath::Avx2` is only made by `OpenPath::detect` on a CPU with AVX2,
        // the only feature that `open_avx2` is built with beyond the baseline.
        OpenPath::Avx2 => unsafe { open_avx2(cipher, mac, iv, ad, buffer) },
        OpenPath::Baseline => open_impl(cipher, mac, iv, ad, buffer),
    }
}

/// The build of [`open`] a key uses: chosen once, when the key is made, so that opening a
/// record checks nothing about the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpenPath {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl OpenPath {
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if avx2_cpuid::get() && !crate::ct_check::hidden(gcm_core::__CpuFeatures::AVX2) {
            return OpenPath::Avx2;
        }
        OpenPath::Baseline
    }
}

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(avx2_cpuid, "avx2");

/// [`open`] built for AVX2: the constant-time mask loops (padding scan, MAC extraction,
/// secret-suffix blocks, MAC comparison), all inlined into it, vectorise twice as wide.
/// The same code as the baseline build, so the same constant-time argument; the ct-check
/// under valgrind (which implements AVX2) runs this version.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn open_avx2<C: CbcCipher, H: HashAlg>(
    cipher: &C,
    mac: &HmacKey<H>,
    iv: &mut C::Block,
    ad: &[u8],
    buffer: &mut dyn Buffer,
) -> Result<()> {
    open_impl(cipher, mac, iv, ad, buffer)
}

#[inline(always)]
fn open_impl<C: CbcCipher, H: HashAlg>(
    cipher: &C,
    mac: &HmacKey<H>,
    iv: &mut C::Block,
    ad: &[u8],
    buffer: &mut dyn Buffer,
) -> Result<()> {
    let len = buffer.len();
    let mac_len = H::OUTPUT_LEN;
    // Public facts about the record fail early. A record longer than the largest plaintext
    // plus MAC plus the longest padding cannot have been sealed: its plaintext length would
    // not fit the MAC's 16-bit length field.
    let too_long = len > MAX_PLAINTEXT_LEN + mac_len + padding::MAX_PADDING;
    if ad.len() != AD_LEN || !len.is_multiple_of(C::BLOCK_LEN) || len <= mac_len || too_long {
        // Only ciphertext is there, but every failed open leaves the buffer empty.
        buffer.truncate(0);
        return Err(Error);
    }
    // The whole record is decrypted before it is hashed. Running the decryption inside
    // the SHA-384 rounds instead, the way seal runs its encryption, was measured on an
    // AMD EPYC Zen 3 (VAES-256, AVX2 SHA-512 engine) and not kept: with each 256 bytes
    // decrypted by VAES steps spread through the second block of the pair hashed two
    // steps before them, a 16 KiB AES-256-CBC-SHA384 open took 25.1-27.0 us against
    // 24.4 us for decryption then hash. The second block's scalar rounds leave the
    // vector units idle, but they ran 17% slower with the AES steps among them, more
    // than the separate decryption costs (4.6% of the open). Nor between compression
    // calls (same CPU and record, TSC cycles, fastest of 3000): with the tail decrypted
    // first and the rest a 256-byte piece ahead of the hash, 66.0k against 57.8k. The
    // hash alone fed in 256-byte pieces took 61.4k, so calls cost, and the pieces of
    // decryption cost more among the hash than together; 1 KiB pieces 60.1k, 4 KiB
    // 58.5k; at 1350 bytes 6.3-6.5k against 6.1k. Tried again on an AMD EPYC Zen 5
    // (family 0x1a model 2, AVX-512 engine, VAES-512), with AES steps only in the hooks
    // of each pair's first block, so that the second keeps its written-out rounds: 256
    // bytes (four 512-bit vectors, one round of all four a hook) decrypted a pair ahead
    // of the hash. Compressing 16 KiB took 46.9-47.0k TSC cycles so, against 43.4-44.9k
    // without and 1.43k for the separate VAES-512 decryption (fastest of 400, three runs;
    // timed alone, not wired to the record). The same on an AMD EPYC Zen 4 (family 25
    // model 17, AVX-512 engine, VAES-512; 130 blocks, TSC cycles, fastest of 400): 54.9k
    // against 49.3k plus 2.6k for the separate decryption; a hook that only tests
    // whether work is left already costs 2.2k there (51.5k). Nor with the SHA-NI engines
    // on an Intel Xeon with AVX512-FP16 (KVM guest reporting family 6 model 0xa7,
    // VAES-512), where decrypting AES-128 is about 8% of a 16 KiB SHA-1 open (AES-256
    // opens 600 TSC ticks slower): the tail decrypted first, then the public prefix in
    // pieces of 1, 2 or 4 KiB, each decrypted just before the hash took it (TSC ticks
    // an open, 20th percentile, three alternated runs): AES-128-CBC-SHA1 at 16 KiB
    // 18.7-19.1k decrypted whole, 19.7-20.1k / 19.1-19.5k / 19.0-19.4k in pieces;
    // AES-128-CBC-SHA256 24.1-26.0k against 24.0-25.3k at best; 256 and 1350 bytes
    // within noise.
    cipher.cbc_decrypt(iv, buffer.as_mut());

    let record = buffer.as_ref();
    ct_check::mark_secret(record);

    let (padding_good, data_and_mac_len) = padding::check(record, mac_len);
    let data_len = data_and_mac_len - mac_len;

    let mut expected = [0u8; MAX_OUTPUT_LEN];
    mac.digest_record(ad, record, data_len, &mut expected[..mac_len]);
    let mut received = [0u8; MAX_OUTPUT_LEN];
    copy_mac(&mut received[..mac_len], record, data_and_mac_len);

    // OR of the byte differences: a straight vector loop, unlike `subtle`'s byte-by-byte
    // comparison through a black box.
    let diff = expected[..mac_len]
        .iter()
        .zip(&received[..mac_len])
        .fold(0u8, |acc, (e, r)| acc | (e ^ r));
    let mut accept = (ct::is_zero(usize::from(diff)) & padding_good & 1) as u8;
    ct_check::declassify(&mut accept);
    if accept == 1 {
        let mut data_len = data_len;
        ct_check::declassify(&mut data_len);
        buffer.truncate(data_len);
        Ok(())
    } else {
        buffer.as_mut().fill(0);
        buffer.truncate(0);
        Err(Error)
    }
}

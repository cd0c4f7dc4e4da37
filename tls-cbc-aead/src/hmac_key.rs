//! HMAC keyed once: the chaining values after the `key ^ ipad` and `key ^ opad` blocks.
//!
//! Both seal and open start every record from these two states, so a record costs no key
//! schedule and no allocation. Open also uses them to compute the record MAC over a
//! secret-length message (see [`HmacKey::digest_record`]).

use crate::{
    digest::{HashAlg, MAX_BLOCK_LEN, MAX_OUTPUT_LEN, Stream},
    engine::{FinishSteps, HashEngine, RoundTuning, Tunings},
    padding::MAX_PADDING,
    record::{OpenPath, SealPath},
};

/// The precomputed inner and outer HMAC states for one MAC key.
pub(crate) struct HmacKey<H: HashAlg> {
    /// The compression function every hash of this key runs, chosen once here (and
    /// available on this CPU: the hashes below rely on it).
    engine: HashEngine,
    /// Which build of the engine its plain compressions run, for this CPU's core, chosen
    /// once here.
    tuning: RoundTuning,
    /// Which build the stitched seal's inner hash runs (see `Tunings`).
    stitch_tuning: RoundTuning,
    /// How open's secret-length finish steps through its blocks on this CPU, chosen once
    /// here.
    finish: FinishSteps,
    inner: H::State,
    outer: H::State,
    /// Which build of `record::open` this key uses, chosen once here.
    pub(crate) open_path: OpenPath,
    /// Whether `record::seal` stitches CBC encryption into the hash, chosen once here.
    pub(crate) seal_path: SealPath,
}

impl<H: HashAlg> Clone for HmacKey<H> {
    fn clone(&self) -> Self {
        HmacKey {
            engine: self.engine,
            tuning: self.tuning,
            stitch_tuning: self.stitch_tuning,
            finish: self.finish,
            inner: self.inner,
            outer: self.outer,
            open_path: self.open_path,
            seal_path: self.seal_path,
        }
    }
}

impl<H: HashAlg> HmacKey<H> {
    /// Keys HMAC on `engine` in its builds `tunings`, seal stitched or not. TLS MAC keys
    /// are as long as the digest, so never longer than a block.
    ///
    /// # Panics
    /// If this CPU cannot run `engine` for `H`, or `stitched` and it has no stitched seal
    /// (callers check both first, see `engine::build`).
    pub(crate) fn new(key: &[u8], engine: HashEngine, tunings: Tunings, stitched: bool) -> Self {
        let tuning = tunings.plain.on(engine);
        assert!(key.len() <= H::BLOCK_LEN);
        assert!(H::is_available(engine) && (!stitched || H::stitches(engine)));
        let mut pad = [0u8; MAX_BLOCK_LEN];
        let pad = &mut pad[..H::BLOCK_LEN];
        pad[..key.len()].copy_from_slice(key);
        pad.iter_mut().for_each(|b| *b ^= 0x36);
        let mut inner = H::INITIAL;
        H::compress(engine, tuning, &mut inner, pad);
        // 0x36 ^ 0x5c: turns the ipad block into the opad block.
        pad.iter_mut().for_each(|b| *b ^= 0x6a);
        let mut outer = H::INITIAL;
        H::compress(engine, tuning, &mut outer, pad);
        wipe(pad);
        HmacKey {
            engine,
            tuning,
            stitch_tuning: tunings.stitched.on(engine),
            finish: FinishSteps::for_this_cpu(),
            inner,
            outer,
            open_path: OpenPath::detect(),
            seal_path: if stitched {
                SealPath::Stitched
            } else {
                SealPath::Plain
            },
        }
    }

    /// The compression function this key runs.
    pub(crate) fn engine(&self) -> HashEngine {
        self.engine
    }

    /// The build of the engine this key's plain compressions run.
    pub(crate) fn tuning(&self) -> RoundTuning {
        self.tuning
    }

    /// The build of the engine this key's stitched seal runs.
    pub(crate) fn stitch_tuning(&self) -> RoundTuning {
        self.stitch_tuning
    }

    /// The inner hash, positioned after the key block.
    fn inner(&self) -> Stream<H> {
        Stream::resume(self.engine, self.tuning, self.finish, self.inner, 1)
    }

    /// Runs the outer hash over the inner digest; writes the MAC to `out`.
    fn finish_outer(&self, inner_digest: &[u8], out: &mut [u8]) {
        let mut outer = Stream::<H>::resume(self.engine, self.tuning, self.finish, self.outer, 1);
        outer.update(inner_digest);
        outer.finish(out);
    }

    /// The TLS record MAC over public data: `HMAC(ad || len16(data) || data)`.
    pub(crate) fn mac_record(&self, ad: &[u8], data: &[u8], out: &mut [u8]) {
        debug_assert!(data.len() <= usize::from(u16::MAX));
        let mut inner = self.inner();
        inner.update(ad);
        inner.update(&(data.len() as u16).to_be_bytes());
        inner.update(data);
        let mut digest = [0u8; MAX_OUTPUT_LEN];
        inner.finish(&mut digest[..H::OUTPUT_LEN]);
        self.finish_outer(&digest[..H::OUTPUT_LEN], out);
    }

    /// [`Self::mac_record`] that, as the inner hash passes over `data`, also CBC-encrypts
    /// in place, under the AES-NI round keys `keys` and from `iv`, every whole 16-byte
    /// block of `data`; returns how many bytes that is, or `None` (and does nothing) if
    /// the engine has no stitched kernel.
    ///
    /// # Safety
    /// The CPU must have AES-NI (the engine was checked when the key was made).
    #[cfg(target_arch = "x86_64")]
    pub(crate) unsafe fn mac_record_encrypting(
        &self,
        ad: &[u8],
        data: &mut [u8],
        keys: crate::x86_64::stitch::AesKeys<'_>,
        iv: &mut [u8; 16],
        out: &mut [u8],
    ) -> Option<usize> {
        debug_assert!(data.len() <= usize::from(u16::MAX));
        let mut head = [0u8; 13];
        head[..11].copy_from_slice(ad);
        head[11..].copy_from_slice(&(data.len() as u16).to_be_bytes());
        let mut state = self.inner;
        // SAFETY: `self.engine` is available on this CPU (checked in `new`); the caller
        // guarantees AES-NI.
        let encrypted = unsafe {
            H::stitched_inner_hash(
                self.engine,
                self.stitch_tuning,
                &mut state,
                &head,
                data,
                keys,
                iv,
            )
        }?;
        let mut digest = [0u8; MAX_OUTPUT_LEN];
        H::write_digest(&state, &mut digest[..H::OUTPUT_LEN]);
        self.finish_outer(&digest[..H::OUTPUT_LEN], out);
        Some(encrypted)
    }

    /// The record MAC over the first `data_len` bytes of `record`, where `data_len` is
    /// secret but known to be at least `record.len() - H::OUTPUT_LEN - 256` and at most
    /// `record.len() - H::OUTPUT_LEN`.
    ///
    /// Everything before that lowest possible length is hashed normally; only the last
    /// (at most 256) bytes go through the constant-time finish.
    // Inlined into open, so that it is built with open's target features.
    #[inline(always)]
    pub(crate) fn digest_record(&self, ad: &[u8], record: &[u8], data_len: usize, out: &mut [u8]) {
        let most = record.len() - H::OUTPUT_LEN;
        let public_len = most.saturating_sub(MAX_PADDING);
        let mut inner = self.inner();
        inner.update(ad);
        // The value is secret; the two byte positions it is written to are not.
        inner.update(&[(data_len >> 8) as u8, data_len as u8]);
        inner.update(&record[..public_len]);
        let mut digest = [0u8; MAX_OUTPUT_LEN];
        inner.finish_with_secret_suffix(
            &record[public_len..most],
            data_len - public_len,
            &mut digest[..H::OUTPUT_LEN],
        );
        self.finish_outer(&digest[..H::OUTPUT_LEN], out);
    }
}

/// Clears key-derived bytes in a way the optimiser keeps.
fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        *b = 0;
    }
    core::hint::black_box(bytes);
}

#[cfg(feature = "zeroize")]
impl<H: HashAlg> Drop for HmacKey<H> {
    fn drop(&mut self) {
        // The whole struct, padding included: a key built on the stack can leave stale
        // key-derived bytes in the padding after the path fields (the zeroize test found
        // two such bytes in release builds).
        // SAFETY: `HmacKey` is plain data: word arrays and the `HashEngine`,
        // `RoundTuning`, `FinishSteps`, `OpenPath` and `SealPath` enums, all `repr(u8)`
        // with a variant of 0, so all-zero bytes are a valid value; no field has a `Drop`.
        unsafe { zeroize::zeroize_flat_type(self) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{Sha1, Sha256, Sha384};
    use hmac::{KeyInit, Mac};
    use std::vec::Vec;

    fn reference(mac_len: usize, key: &[u8], msg: &[u8]) -> Vec<u8> {
        match mac_len {
            20 => {
                let mut m = hmac::Hmac::<sha1::Sha1>::new_from_slice(key).unwrap();
                m.update(msg);
                m.finalize().into_bytes().to_vec()
            }
            32 => {
                let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
                m.update(msg);
                m.finalize().into_bytes().to_vec()
            }
            _ => {
                let mut m = hmac::Hmac::<sha2::Sha384>::new_from_slice(key).unwrap();
                m.update(msg);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn both_paths_match_hmac<H: HashAlg>() {
        for engine in HashEngine::ALL.into_iter().filter(|&e| H::is_available(e)) {
            for &tuning in RoundTuning::builds_of(engine) {
                both_paths_match_hmac_on::<H>(engine, tuning);
            }
        }
    }

    fn both_paths_match_hmac_on<H: HashAlg>(engine: HashEngine, tuning: RoundTuning) {
        let key: Vec<u8> = (0..H::OUTPUT_LEN as u8).map(|i| i ^ 0xa5).collect();
        let k = HmacKey::<H>::new(&key, engine, Tunings::both(tuning), false);
        let ad = *b"\x00\x00\x00\x00\x00\x00\x00\x07\x17\x03\x03";
        let record: Vec<u8> = (0..700u32).map(|i| (i * 3) as u8).collect();
        // Under Miri, which checks the memory accesses, a short, a one-block and a
        // several-block record.
        let lens: &[usize] = if cfg!(miri) {
            &[0, 65, 300]
        } else {
            &[0, 1, 63, 64, 65, 127, 128, 300, 555, 650]
        };
        for &len in lens {
            let mut msg = ad.to_vec();
            msg.extend_from_slice(&(len as u16).to_be_bytes());
            msg.extend_from_slice(&record[..len]);
            let want = reference(H::OUTPUT_LEN, &key, &msg);
            let mut out = [0u8; MAX_OUTPUT_LEN];
            k.mac_record(&ad, &record[..len], &mut out[..H::OUTPUT_LEN]);
            assert_eq!(&out[..H::OUTPUT_LEN], want);
            // Any record long enough to leave `len` inside the secret window.
            for extra in [H::OUTPUT_LEN, H::OUTPUT_LEN + 1, H::OUTPUT_LEN + 256] {
                let rec = &record[..(len + extra).min(record.len())];
                if rec.len() < len + H::OUTPUT_LEN || len + H::OUTPUT_LEN + MAX_PADDING < rec.len()
                {
                    continue;
                }
                let mut out = [0u8; MAX_OUTPUT_LEN];
                k.digest_record(&ad, rec, len, &mut out[..H::OUTPUT_LEN]);
                assert_eq!(&out[..H::OUTPUT_LEN], want, "len {len} extra {extra}");
            }
        }
    }

    #[test]
    fn sha1() {
        both_paths_match_hmac::<Sha1>();
    }
    #[test]
    fn sha256() {
        both_paths_match_hmac::<Sha256>();
    }
    #[test]
    fn sha384() {
        both_paths_match_hmac::<Sha384>();
    }
}

//! The one interface every AES-GCM under test is put behind, and the measuring loops for it.
//!
//! [`Gcm`] is the minimal in-place, detached-tag API all of them offer. [`Subject`] is the
//! object-safe face the tool keeps in its lists; [`GcmSubject`] implements it for each
//! concrete [`Gcm`] so every timed loop is monomorphised and no virtual call sits inside it.

use std::hint::black_box;
use std::mem::size_of;

use aead::array::Array;
use aead::consts::{U12, U16};
use aead::{AeadInOut, KeyInit};

use crate::clock::{ForBudget, ForCount, Runner, Sample, run_for};
use crate::{AD, Alg, NONCE, Op, message};

/// In-place AES-GCM with a 96-bit nonce and a detached 128-bit tag.
pub trait Gcm {
    /// Encrypts `buf` in place and returns the tag.
    fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16];
    /// Checks `tag` and decrypts `buf` in place; false if the tag is wrong.
    fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool;
}

/// Any RustCrypto `aead` 0.6 AES-GCM (RustCrypto's own `aes-gcm` and our `aes-gcm-vaes`),
/// called through the same trait methods an application would use.
#[derive(Clone, Debug)]
pub struct RustCryptoApi<A>(pub A);

impl<A> Gcm for RustCryptoApi<A>
where
    A: AeadInOut<NonceSize = U12, TagSize = U16>,
{
    #[inline]
    fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        let nonce: &Array<u8, U12> = nonce.into();
        let tag = self
            .0
            .encrypt_inout_detached(nonce, aad, buf.into())
            .expect("seal failed");
        tag.into()
    }

    #[inline]
    fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        let nonce: &Array<u8, U12> = nonce.into();
        let tag: &Array<u8, U16> = tag.into();
        self.0
            .decrypt_inout_detached(nonce, aad, buf.into(), tag)
            .is_ok()
    }
}

/// Builds a RustCrypto-API AEAD from a key slice of the right length.
pub fn rustcrypto_new<A: KeyInit>(key: &[u8]) -> RustCryptoApi<A> {
    RustCryptoApi(A::new_from_slice(key).expect("key length"))
}

/// What the tool holds for each implementation: a name and the ability to time itself.
pub trait Subject {
    /// Name in tables, CSV and the chart.
    fn name(&self) -> &str;
    /// Whether this is one of ours (ratios are ours over the best of the others).
    fn is_ours(&self) -> bool;
    /// Times `op` on `len`-byte messages for about `budget_ns` of CPU time.
    fn measure(&mut self, op: Op, len: usize, budget_ns: u64) -> Sample;
    /// Runs `op` on `len`-byte messages exactly `n` times (for criterion's `iter_custom`).
    fn run_n(&mut self, op: Op, len: usize, n: u64) -> Sample;
    /// Seals a fixed `len`-byte message and returns the tag and the ciphertext, so the
    /// implementations can be checked against each other before anything is timed.
    fn answer(&mut self, len: usize) -> ([u8; 16], Vec<u8>);
    /// Times building (and dropping) the key object.
    fn key_setup(&self, budget_ns: u64) -> Sample;
    /// `size_of` the key object (its inline part; heap it points to is not counted).
    fn key_size(&self) -> usize;
}

/// A [`Subject`] for one concrete [`Gcm`] made by `make` from the key.
pub struct GcmSubject<G, F> {
    name: String,
    ours: bool,
    key: Vec<u8>,
    make: F,
    gcm: G,
}

impl<G, F> std::fmt::Debug for GcmSubject<G, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcmSubject")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<G: Gcm, F: Fn(&[u8]) -> G> GcmSubject<G, F> {
    pub fn new(name: impl Into<String>, ours: bool, key: &[u8], make: F) -> Self {
        let gcm = make(key);
        GcmSubject {
            name: name.into(),
            ours,
            key: key.to_vec(),
            make,
            gcm,
        }
    }

    /// Boxed, for the tool's lists.
    pub fn boxed(name: impl Into<String>, ours: bool, key: &[u8], make: F) -> Box<dyn Subject>
    where
        G: 'static,
        F: 'static,
    {
        Box::new(Self::new(name, ours, key, make))
    }
}

impl<G: Gcm, F: Fn(&[u8]) -> G> Subject for GcmSubject<G, F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_ours(&self) -> bool {
        self.ours
    }

    fn measure(&mut self, op: Op, len: usize, budget_ns: u64) -> Sample {
        timed(&mut self.gcm, op, len, ForBudget(budget_ns))
    }

    fn run_n(&mut self, op: Op, len: usize, n: u64) -> Sample {
        timed(&mut self.gcm, op, len, ForCount(n))
    }

    fn answer(&mut self, len: usize) -> ([u8; 16], Vec<u8>) {
        let mut buf = message(len);
        let tag = self.gcm.seal(&NONCE, &AD, &mut buf);
        let ct = buf.clone();
        assert!(
            self.gcm.open(&NONCE, &AD, &mut buf, &tag),
            "{}: open rejected its own seal at {len} bytes",
            self.name
        );
        assert_eq!(buf, message(len), "{}: open did not invert seal", self.name);
        (tag, ct)
    }

    fn key_setup(&self, budget_ns: u64) -> Sample {
        let key = &self.key[..];
        run_for(budget_ns, || {
            black_box((self.make)(black_box(key)));
        })
    }

    fn key_size(&self) -> usize {
        size_of::<G>()
    }
}

/// Checks that every implementation gives the same tag and ciphertext at a few awkward
/// lengths and at `sizes`, before any of them is timed.
pub fn cross_check(alg: Alg, subs: &mut [Box<dyn Subject>], sizes: &[usize]) -> Result<(), String> {
    let mut lens: Vec<usize> = vec![0, 1, 15, 17, 100, 513];
    lens.extend_from_slice(sizes);
    for len in lens {
        // Who answered first, and their tag and ciphertext.
        let mut first: Option<(String, [u8; 16], Vec<u8>)> = None;
        for s in subs.iter_mut() {
            let (tag, ct) = s.answer(len);
            match &first {
                None => first = Some((s.name().to_string(), tag, ct)),
                Some((n, t, c)) if (t, c) != (&tag, &ct) => {
                    return Err(format!(
                        "{} at {len} bytes: {} and {n} disagree",
                        alg.name(),
                        s.name()
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// One measurement of `op` on a `len`-byte message, run as `runner` says.
fn timed<G: Gcm>(gcm: &mut G, op: Op, len: usize, runner: impl Runner) -> Sample {
    let mut buf = message(len);
    match op {
        Op::Seal => runner.run(|| {
            let tag = gcm.seal(black_box(&NONCE), black_box(&AD), black_box(&mut buf[..]));
            black_box(tag);
        }),
        Op::Open => {
            // With a fixed key and nonce GCM's keystream K is fixed, so sealing twice in
            // place takes P to C = P^K (tag t1 over C) and back to P (tag t0 over P).
            // Opening P with t0 yields C, and opening C with t1 yields P again: alternating
            // the two tags keeps every open authentic without copying the ciphertext back.
            let t1 = gcm.seal(&NONCE, &AD, &mut buf);
            let t0 = gcm.seal(&NONCE, &AD, &mut buf);
            let tags = [t0, t1];
            let mut which = 0;
            runner.run(|| {
                let ok = gcm.open(
                    black_box(&NONCE),
                    black_box(&AD),
                    black_box(&mut buf[..]),
                    &tags[which],
                );
                assert!(ok, "open of an authentic message failed");
                which ^= 1;
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ours, peers};

    fn everyone(alg: Alg) -> Vec<Box<dyn Subject>> {
        let mut v: Vec<Box<dyn Subject>> = ours::available_backends()
            .into_iter()
            .map(|b| ours::subject(alg, Some(b)))
            .collect();
        v.push(ours::core_subject(alg, None));
        v.extend(peers::subjects(alg));
        v
    }

    #[test]
    fn all_implementations_agree() {
        for alg in Alg::ALL {
            cross_check(alg, &mut everyone(alg), &[16, 64, 1350, 4096]).unwrap();
        }
    }

    #[test]
    fn every_open_loop_stays_authentic() {
        // The alternating-tag trick must hold for every implementation, at an odd and an
        // even number of operations.
        for alg in Alg::ALL {
            for mut s in everyone(alg) {
                for n in [1, 2, 7] {
                    let smp = s.run_n(Op::Open, 1350, n);
                    assert_eq!(smp.ops, n, "{}", s.name());
                    s.run_n(Op::Seal, 16, n);
                }
            }
        }
    }
}

//! GHASH on the crate's back ends: a drop-in replacement for `ghash::GHash`
//! (`universal-hash` 0.6).
//!
//! The hash key's powers are computed once in [`GHash::new`]; updates then hash 8 or 16
//! blocks per reduction on the wide back ends. The portable back end wraps `ghash::GHash`.

use crate::{Backend, Error};
use core::fmt;
use universal_hash::{
    Block, Key, KeyInit, ParBlocks, Reset, UhfBackend, UhfClosure, UniversalHash,
    common::{BlockSizeUser, KeySizeUser, ParBlocksSizeUser},
    consts::{U16, U256},
};

#[cfg(target_arch = "x86_64")]
use crate::x86_64::{
    AesNiToken, HPowers, Vaes256Token, Vaes512Token, clmul, load16, store16, vaes256_gcm,
    vaes512_gcm,
};
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__m128i, _mm_setzero_si128};

/// GHASH keyed with `H`, with a running accumulator.
#[derive(Clone)]
pub struct GHash {
    engine: Engine,
}

#[derive(Clone)]
enum Engine {
    #[cfg(target_arch = "x86_64")]
    Hw(Hw),
    Portable(ghash::GHash, ghash::GHash),
}

/// Hash-key powers, accumulator (mirrored form) and the kernel that updates it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone)]
struct Hw {
    h: HPowers,
    acc: __m128i,
    kernel: Kernel,
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
enum Kernel {
    Vaes512(Vaes512Token),
    Vaes256(Vaes256Token),
    AesNi(AesNiToken),
}

#[cfg(target_arch = "x86_64")]
impl Hw {
    fn update(&mut self, data: &[u8]) {
        self.acc = match self.kernel {
            Kernel::Vaes512(t) => {
                // SAFETY: the token proves the kernel's features.
                unsafe { vaes512_gcm::ghash(&self.h, t, self.acc, data) }
            }
            Kernel::Vaes256(t) => {
                // SAFETY: as above.
                unsafe { vaes256_gcm::ghash(&self.h, t, self.acc, data) }
            }
            Kernel::AesNi(_) => {
                // SAFETY: as above (PCLMULQDQ and SSSE3).
                unsafe { clmul::update(&self.h, self.acc, data) }
            }
        };
    }

    fn result(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        // SAFETY: every kernel's token proves SSSE3.
        store16(&mut out, unsafe { clmul::bswap(self.acc) });
        out
    }
}

impl GHash {
    /// GHASH with hash key `h` on a chosen back end, or [`Error::BackendUnavailable`].
    pub fn new_with_backend(h: &Key<Self>, backend: Backend) -> Result<Self, Error> {
        #[cfg(target_arch = "x86_64")]
        let hw = |kernel: Kernel, t: AesNiToken| {
            let hb: &[u8; 16] = h.as_ref();
            // SAFETY: the token proves PCLMULQDQ and SSSE3.
            let powers = unsafe { clmul::powers(load16(hb)) };
            let _ = t;
            // SAFETY: SSE2 is baseline on x86_64.
            let acc = unsafe { _mm_setzero_si128() };
            Engine::Hw(Hw {
                h: powers,
                acc,
                kernel,
            })
        };
        let engine = match backend {
            #[cfg(target_arch = "x86_64")]
            Backend::Vaes512 => {
                let t = Vaes512Token::new().ok_or(Error::BackendUnavailable)?;
                hw(Kernel::Vaes512(t), t.aesni())
            }
            #[cfg(target_arch = "x86_64")]
            Backend::Vaes256 => {
                let t = Vaes256Token::new().ok_or(Error::BackendUnavailable)?;
                hw(Kernel::Vaes256(t), t.aesni())
            }
            #[cfg(target_arch = "x86_64")]
            Backend::AesNi => {
                let t = AesNiToken::new().ok_or(Error::BackendUnavailable)?;
                hw(Kernel::AesNi(t), t)
            }
            Backend::Portable => {
                let g = ghash::GHash::new(h);
                Engine::Portable(g.clone(), g)
            }
            #[allow(unreachable_patterns)]
            _ => return Err(Error::BackendUnavailable),
        };
        Ok(Self { engine })
    }

    /// The back end this hash runs on.
    pub fn backend(&self) -> Backend {
        match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Hw(hw) => match hw.kernel {
                Kernel::Vaes512(_) => Backend::Vaes512,
                Kernel::Vaes256(_) => Backend::Vaes256,
                Kernel::AesNi(_) => Backend::AesNi,
            },
            Engine::Portable(..) => Backend::Portable,
        }
    }

    fn update_bytes(&mut self, data: &[u8]) {
        match &mut self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Hw(hw) => hw.update(data),
            Engine::Portable(g, _) => g.update_padded(data),
        }
    }
}

impl KeySizeUser for GHash {
    type KeySize = U16;
}

impl KeyInit for GHash {
    fn new(h: &Key<Self>) -> Self {
        Self::new_with_backend(h, Backend::detect())
            .or_else(|_| Self::new_with_backend(h, Backend::Portable))
            .expect("the portable back end is always available")
    }
}

impl BlockSizeUser for GHash {
    type BlockSize = U16;
}

/// Feeds whole blocks to the engine, 256 at a time from `update`.
struct Feeder<'a>(&'a mut GHash);

impl BlockSizeUser for Feeder<'_> {
    type BlockSize = U16;
}

impl ParBlocksSizeUser for Feeder<'_> {
    type ParBlocksSize = U256;
}

impl UhfBackend for Feeder<'_> {
    fn proc_block(&mut self, block: &Block<Self>) {
        self.0.update_bytes(block.as_slice());
    }

    fn proc_par_blocks(&mut self, blocks: &ParBlocks<Self>) {
        self.0
            .update_bytes(cipher::Array::slice_as_flattened(blocks.as_slice()));
    }
}

impl UniversalHash for GHash {
    fn update_with_backend(&mut self, f: impl UhfClosure<BlockSize = U16>) {
        f.call(&mut Feeder(self));
    }

    fn finalize(self) -> Block<Self> {
        match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Hw(hw) => hw.result().into(),
            Engine::Portable(g, _) => g.clone().finalize(),
        }
    }
}

impl Reset for GHash {
    fn reset(&mut self) {
        match &mut self.engine {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is baseline on x86_64.
            Engine::Hw(hw) => hw.acc = unsafe { _mm_setzero_si128() },
            Engine::Portable(g, fresh) => *g = fresh.clone(),
        }
    }
}

impl fmt::Debug for GHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GHash")
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}

#[cfg(all(target_arch = "x86_64", feature = "zeroize"))]
impl Drop for Hw {
    fn drop(&mut self) {
        crate::x86_64::wipe(&mut self.h.0);
        crate::x86_64::wipe(core::slice::from_mut(&mut self.acc));
    }
}

#[cfg(feature = "zeroize")]
impl zeroize::ZeroizeOnDrop for GHash {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_ghash_crate() {
        let mut seed = 99u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        };
        let mut data = [0u8; 700];
        for backend in Backend::available() {
            // Under Miri, which is slow, every fifth of these lengths.
            let step = if cfg!(miri) { 35 } else { 7 };
            for len in (0..700)
                .step_by(step)
                .chain([16, 32, 128, 256, 272, 512, 513])
            {
                let h: [u8; 16] = core::array::from_fn(|_| next());
                data.iter_mut().for_each(|b| *b = next());
                let key = Key::<GHash>::from(h);
                let mut ours = GHash::new_with_backend(&key, backend).unwrap();
                let mut theirs = <ghash::GHash as KeyInit>::new(&key);
                // Split the input to exercise the accumulator across calls.
                let cut = len / 3 / 16 * 16;
                ours.update_padded(&data[..cut]);
                ours.update_padded(&data[cut..len]);
                theirs.update_padded(&data[..len]);
                let ours_clone = ours.clone();
                assert_eq!(ours.finalize(), theirs.finalize(), "{backend:?} len {len}");
                let mut again = ours_clone;
                again.reset();
                again.update_padded(&data[..16]);
                let mut fresh = <ghash::GHash as KeyInit>::new(&key);
                fresh.update_padded(&data[..16]);
                assert_eq!(again.finalize(), fresh.finalize(), "{backend:?} reset");
            }
        }
    }
}

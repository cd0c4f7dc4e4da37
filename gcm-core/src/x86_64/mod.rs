//! The x86_64 kernels, and the key material they share.
//!
//! All three hardware back ends use one key layout, [`HwKey`]: the AES encryption round
//! keys and a table of hash-key powers `H^16 ... H^1` (highest first, then three zero
//! blocks). Highest-first means that a 512-bit load at index `16 - n` yields the powers
//! that the next `n` blocks are multiplied by, `H^n, H^(n-1), ...`, and the zero blocks
//! let a partial final vector load past `H^1` without leaving the table. The 256-bit and
//! 128-bit kernels use the same table (they only ever reach the last 8 entries). The
//! token a key is made with also picks how the table is derived ([`PowersToken`]): in
//! 128-bit vectors, or two powers a vector on the VAES back ends.
//!
//! Whether a kernel may run is proven by a zero-sized token ([`AesNiToken`],
//! [`AesNiAvxToken`], [`Vaes256Token`], [`Vaes512Token`]) that can only be made after the
//! CPU check; the engine enum stores the token next to the key, and every `unsafe` call
//! into a `#[target_feature]` function cites it.

// Kernels index round keys and hash-key powers by round or block number, in step
// with other arrays; index loops say that more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]

use crate::Backend;
use core::arch::x86_64::__m128i;

/// The entry points of a GCM kernel module: `seal_or_open` and `ctr`, each dispatching
/// on the key's round count (and, for a `tuned` kernel, its tuning) to the module's
/// `gcm::<NR, ENC>` or `bulk::<NR, true, false>`.
/// The kernels are monomorphised per key size so that their round loops unroll; this
/// is the one place that picks among them.
///
/// Both pass on whether the counter is public, which decides how the kernel may step
/// its counters: the fast schemes branch on, or index tables by, the counter's value.
/// That is a public fact for a 96-bit nonce (`J0 = nonce || 1`) but not for other nonce
/// lengths, whose `J0` is a GHASH under the secret hash key; the caller passes the nonce
/// length test, never anything derived from `J0`.
macro_rules! kernel_entry_points {
    ($token:ty, $features:literal) => {
        kernel_entry_points!(@ $token, $features, |key, t, j0, nonce96, aad, io| {
            match key.aes.rounds {
                10 => gcm::<10, ENC>(key, t, j0, nonce96, aad, io),
                12 => gcm::<12, ENC>(key, t, j0, nonce96, aad, io),
                _ => gcm::<14, ENC>(key, t, j0, nonce96, aad, io),
            }
        });
    };
    // For a kernel whose `gcm` also takes the key's `tuning.save_multiplies` as a const
    // generic: the choice is made here, once per call, and the kernel is monomorphised for
    // both.
    ($token:ty, $features:literal, tuned) => {
        kernel_entry_points!(@ $token, $features, |key, t, j0, nonce96, aad, io| {
            match (key.aes.rounds, key.tuning.save_multiplies) {
                (10, false) => gcm::<10, ENC, false>(key, t, j0, nonce96, aad, io),
                (10, true) => gcm::<10, ENC, true>(key, t, j0, nonce96, aad, io),
                (12, false) => gcm::<12, ENC, false>(key, t, j0, nonce96, aad, io),
                (12, true) => gcm::<12, ENC, true>(key, t, j0, nonce96, aad, io),
                (_, false) => gcm::<14, ENC, false>(key, t, j0, nonce96, aad, io),
                (_, true) => gcm::<14, ENC, true>(key, t, j0, nonce96, aad, io),
            }
        });
    };
    (@ $token:ty, $features:literal, |$key:ident, $t:ident, $j0:ident, $nonce96:ident, $aad:ident, $io:ident| $pick:block) => {
        /// Encrypts (`ENC`) or decrypts `io` and returns the full tag (that the ciphertext
        /// should carry, when decrypting); `nonce96` says whether `J0` came from a 96-bit
        /// nonce, which makes the counters public.
        ///
        /// # Safety
        /// `io` must satisfy the contract of [`InOut::new`](super::InOut::new).
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn seal_or_open<const ENC: bool>(
            $key: &HwKey,
            $t: $token,
            $j0: u128,
            $nonce96: bool,
            $aad: &[u8],
            $io: InOut,
        ) -> [u8; 16] {
            // SAFETY: forwarded contract; the token proves the features.
            unsafe { $pick }
        }

        /// AES-CTR (32-bit counter) from `counter_block`, no hashing: the bulk loop
        /// without GHASH. `public` says whether the counter block may steer the kernel
        /// (see the macro's docs).
        ///
        /// # Safety
        /// `io` must satisfy the contract of [`InOut::new`](super::InOut::new).
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn ctr(
            key: &HwKey,
            _t: $token,
            counter_block: &[u8; 16],
            public: bool,
            io: InOut,
        ) {
            let ctr = bswap(load16(counter_block));
            let x = _mm_setzero_si128();
            // SAFETY: forwarded contract; the token proves the features.
            unsafe {
                match key.aes.rounds {
                    10 => bulk::<10, true, false>(key, ctr, public, x, io),
                    12 => bulk::<12, true, false>(key, ctr, public, x, io),
                    _ => bulk::<14, true, false>(key, ctr, public, x, io),
                };
            }
        }
    };
}

/// Runs `$body` for each middle AES round `$r` (1 to `$nr - 1`, for `$nr` up to 14),
/// written out with `$r` a constant in each copy, where a `for r in 1..NR` loop leaves
/// unrolling to LLVM. A stitched kernel's round carries its share of the hash (loads,
/// products, a reduction in one of them), and past some size LLVM kept such a loop
/// rolled, with the block index, the powers' offsets and the reduction's test worked
/// out at run time in every round (see `aesni_gcm::batches_body`).
macro_rules! each_middle_round {
    ($r:ident < $nr:expr, $body:block) => {
        each_middle_round!(@ $r, $nr, $body, 1 2 3 4 5 6 7 8 9 10 11 12 13)
    };
    (@ $r:ident, $nr:expr, $body:block, $($n:literal)*) => {
        $({
            const $r: usize = $n;
            if $r < $nr $body
        })*
    };
}

pub(crate) mod aes_ni;
pub(crate) mod aesni_gcm;
pub(crate) mod block_cipher;
pub(crate) mod clmul;
mod counters;
mod partial;
pub(crate) mod vaes256_gcm;
pub(crate) mod vaes512_gcm;

macro_rules! token {
    ($(#[$doc:meta])* $name:ident, $backend:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name(());

        impl $name {
            /// The token, if this CPU has the features; `None` otherwise.
            pub(crate) fn new() -> Option<Self> {
                $backend.is_available().then_some(Self(()))
            }
        }
    };
}

token!(
    /// Proof that AES-NI, PCLMULQDQ, SSSE3 and SSE4.1 are present.
    AesNiToken,
    Backend::AesNi
);
token!(
    /// Proof that the `AesNi` features plus AVX2, VAES and VPCLMULQDQ (with YMM state) are present.
    Vaes256Token,
    Backend::Vaes256
);
token!(
    /// Proof that the `Vaes256` features plus AVX-512 F/BW/VL (with ZMM state) are present.
    Vaes512Token,
    Backend::Vaes512
);

/// Proof that the `AesNi` features plus AVX (with YMM state) are present: the 128-bit
/// kernel's bulk loop then runs in VEX encoding (see `aesni_gcm::vex`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AesNiAvxToken(());

impl AesNiAvxToken {
    /// The token, if this CPU has the features; `None` otherwise.
    pub(crate) fn new() -> Option<Self> {
        use crate::cpu::CpuFeatures as F;
        let avx = crate::cpu::features().has(F::AVX | F::OS_YMM);
        (Backend::AesNi.is_available() && avx).then_some(Self(()))
    }

    pub(crate) fn aesni(self) -> AesNiToken {
        AesNiToken(())
    }
}

impl Vaes256Token {
    /// Every CPU that has the VAES features has the AES-NI ones (the selection requires it).
    pub(crate) fn aesni(self) -> AesNiToken {
        AesNiToken(())
    }
}

impl Vaes512Token {
    pub(crate) fn aesni(self) -> AesNiToken {
        AesNiToken(())
    }

    /// Every CPU that has the `Vaes512` features has the `Vaes256` ones (the selection
    /// requires it).
    pub(crate) fn vaes256(self) -> Vaes256Token {
        Vaes256Token(())
    }
}

/// AES encryption round keys: `rounds + 1` of them are used (11, 13 or 15).
#[derive(Clone)]
pub(crate) struct RoundKeys {
    pub(crate) rk: [__m128i; 15],
    pub(crate) rounds: usize,
}

/// The hash-key powers `H^16 ... H^1` followed by three zero blocks, in the kernels'
/// representation (byte-reflected and multiplied by `x`; see `clmul`).
#[derive(Clone)]
#[repr(C, align(64))]
pub(crate) struct HPowers(pub(crate) [__m128i; HPowers::LEN]);

impl HPowers {
    pub(crate) const COUNT: usize = 16;
    pub(crate) const LEN: usize = Self::COUNT + 3;
}

/// For Karatsuba multiplication by the powers: entry `k` holds the XOR of the two 64-bit
/// halves of `HPowers` entry `k` in its low half, and that of entry `k + 2` in its high
/// half (zeros past `H^1`, as there). A kernel that multiplies `a` by `H^n` as `a0·h0`,
/// `a1·h1` and `(a0 ^ a1)·(h0 ^ h1)` reads the third factor from the low half at the same
/// index, in any lane. The high halves serve `vaes256_gcm`'s middle products of two
/// vectors at once, whose lanes hold entries `k` and `k + 2` side by side.
#[derive(Clone)]
#[repr(C, align(64))]
pub(crate) struct HXor(pub(crate) [__m128i; HPowers::LEN]);

/// Choices a kernel makes differently on different CPUs (for the same instructions), made
/// once per key from the CPU's identity (see `backend::tuning_for_cpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// The 512-bit kernel spends as few multiplies as it can, because each one takes
    /// issue slots the AES instructions need (AMD Zen 4; measured faster on Intel's
    /// AVX-512 cores too, see `backend::tuning_for_cpu`): it adds its running hash to the
    /// next iteration's first block (summing its lanes) instead of multiplying all lanes
    /// by `H^16` (see `vaes512_gcm::Carry`), and multiplies in Karatsuba form, three
    /// products per block instead of four (see `vaes512_gcm::stitched`). The 128-bit
    /// kernel's bulk loop multiplies in Karatsuba form too (AMD, whose multiplier takes
    /// one every other cycle; see `aesni_gcm`).
    pub(crate) save_multiplies: bool,
    /// Which short messages the 512-bit kernel's entry point sends to the 256-bit kernel
    /// (see `vaes512_gcm::seal_or_open_routed`).
    pub(crate) short_in_256_bits: ShortIn256Bits,
    /// With `save_multiplies`, the 512-bit kernel reduces once per 32 blocks of a long
    /// AES-128 message instead of once per 16, multiplying the first 16 by `H^32..H^17`
    /// (`HwKey::h_high`), so that its loop-carried reduction spans two iterations (AMD Zen
    /// 4 and 5, Intel's AVX-512 cores; see `vaes512_gcm::PAIR_MIN_LEN`).
    pub(crate) pair_reduction: bool,
    /// The 512-bit kernel's AES-128 open hashes each step's ciphertext during the next
    /// step's AES rounds, as a seal hashes its output, rather than during its own (Intel's
    /// AVX-512 cores; see `vaes512_gcm::bulk_with`).
    pub(crate) open_hashes_late: bool,
}

/// The short messages that the 512-bit kernel hands to the 256-bit one (`Tuning`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ShortIn256Bits {
    /// None: every message stays in the 512-bit kernel (AMD Zen 5).
    #[default]
    None,
    /// Those the 256-bit kernel does in one pass, up to 14 blocks
    /// (`vaes256_gcm::takes_one_pass`; Intel).
    OnePass,
    /// Those, the ones of up to 29 blocks it does in two groups, and seals of up to 42
    /// blocks in more groups that are not whole 16-block steps (AMD Zen 4).
    Groups,
}

/// Everything a hardware GCM kernel needs, made once per key.
#[derive(Clone)]
pub(crate) struct HwKey {
    pub(crate) aes: RoundKeys,
    pub(crate) h: HPowers,
    pub(crate) hx: HXor,
    /// `H^32..H^17` and their Karatsuba factors, for `Tuning::pair_reduction` only (zero
    /// when the key's tuning does not use them; see `vaes512_gcm::high_powers_into`).
    pub(crate) h_high: HighPowers,
    pub(crate) hx_high: HighPowers,
    pub(crate) tuning: Tuning,
}

/// Sixteen powers of `H` beyond `HPowers`' (`H^32..H^17`, highest first, in the same
/// representation), or the XOR of each one's 64-bit halves (in both halves).
#[derive(Clone)]
#[repr(C, align(64))]
pub(crate) struct HighPowers(pub(crate) [__m128i; 16]);

impl HwKey {
    /// Expands the AES key and derives the hash-key powers.
    #[cfg(test)]
    pub(crate) fn new(key: &[u8], token: impl PowersToken) -> Self {
        let mut k = Self::ZERO;
        k.init(key, token);
        k
    }

    /// A key of zero bytes, for [`Self::init`] to fill where it will stay.
    pub(crate) const ZERO: Self = {
        // SAFETY: `HwKey` is plain data (vectors, a `usize`, `bool`s and a field-less enum
        // whose first variant has discriminant zero), for which all-zero bytes are a valid
        // value.
        unsafe { core::mem::zeroed() }
    };

    /// Expands the AES key into `self` and derives the hash-key powers, in place.
    ///
    /// In place rather than returned: the key is about a kilobyte, and returned by value it
    /// was built on the stack and copied into the `GcmKey` with `memcpy` (and the round
    /// keys once more before that), whose wide loads cannot take their data from the
    /// narrower stores just made. On an AMD EPYC Zen 3 `memmove` was a quarter of the
    /// profile of `GcmKey::new`; filled in place, AES-128 key set-up went from 174 to
    /// 164 ns through `GcmKey` and from 197 to 186 ns through `Aes128Gcm` (fastest of 8
    /// alternated runs of the `speed` tool). The zero key it fills is written in place too
    /// (`gcm::zero_hw_engine`).
    pub(crate) fn init(&mut self, key: &[u8], token: impl PowersToken) {
        // SAFETY: every token proves AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
        unsafe { self.init_impl(key, token) }
    }

    /// Takes over an expanded key (no second schedule) and derives the powers.
    pub(crate) fn from_round_keys(aes: RoundKeys, token: impl PowersToken) -> Self {
        let mut k = Self::ZERO;
        k.aes = aes;
        // SAFETY: every token proves AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
        unsafe { k.derive_impl(token) };
        k
    }

    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
    fn init_impl(&mut self, key: &[u8], token: impl PowersToken) {
        aes_ni::expand_key_into(key, &mut self.aes);
        self.derive_impl(token);
    }

    /// The powers of `H = E_K(0)` and the rest, from the round keys already in `self`.
    #[inline]
    #[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
    fn derive_impl(&mut self, token: impl PowersToken) {
        // First: the 512-bit kernel's derivation looks at the tuning.
        self.tuning = crate::backend::tuning_for_cpu(crate::cpu::cpu());
        let h = aes_ni::encrypt_block(&self.aes, core::arch::x86_64::_mm_setzero_si128());
        token.derive_powers(h, self);
    }
}

/// A back end's token, which says how its key derives the tables of hash-key powers: in
/// 128-bit vectors, or two powers a vector where the CPU has 256-bit VPCLMULQDQ (see
/// `vaes256_gcm::powers_into`), with the 512-bit kernel's extra powers where its tuning
/// uses them (`vaes512_gcm::derive_powers`). Every token proves the AES-NI features.
pub(crate) trait PowersToken: Copy {
    /// Fills `key.h` and `key.hx` (and whatever else this back end multiplies by) from
    /// `H = E_K(0)` in byte form; `key.aes` and `key.tuning` are set.
    fn derive_powers(self, h_bytes: __m128i, key: &mut HwKey);
}

impl PowersToken for AesNiToken {
    #[inline]
    fn derive_powers(self, h_bytes: __m128i, key: &mut HwKey) {
        // SAFETY: the token proves PCLMULQDQ and SSSE3.
        unsafe {
            clmul::powers_into(h_bytes, &mut key.h);
            clmul::xored_halves_into(&key.h, &mut key.hx);
        }
    }
}

impl PowersToken for Vaes256Token {
    #[inline]
    fn derive_powers(self, h_bytes: __m128i, key: &mut HwKey) {
        // SAFETY: the token proves VPCLMULQDQ, AVX2, PCLMULQDQ and SSSE3.
        unsafe {
            vaes256_gcm::powers_into(h_bytes, self, &mut key.h);
            clmul::xored_halves_into(&key.h, &mut key.hx);
        }
    }
}

impl PowersToken for Vaes512Token {
    #[inline]
    fn derive_powers(self, h_bytes: __m128i, key: &mut HwKey) {
        vaes512_gcm::derive_powers(h_bytes, self, key)
    }
}

#[cfg(feature = "zeroize")]
impl Drop for HwKey {
    fn drop(&mut self) {
        // The whole struct, padding included: a key built on the stack carries stale stack
        // bytes in its padding, and for AES-256 the 16 bytes after the power table were
        // found to hold the last round key (tests/tests/zeroize.rs).
        // SAFETY: `HwKey` is plain data (vectors and a `usize`, no pointers, no fields
        // with `Drop`), for which all-zero bytes are a valid value.
        unsafe { zeroize::zeroize_flat_type(self) };
    }
}

/// Overwrites key material with zeros in a way the compiler may not elide.
#[cfg(feature = "zeroize")]
pub(crate) fn wipe(v: &mut [__m128i]) {
    use core::arch::x86_64::_mm_setzero_si128;
    for x in v.iter_mut() {
        // SAFETY: `x` is a valid, aligned, exclusive reference.
        unsafe { core::ptr::write_volatile(x, _mm_setzero_si128()) };
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// Which caller an instance of a kernel's `short_message` serves (its `PART`
/// parameter): the one-pass short path with the whole message (`WHOLE`), or a part of a
/// message that path takes in groups or batches (`vaes256_gcm::short_groups`,
/// `aesni_gcm::short_two_batches`, `aesni_gcm::short_groups`): the first, a middle one,
/// the last. The instances do the same work (but in `aesni_gcm` only the first and the
/// whole encrypt `J0`); kept apart, each has one caller and can be inlined there (in
/// `vaes256_gcm` about 80 KB more code in a release binary). Shared, the compiler
/// called them out of line (the sums through memory), and `vaes256_gcm::short`'s seals
/// of 16 and 224 bytes took 72 and 118 TSC ticks instead of 63 and 110 (Zen 4, measured
/// as in `short_groups`). `aesni_gcm`'s Karatsuba instances are better out of line (see
/// its `short_message`).
pub(crate) const WHOLE: u8 = 0;
pub(crate) const FIRST_PART: u8 = 1;
pub(crate) const LAST_PART: u8 = 2;
pub(crate) const MIDDLE_PART: u8 = 3;

/// Source and destination of a bulk operation: either the same buffer (in place) or two
/// buffers that do not overlap, each valid for `len` bytes.
#[derive(Clone, Copy)]
pub(crate) struct InOut {
    pub(crate) src: *const u8,
    pub(crate) dst: *mut u8,
    pub(crate) len: usize,
}

impl InOut {
    /// # Safety
    /// `src` must be valid for reads and `dst` for reads and writes of `len` bytes (the
    /// kernels read back ciphertext they have written, to hash it), and either
    /// `src == dst` or the two ranges must not overlap.
    pub(crate) unsafe fn new(src: *const u8, dst: *mut u8, len: usize) -> Self {
        Self { src, dst, len }
    }

    /// The first `len` bytes of the same buffers (`len <= self.len`).
    #[inline(always)]
    pub(crate) fn take(self, len: usize) -> Self {
        assert!(len <= self.len);
        Self { len, ..self }
    }

    /// The same buffers from byte `off` on (`off <= len`).
    #[inline(always)]
    pub(crate) fn skip(self, off: usize) -> Self {
        assert!(off <= self.len);
        // The pointers stay inside (or one past) their allocations.
        Self {
            src: self.src.wrapping_add(off),
            dst: self.dst.wrapping_add(off),
            len: self.len - off,
        }
    }
}

/// `p`, through an empty `asm!` the compiler cannot see into: two loads from the same
/// address made through separate calls are not merged into one value kept in a register
/// (which, with 16 registers, or beside the 512-bit kernel's round keys and products,
/// would be spilled to the stack and reloaded anyway).
#[inline(always)]
pub(super) fn unshared(p: *const u8) -> *const u8 {
    // Only the address goes through the `asm!`; the pointer keeps its provenance.
    #[cfg(not(miri))]
    {
        let mut addr = p.addr();
        // SAFETY: the template is empty: no instruction runs, no memory or flags change.
        unsafe {
            core::arch::asm!("/* {0} */", inout(reg) addr, options(nomem, nostack, preserves_flags));
        }
        p.with_addr(addr)
    }
    // Miri cannot run `asm!`; the hint only matters to the code generator.
    #[cfg(miri)]
    p
}

/// Loads 16 bytes.
#[inline(always)]
pub(crate) fn load16(b: &[u8; 16]) -> __m128i {
    // SAFETY: `b` is 16 readable bytes; the load is unaligned and needs only SSE2,
    // which every x86_64 CPU has.
    unsafe { core::arch::x86_64::_mm_loadu_si128(b.as_ptr().cast()) }
}

/// The pre-counter block `J0`, which `GcmKey` passes as the little-endian `u128` of its
/// bytes, as a vector.
///
/// `J0` crosses from `GcmKey` to the kernels as a `u128`, which the Rust ABI carries in
/// two general registers, rather than as a 16-byte array, which it passes through memory.
/// Through memory, `J0` was built with two 8-byte stores and loaded with one 16-byte load
/// (the compiler merges two 8-byte loads of adjacent halves), and a load that spans two
/// stores cannot take its data from the store buffer: it waits until they reach the
/// cache, on every call.
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn load_j0(j0: u128) -> __m128i {
    core::arch::x86_64::_mm_set_epi64x((j0 >> 64) as i64, j0 as i64)
}

/// Stores 16 bytes.
#[inline(always)]
pub(crate) fn store16(b: &mut [u8; 16], v: __m128i) {
    // SAFETY: `b` is 16 writable bytes; unaligned SSE2 store.
    unsafe { core::arch::x86_64::_mm_storeu_si128(b.as_mut_ptr().cast(), v) }
}

/// `E(J0)`, the tag's mask, encrypted where this call stands rather than where it is used.
///
/// The kernels compute it first, so that its chain of dependent AES rounds (10 to 14 at
/// a latency of 4 cycles on AMD Zen 4) runs beside the rest. But LLVM sank the pure
/// computation to its one use: in the 512-bit kernel's open, after the call to the tail
/// and the last reduction, its round keys reloaded from the stack, so that the chain was
/// the last thing the tag waited for, with nothing left to overlap it. An empty `asm!`
/// with side effects (no `pure`) that takes the value keeps it here: LLVM keeps such an
/// `asm!` in order with the kernel's other side effects (its stores and calls) and must
/// have the value before it. (In the disassembly the chain now ends a few dozen
/// instructions into the kernel.)
///
/// Measured on an AMD EPYC Zen 4 (family 25 model 17), TSC ticks per call, fastest of
/// 2000 batches of eight, 8-12 runs of each build alternated, AD 13 bytes, sunk -> here:
/// - the 512-bit kernel, AES-256 seal / open: 240 B 175 / 198 -> 156 / 149, 256 B 159-165
///   / 165 -> 136 / 136-149, 384 B 217-221 / 211 -> 208 / 185-188, 1350 B 451-461 /
///   429-435 -> 438 / 406-416, 4 KiB 945 / 910 -> 926 / 910; AES-128 within a few ticks
///   either way from 200 B to 16 KiB (its chain is four rounds shorter);
/// - the 256-bit kernel forced, AES-128 seal / open: 256 B 139 / 120 -> 123 / 113, 384 B
///   172 / 159 -> 159 / 139, 1350 B 448 / 386 -> 429 / 373; AES-256 256 B 156 / 146 ->
///   136 / 120, 1350 B 500 / 451 -> 471 / 425, 4 KiB open 1033 -> 994;
/// - its one-pass short path (used for the 512-bit kernel's short seals on Zen 4 too),
///   AES-256 seal 160 B 110-113 -> 87, 224 B 123-126 -> 107, AES-128 160 B 87 -> 78;
///   16 to 127 bytes within a few ticks either way.
///
/// The 128-bit kernel (forced) places it so for seal: AES-128 320 B 328 -> 289, 384 B 351
/// -> 302, 512 B 416 -> 370, 768 B 507 -> 484, AES-256 240 B 360 -> 302 (14 runs, 1500
/// batches each); its open keeps LLVM's order, which measured as fast or faster (AES-128
/// 200 B 256-263 against 282-312, the rest within noise).
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn tag_mask_now<const NR: usize>(rk: &[__m128i; 15], j0: __m128i) -> __m128i {
    #[allow(unused_mut)]
    let mut m = aes_ni::encrypt1::<NR>(rk, j0);
    // Miri cannot run `asm!`, and MemorySanitizer would report the secret going into it
    // and lose track of it coming out; the placement only matters to the code generator.
    // SAFETY: the template is empty: no instruction runs, no memory or flags change.
    #[cfg(not(any(miri, ct_msan)))]
    unsafe {
        core::arch::asm!("/* {0} */", inout(xmm_reg) m, options(nomem, nostack, preserves_flags));
    }
    m
}

/// GHASH's last block, the bit lengths of the associated data and the ciphertext, in
/// mirrored form.
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn lengths_block(aad_len: usize, len: usize) -> __m128i {
    core::arch::x86_64::_mm_set_epi64x((aad_len as i64) << 3, (len as i64) << 3)
}

/// The tag, from `x`, the hash (mirrored form) of the associated data and ciphertext:
/// the lengths block folded in and one last multiplication by `H`, byte order restored,
/// masked with `tag_mask = E(J0)`. The same for every kernel.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(crate) fn finish_tag(
    h: &HPowers,
    x: __m128i,
    aad_len: usize,
    len: usize,
    tag_mask: __m128i,
) -> [u8; 16] {
    use core::arch::x86_64::_mm_xor_si128;
    let s = clmul::mont_mul(
        _mm_xor_si128(x, lengths_block(aad_len, len)),
        h.0[HPowers::COUNT - 1],
    );
    let mut tag = [0u8; 16];
    store16(&mut tag, _mm_xor_si128(clmul::bswap(s), tag_mask));
    tag
}

/// [`finish_tag`], unless the kernel already hashed the lengths block in its last
/// reduction (`lengths_hashed`): then `x` is the whole GHASH, and only the byte order and
/// the mask remain.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(crate) fn tag_from(
    h: &HPowers,
    x: __m128i,
    lengths_hashed: bool,
    aad_len: usize,
    len: usize,
    tag_mask: __m128i,
) -> [u8; 16] {
    if lengths_hashed {
        let mut tag = [0u8; 16];
        store16(
            &mut tag,
            core::arch::x86_64::_mm_xor_si128(clmul::bswap(x), tag_mask),
        );
        tag
    } else {
        finish_tag(h, x, aad_len, len, tag_mask)
    }
}

/// GHASH from zero over each part, each zero-padded, as a block in byte form (used for
/// `J0` of nonces that are not 96 bits long).
pub(crate) fn ghash_parts(h: &HPowers, _token: AesNiToken, parts: &[&[u8]]) -> [u8; 16] {
    // SAFETY: the token proves PCLMULQDQ and SSSE3.
    unsafe { ghash_parts_impl(h, parts) }
}

#[target_feature(enable = "pclmulqdq,ssse3")]
fn ghash_parts_impl(h: &HPowers, parts: &[&[u8]]) -> [u8; 16] {
    let mut x = core::arch::x86_64::_mm_setzero_si128();
    for p in parts {
        x = clmul::update(h, x, p);
    }
    let mut out = [0u8; 16];
    store16(&mut out, clmul::bswap(x));
    out
}

/// Copies `n` bytes of `io`'s input at `off` into the front of `buf`.
///
/// # Safety
/// `off + n <= io.len` and `n <= buf.len()`.
#[inline(always)]
pub(crate) unsafe fn read_tail(io: InOut, off: usize, n: usize, buf: &mut [u8]) {
    debug_assert!(off + n <= io.len && n <= buf.len());
    // SAFETY: the caller keeps the range inside the input and the buffer; a stack buffer
    // never overlaps the caller's memory.
    unsafe { core::ptr::copy_nonoverlapping(io.src.add(off), buf.as_mut_ptr(), n) }
}

/// Copies the front `n` bytes of `buf` to `io`'s output at `off`.
///
/// # Safety
/// `off + n <= io.len` and `n <= buf.len()`.
#[inline(always)]
pub(crate) unsafe fn write_tail(io: InOut, off: usize, n: usize, buf: &[u8]) {
    debug_assert!(off + n <= io.len && n <= buf.len());
    // SAFETY: as for `read_tail`.
    unsafe { core::ptr::copy_nonoverlapping(buf.as_ptr(), io.dst.add(off), n) }
}

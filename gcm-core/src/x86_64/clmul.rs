//! GHASH arithmetic with carry-less multiplication, on 128-bit vectors.
//!
//! # Representation
//!
//! GHASH numbers the bits of a block backwards: the most significant bit of byte 0 is the
//! coefficient of `x^0`. Reversing the 16 bytes (one `PSHUFB`) turns a block into a
//! 128-bit integer whose bit `127 - k` is the coefficient of `x^k`, i.e. the polynomial
//! read in mirror image. Writing `y` for the mirrored variable, the field polynomial
//! `x^128 + x^7 + x^2 + x + 1` becomes `g(y) = y^128 + y^127 + y^126 + y^121 + 1`, and
//! the GHASH product of `a` and `b` becomes `a·b·y^-127 mod g` (a carry-less multiply of
//! two mirrored numbers comes out mirrored in 255 bits, one short of 256).
//!
//! # Multiplication
//!
//! The kernels compute `a·b·y^-128 mod g`, a Montgomery product, because its reduction
//! is two cheap folds (below). The missing factor `y` is put into the key instead: every
//! stored power of the hash key is `H^k·y`, so `mont(a, H^k·y) = a·H^k·y^-127`, the GHASH
//! product. The powers themselves follow from `mont(H^j·y, H·y) = H^(j+1)·y`.
//!
//! A product of two 128-bit values is done in 64-bit halves: `LO = a0·b0`,
//! `MI = a0·b1 + a1·b0`, `HI = a1·b1`, so the full product is `LO + MI·y^64 + HI·y^128`.
//! Schoolbook form takes four multiplies; Karatsuba's takes three, `MI = (a0 + a1)·(b0 + b1)
//! + LO + HI`, at the price of a shuffle and two XORs. Which pays depends on the CPU: where
//! the multiplier is pipelined one per cycle beside the AES units (Intel), the extra
//! shuffles compete with the multiplies for the same port and schoolbook wins; where one
//! multiply issues every two cycles and takes issue slots the AES instructions need (AMD
//! Zen 3 and 4), the multiplies are the bottleneck and Karatsuba wins (`vaes256_gcm`, and
//! `vaes512_gcm` and `aesni_gcm` on AMD, with the factors `b0 + b1` precomputed in
//! [`HXor`]). The sum of
//! many such products is reduced once (the reduction is linear), which is what lets the
//! kernels hash 8 or 16 blocks with one reduction: `X' = (X + B0)·H^n + B1·H^(n-1) + ...`.
//!
//! # Reduction
//!
//! To divide by `y^128` modulo `g`, clear the low 128 bits 64 at a time by adding
//! multiples of `g`. With `L` the lowest 64 bits and `c = y^63 + y^62 + y^57` (so that
//! `g = 1 + y^64·c + y^128`), adding `L·g` clears `L` and adds `L·c` at `y^64` and `L`
//! at `y^128`: `MI' = MI + swap64(LO) + L·c`. The same step on the low half of `MI'` gives
//! the result, `HI + swap64(MI') + MI'_lo·c`, already of degree below 128.

use super::{HPowers, HXor, load16};
use core::arch::x86_64::*;

/// `c = y^63 + y^62 + y^57` in the low 64 bits (see the module doc).
const GF_C: i64 = 0xC200_0000_0000_0000_u64 as i64;

/// PSHUFB control that reverses the 16 bytes of a block.
#[inline(always)]
pub(crate) fn bswap_mask() -> __m128i {
    // SAFETY: plain SSE2 set, no memory access (not inside a target-feature context here).
    unsafe { _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) }
}

/// Converts a block between its byte form and the mirrored integer form (an involution).
#[inline]
#[target_feature(enable = "ssse3")]
pub(crate) fn bswap(x: __m128i) -> __m128i {
    _mm_shuffle_epi8(x, bswap_mask())
}

/// An unreduced sum of products.
#[derive(Clone, Copy)]
pub(crate) struct Wide {
    lo: __m128i,
    mi: __m128i,
    hi: __m128i,
}

impl Wide {
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(crate) fn zero() -> Self {
        Self {
            lo: _mm_setzero_si128(),
            mi: _mm_setzero_si128(),
            hi: _mm_setzero_si128(),
        }
    }

    /// Adds `a·b` (unreduced).
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(crate) fn mul_add(&mut self, a: __m128i, b: __m128i) {
        self.lo = _mm_xor_si128(self.lo, _mm_clmulepi64_si128::<0x00>(a, b));
        self.hi = _mm_xor_si128(self.hi, _mm_clmulepi64_si128::<0x11>(a, b));
        let m = _mm_xor_si128(
            _mm_clmulepi64_si128::<0x01>(a, b),
            _mm_clmulepi64_si128::<0x10>(a, b),
        );
        self.mi = _mm_xor_si128(self.mi, m);
    }

    /// Adds `a·b` (unreduced) in Karatsuba form, three multiplies: `b_xor` holds
    /// `b0 ^ b1` in its low half (an [`HXor`] entry). The middle sum this leaves is
    /// `Σ (a0 ^ a1)·(b0 ^ b1)`; [`Self::into_schoolbook`] turns it into the schoolbook
    /// one once, after the last product.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(crate) fn mul_add_karatsuba(&mut self, a: __m128i, b: __m128i, b_xor: __m128i) {
        self.lo = _mm_xor_si128(self.lo, _mm_clmulepi64_si128::<0x00>(a, b));
        self.hi = _mm_xor_si128(self.hi, _mm_clmulepi64_si128::<0x11>(a, b));
        let a_xor = _mm_xor_si128(a, _mm_shuffle_epi32::<0x4e>(a));
        self.mi = _mm_xor_si128(self.mi, _mm_clmulepi64_si128::<0x00>(a_xor, b_xor));
    }

    /// A sum built with [`Self::mul_add_karatsuba`] in schoolbook form: each product's
    /// middle term is its Karatsuba one plus its low and high ones, and so is the sum's.
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(crate) fn into_schoolbook(self) -> Self {
        Self {
            mi: _mm_xor_si128(self.mi, _mm_xor_si128(self.lo, self.hi)),
            ..self
        }
    }

    /// An empty `asm!` that claims to read and write the 8 AES states `states` and this
    /// sum: it emits nothing, and keeps the compiler from moving the products summed so
    /// far away from the AES round they were written next to (see
    /// `aesni_gcm::batches_body`). Miri cannot run `asm!`, and MemorySanitizer would take
    /// what comes out as clean; the pin only matters to the code generator.
    #[inline(always)]
    pub(crate) fn pin_with(&mut self, states: &mut [__m128i; 8]) {
        #[cfg(not(any(miri, ct_msan)))]
        {
            let [s0, s1, s2, s3, s4, s5, s6, s7] = states;
            // SAFETY: the template is empty: no instruction runs, no memory or flags change.
            unsafe {
                core::arch::asm!(
                    "/* {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} */",
                    inout(xmm_reg) *s0,
                    inout(xmm_reg) *s1,
                    inout(xmm_reg) *s2,
                    inout(xmm_reg) *s3,
                    inout(xmm_reg) *s4,
                    inout(xmm_reg) *s5,
                    inout(xmm_reg) *s6,
                    inout(xmm_reg) *s7,
                    inout(xmm_reg) self.lo,
                    inout(xmm_reg) self.mi,
                    inout(xmm_reg) self.hi,
                    options(pure, nomem, nostack, preserves_flags),
                );
            }
        }
        #[cfg(any(miri, ct_msan))]
        let _ = states;
    }

    /// `sum·y^-128 mod g`.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(crate) fn reduce(self) -> __m128i {
        let c = _mm_set_epi64x(0, GF_C);
        let mi = _mm_xor_si128(
            _mm_xor_si128(self.mi, _mm_shuffle_epi32::<0x4e>(self.lo)),
            _mm_clmulepi64_si128::<0x00>(self.lo, c),
        );
        _mm_xor_si128(
            _mm_xor_si128(self.hi, _mm_shuffle_epi32::<0x4e>(mi)),
            _mm_clmulepi64_si128::<0x00>(mi, c),
        )
    }
}

/// The Montgomery product `a·b·y^-128 mod g`.
#[inline]
#[target_feature(enable = "pclmulqdq,sse2")]
pub(crate) fn mont_mul(a: __m128i, b: __m128i) -> __m128i {
    let mut w = Wide::zero();
    w.mul_add(a, b);
    w.reduce()
}

/// `h·y mod g`, in constant time.
#[target_feature(enable = "sse2")]
pub(crate) fn times_y(h: __m128i) -> __m128i {
    // Shift the 128-bit value left by one: each 64-bit half, plus the carry between them.
    let carry = _mm_slli_si128::<8>(_mm_srli_epi64::<63>(h));
    let shifted = _mm_or_si128(_mm_slli_epi64::<1>(h), carry);
    // If bit 127 fell off, subtract g: all-ones mask from the sign of the top word.
    let overflow = _mm_shuffle_epi32::<0xff>(_mm_srai_epi32::<31>(h));
    let g_low = _mm_set_epi64x(GF_C, 1);
    _mm_xor_si128(shifted, _mm_and_si128(overflow, g_low))
}

/// The table of `H^16·y ... H^1·y` (then zeros) from `H = E_K(0)` in byte form.
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(crate) fn powers(h_bytes: __m128i) -> HPowers {
    let mut t = HPowers([_mm_setzero_si128(); HPowers::LEN]);
    powers_into(h_bytes, &mut t);
    t
}

/// [`powers`] into `out`, where the table is to stay (see `HwKey::init`).
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(crate) fn powers_into(h_bytes: __m128i, out: &mut HPowers) {
    // `p[k - 1]` is `H^k`. Each power is a product of two already known, so that the 15
    // products form four rounds of independent multiplies (H^2; H^3, H^4; H^5..H^8 from
    // H^4; H^9..H^16 from H^8) rather than a chain: the set-up waits for four multiplies'
    // latency, not eight (two chains of odd and even powers) or fifteen.
    let mut p = [_mm_setzero_si128(); HPowers::COUNT];
    p[0] = times_y(bswap(h_bytes));
    let mut known = 1;
    while known < HPowers::COUNT {
        let top = p[known - 1];
        for k in known..2 * known {
            p[k] = mont_mul(top, p[k - known]);
        }
        known *= 2;
    }
    for (k, power) in p.iter().enumerate() {
        out.0[HPowers::COUNT - 1 - k] = *power;
    }
    out.0[HPowers::COUNT..].fill(_mm_setzero_si128());
}

/// The Karatsuba middle factors of the powers: `h0 ^ h1` of entry `k` in the low half of
/// entry `k`, and of entry `k + 2` in its high half (zero past the table's end).
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn xored_halves_into(h: &HPowers, out: &mut HXor) {
    let xored = |k: usize| {
        h.0.get(k).map_or(_mm_setzero_si128(), |p| {
            _mm_xor_si128(*p, _mm_shuffle_epi32::<0x4e>(*p))
        })
    };
    for (k, x) in out.0.iter_mut().enumerate() {
        *x = _mm_unpacklo_epi64(xored(k), xored(k + 2));
    }
}

/// `X` after hashing `data` (zero-padded to whole blocks): 8 blocks per reduction.
/// `x` and the result are in mirrored form.
#[target_feature(enable = "pclmulqdq,ssse3")]
pub(crate) fn update(h: &HPowers, mut x: __m128i, data: &[u8]) -> __m128i {
    let (blocks, rest) = data.as_chunks::<16>();
    let mut eights = blocks.chunks_exact(8);
    for eight in &mut eights {
        let mut w = Wide::zero();
        for (j, b) in eight.iter().enumerate() {
            let mut v = bswap(load16(b));
            if j == 0 {
                v = _mm_xor_si128(v, x);
            }
            w.mul_add(v, h.0[HPowers::COUNT - 8 + j]);
        }
        x = w.reduce();
    }
    let tail = eights.remainder();
    if tail.is_empty() && rest.is_empty() {
        return x;
    }
    let mut last = [0u8; 16];
    last[..rest.len()].copy_from_slice(rest);
    let n = tail.len() + usize::from(!rest.is_empty());
    let mut w = Wide::zero();
    for j in 0..n {
        let b = if j < tail.len() { &tail[j] } else { &last };
        let mut v = bswap(load16(b));
        if j == 0 {
            v = _mm_xor_si128(v, x);
        }
        w.mul_add(v, h.0[HPowers::COUNT - n + j]);
    }
    w.reduce()
}

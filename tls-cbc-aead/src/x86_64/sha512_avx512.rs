//! The SHA-512 engine for CPUs with AVX-512VL (and AVX2, BMI1/BMI2): the shared body of
//! `sha512` with the schedule's σ functions as two `VPRORQ` and a shift joined by one
//! `VPTERNLOG`, on 256-bit vectors (no 512-bit uops): a third of the AVX2 sequence's
//! uops, which share the integer ports with the scalar rounds. Measured when it was
//! written: 3.55 cycles/byte (TSC) against sha2's 4.4 and OpenSSL's assembly's 3.8; on
//! an AMD EPYC Zen 4 (TSC 2.6 GHz) 3.2 TSC cycles/byte, about 810 MB/s, beside OpenSSL
//! 3.0's 830 MB/s (`openssl speed -evp sha512`) and the AVX2 engine's 3.4.
//!
//! Also the round form only this engine can run, [`SplitLanes`]: `a..d` in vector lanes,
//! `Σ0` and `Maj` in `VPRORQ` and `VPTERNLOG`, so that the scalar rounds' integer work
//! shrinks by a third (AMD Zen 4's choice).

use core::arch::x86_64::*;

use super::Hook;
use super::sha512::{self, Between, RoundForm, Sigmas, big_sigma1, group_of_16, opaque};
use super::two_blocks;

/// Whether this CPU (and OS) can run the engine (less what the constant-time harness hides).
pub(crate) fn available() -> bool {
    two_blocks::avx512vl_bmi_available()
}

/// The AVX-512VL σ functions.
#[derive(Debug)]
pub(crate) enum Avx512 {}

impl Sigmas for Avx512 {
    #[inline(always)]
    unsafe fn small_sigma0(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { small_sigma0(x) }
    }
    #[inline(always)]
    unsafe fn small_sigma1(x: __m256i) -> __m256i {
        // SAFETY: the caller guarantees this engine's features.
        unsafe { small_sigma1(x) }
    }
}

#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn small_sigma0(x: __m256i) -> __m256i {
    let (r1, r8) = (_mm256_ror_epi64::<1>(x), _mm256_ror_epi64::<8>(x));
    xor3(r1, r8, _mm256_srli_epi64::<7>(x))
}

#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn small_sigma1(x: __m256i) -> __m256i {
    let (r19, r61) = (_mm256_ror_epi64::<19>(x), _mm256_ror_epi64::<61>(x));
    xor3(r19, r61, _mm256_srli_epi64::<6>(x))
}

/// `a ^ b ^ c` in one `VPTERNLOG`. Unmasked, its 32- and 64-bit forms are the same
/// operation; the 32-bit one is the one Miri implements. (Also the SHA-1 and SHA-256
/// AVX-512VL schedules'.)
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(crate) fn xor3(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    // MemorySanitizer does not model VPTERNLOG (see `gcm_core::ct::msan`).
    #[cfg(ct_msan)]
    return gcm_core::ct::msan::bitwise3(a, b, c, |a, b, c| {
        _mm256_ternarylogic_epi32::<0x96>(a, b, c)
    });
    #[cfg(not(ct_msan))]
    _mm256_ternarylogic_epi32::<0x96>(a, b, c)
}

/// The rounds with `a..d` in the low lanes of four vector registers and `e..h` in general
/// registers: `Σ0` is three `VPRORQ` and a `VPTERNLOG`, `Maj` one `VPTERNLOG`, so the
/// integer ALUs keep only the `e` half of the round (`Ch`, `Σ1` and the sums of `T1`),
/// about two thirds of their work in the scalar forms. Each round moves two words
/// between the register files: the old `d` out (for `d + T1`, three rounds after it was
/// made, so off both chains) and `T1` in (for the new `a`).
///
/// The new `e` is `(((h + W + K) + d) + Ch) + Σ1(e)`, `d` joining early as in
/// `ShortChain`, and `T1 = ((h + W + K) + Ch) + Σ1(e)` is summed beside it (one addition
/// more than taking the new `e` less `d`, but ready a step sooner for the move to the
/// vector side); the new `a` is `Σ0(a) + (Maj(a, b, c) + T1)`, so that `T1`, which comes
/// from the other register file, is added before the chain through `a` needs it.
///
/// For AMD Zen 4, whose four integer ALUs bound the scalar rounds (see `sha512::round!`)
/// while its vector pipes run `VPRORQ` at a latency of 2 and `VPTERNLOG` and `VPADDQ` at
/// 1, so that the chain through `a` takes 4 cycles a round, as the one through `e`.
/// Measured there (EPYC, family 25 model 17; chains of dependent instructions, core
/// cycles): `VPRORQ` 2, `VPTERNLOG` and `VPADDQ` 1, a `VMOVQ` from a general register
/// to a vector one and back 6. The compression ran 345 TSC ticks a block against 382
/// with the fewest operations; records: see `engine::Tunings::for_cpu`. In a stand-alone
/// loop over one block's 80 rounds, 6.2 core cycles a round against 7.1. `T1` as the new
/// `e` less `d` was 1.7% slower in the compression (351 ticks a block), and `Maj + T1`
/// added after `Σ0`, as LLVM orders it unless held, 4% slower in that loop.
///
/// Not measured on Intel, where the gain should be smaller: AMD's cores issue vector
/// and integer work on separate pipes, while Intel's vector ALUs are ports 0, 1 and 5,
/// which the integer rounds use too, so moving work to the vector side frees fewer of
/// their issue slots. `llvm-mca-19` is no guide here: on the second block's 80 rounds
/// it predicts a tie for `znver4` (6.06 cycles a round against 6.02 for the fewest
/// operations), where Zen 4 runs this form 10% faster, and for the Intel models
/// `icelake-server` 6.33 against 6.39 and `sapphirerapids` 7.18 against the short
/// chain's 7.07; so the Intel cores keep their scalar forms until measured.
#[derive(Debug)]
pub(crate) enum SplitLanes {}

/// The working variables of [`SplitLanes`].
#[derive(Clone, Copy)]
pub(crate) struct LaneVars {
    /// `a..d`, each in the low 64 bits of its register.
    abcd: [__m128i; 4],
    efgh: [u64; 4],
}

impl RoundForm for SplitLanes {
    type Vars = LaneVars;

    #[inline(always)]
    unsafe fn vars(state: &[u64; 8]) -> LaneVars {
        let [a, b, c, d, e, f, g, h] = *state;
        LaneVars {
            // SAFETY: SSE2 is part of x86_64.
            abcd: [a, b, c, d].map(|w| unsafe { word_lane(w) }),
            efgh: [e, f, g, h],
        }
    }

    #[inline(always)]
    unsafe fn words(v: &LaneVars) -> [u64; 8] {
        // SAFETY: SSE2 is part of x86_64.
        let [a, b, c, d] = v.abcd.map(|x| unsafe { lane_word(x) });
        let [e, f, g, h] = v.efgh;
        [a, b, c, d, e, f, g, h]
    }

    #[inline(always)]
    unsafe fn rounds16<const L: usize, H: Hook, B: Between>(
        v: &mut LaneVars,
        wk: &[[u64; 4]; 8],
        hook: &mut H,
        between: &mut B,
    ) {
        let [mut a, mut b, mut c, mut d] = v.abcd;
        let [mut e, mut f, mut g, mut h] = v.efgh;
        macro_rules! w {
            ($i:literal) => {
                wk[$i / 2][L + $i % 2]
            };
        }
        // One round: the new `a` goes where `d` was and the new `e` where `h` was, so
        // the names rotate by four, and after 16 rounds are back in place.
        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $wk:expr) => {
                // SAFETY: SSE2 is part of x86_64.
                let d = unsafe { lane_word($d) };
                let hk = opaque($h.wrapping_add($wk));
                let hkd = opaque(hk.wrapping_add(d));
                let ch = (($f ^ $g) & $e) ^ $g;
                let s1 = big_sigma1($e);
                let t1 = opaque(hk.wrapping_add(ch)).wrapping_add(s1);
                $h = opaque(hkd.wrapping_add(ch)).wrapping_add(s1);
                // SAFETY: the caller guarantees AVX-512VL.
                $d = unsafe { next_a($a, $b, $c, t1) };
            };
        }
        group_of_16!(hook, between;
            { round!(a, b, c, d, e, f, g, h, w!(0)); }
            { round!(d, a, b, c, h, e, f, g, w!(1)); }
            { round!(c, d, a, b, g, h, e, f, w!(2)); }
            { round!(b, c, d, a, f, g, h, e, w!(3)); }
            { round!(a, b, c, d, e, f, g, h, w!(4)); }
            { round!(d, a, b, c, h, e, f, g, w!(5)); }
            { round!(c, d, a, b, g, h, e, f, w!(6)); }
            { round!(b, c, d, a, f, g, h, e, w!(7)); }
            { round!(a, b, c, d, e, f, g, h, w!(8)); }
            { round!(d, a, b, c, h, e, f, g, w!(9)); }
            { round!(c, d, a, b, g, h, e, f, w!(10)); }
            { round!(b, c, d, a, f, g, h, e, w!(11)); }
            { round!(a, b, c, d, e, f, g, h, w!(12)); }
            { round!(d, a, b, c, h, e, f, g, w!(13)); }
            { round!(c, d, a, b, g, h, e, f, w!(14)); }
            { round!(b, c, d, a, f, g, h, e, w!(15)); }
        );
        *v = LaneVars {
            abcd: [a, b, c, d],
            efgh: [e, f, g, h],
        };
    }
}

/// The new `a` of a [`SplitLanes`] round, `Σ0(a) + (Maj(a, b, c) + t1)`, in the low lane.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn next_a(a: __m128i, b: __m128i, c: __m128i, t1: u64) -> __m128i {
    let s0 = ternary_lane::<0x96>(
        _mm_ror_epi64::<28>(a),
        _mm_ror_epi64::<34>(a),
        _mm_ror_epi64::<39>(a),
    );
    let maj = ternary_lane::<0xe8>(a, b, c);
    let maj_t1 = _mm_add_epi64(maj, _mm_cvtsi64_si128(t1 as i64));
    _mm_add_epi64(s0, opaque_lane(maj_t1))
}

/// The bitwise function of three inputs whose truth table is `TABLE`, in one `VPTERNLOG`
/// on 128 bits: `0x96` is `a ^ b ^ c`, `0xe8` the majority `Maj(a, b, c)`. (Also
/// SHA-1's AVX-512VL message schedule's, `sha1_ni::VectorAlu`.)
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(crate) fn ternary_lane<const TABLE: i32>(a: __m128i, b: __m128i, c: __m128i) -> __m128i {
    // MemorySanitizer does not model VPTERNLOG (see `gcm_core::ct::msan`).
    #[cfg(ct_msan)]
    return gcm_core::ct::msan::bitwise3(a, b, c, |a, b, c| {
        _mm_ternarylogic_epi32::<TABLE>(a, b, c)
    });
    #[cfg(not(ct_msan))]
    _mm_ternarylogic_epi32::<TABLE>(a, b, c)
}

sha512::define_opaque!(
    /// [`opaque`] for a vector: the sum passed through it is computed as written (LLVM
    /// would otherwise add `T1` last, at the end of the chain through `a`).
    opaque_lane,
    __m128i,
    xmm_reg
);

/// The low 64 bits of `x`.
#[inline]
#[target_feature(enable = "sse2")]
fn lane_word(x: __m128i) -> u64 {
    _mm_cvtsi128_si64(x) as u64
}

/// `w` in the low 64 bits.
#[inline]
#[target_feature(enable = "sse2")]
fn word_lane(w: u64) -> __m128i {
    _mm_cvtsi64_si128(w as i64)
}

/// Compresses `blocks` into `state`, with the rounds in form `F`, writing the chaining
/// value after the first block to `after_first` if given (see `sha512::compress`).
#[target_feature(enable = "avx2,bmi1,bmi2,avx512f,avx512vl")]
pub(crate) fn compress<F: RoundForm>(
    state: &mut [u64; 8],
    blocks: &[[u8; 128]],
    after_first: Option<&mut [u64; 8]>,
) {
    // SAFETY: this function has the engine's features.
    unsafe { sha512::compress::<Avx512, F>(state, blocks, after_first) }
}

//! The SHA extensions' seven instructions written out in plain integer code, lane by lane,
//! as the Intel SDM's operation sections define them.
//!
//! Miri interprets the AES, carry-less multiply and AVX-512 intrinsics the other kernels
//! use, but not these; under Miri the SHA-NI engines call this model instead (see
//! `sha_ext`), so the interpreter still checks every load, store and buffer walk of those
//! kernels, and the engines' tests (against the `sha1`/`sha2` crates, built with their
//! software back ends there) check the model with them. A native test checks the model
//! against the instructions themselves on a CPU that has them.
//!
//! Lane `i` of an `__m128i` is bits `32 * i + 31 .. 32 * i`, so the SDM's `SRC[127:96]`
//! is lane 3.

use core::arch::x86_64::*;

/// The four 32-bit lanes, lane 0 first. (SSE2 only, which every x86_64 CPU has, like
/// everything here: the model runs wherever the tests do.)
#[inline]
#[target_feature(enable = "sse2")]
fn lanes(x: __m128i) -> [u32; 4] {
    [
        _mm_cvtsi128_si32(x) as u32,
        _mm_cvtsi128_si32(_mm_shuffle_epi32::<1>(x)) as u32,
        _mm_cvtsi128_si32(_mm_shuffle_epi32::<2>(x)) as u32,
        _mm_cvtsi128_si32(_mm_shuffle_epi32::<3>(x)) as u32,
    ]
}

/// A vector from four lanes, lane 0 first.
#[inline]
#[target_feature(enable = "sse2")]
fn vector(l: [u32; 4]) -> __m128i {
    _mm_setr_epi32(l[0] as i32, l[1] as i32, l[2] as i32, l[3] as i32)
}

/// `SHA1RNDS4`: four rounds on `A, B, C, D` (lanes 3 to 0 of `abcd`) with the message
/// words plus `E` in `e` (lane 3 holds `W0 + E`, lanes 2 to 0 `W1`, `W2`, `W3`).
#[target_feature(enable = "sse2")]
pub(crate) fn sha1rnds4<const FUNC: i32>(abcd: __m128i, e: __m128i) -> __m128i {
    let f = |b: u32, c: u32, d: u32| match FUNC & 3 {
        0 => (b & c) ^ (!b & d),
        2 => (b & c) ^ (b & d) ^ (c & d),
        _ => b ^ c ^ d,
    };
    let k = [0x5a82_7999, 0x6ed9_eba1, 0x8f1b_bcdc, 0xca62_c1d6][(FUNC & 3) as usize];
    let [d, c, b, a] = lanes(abcd);
    let [w3, w2, w1, w0e] = lanes(e);
    let (mut a, mut b, mut c, mut d, mut e) = (a, b, c, d, 0u32);
    // The first round's `E` is already in `W0E`, so `e` starts at zero.
    for w in [w0e, w1, w2, w3] {
        let next = f(b, c, d)
            .wrapping_add(a.rotate_left(5))
            .wrapping_add(w)
            .wrapping_add(e)
            .wrapping_add(k);
        (a, b, c, d, e) = (next, a, b.rotate_left(30), c, d);
    }
    vector([d, c, b, a])
}

/// `SHA1NEXTE`: lane 3 of `b` plus lane 3 of `a` rotated left by 30; lanes 2 to 0 of `b`.
#[target_feature(enable = "sse2")]
pub(crate) fn sha1nexte(a: __m128i, b: __m128i) -> __m128i {
    let mut out = lanes(b);
    out[3] = out[3].wrapping_add(lanes(a)[3].rotate_left(30));
    vector(out)
}

/// `SHA1MSG1`: `W[i] ^ W[i + 2]` for the four words `W0..W3` of `a` (lanes 3 to 0) and
/// `W4, W5` (lanes 3, 2 of `b`).
#[target_feature(enable = "sse2")]
pub(crate) fn sha1msg1(a: __m128i, b: __m128i) -> __m128i {
    let [w3, w2, w1, w0] = lanes(a);
    let [_, _, w5, w4] = lanes(b);
    vector([w5 ^ w3, w4 ^ w2, w3 ^ w1, w2 ^ w0])
}

/// `SHA1MSG2`: the words `W16..W19` from `a` (the partial sums, lanes 3 to 0) and
/// `W13..W15` (lanes 2 to 0 of `b`); `W19` uses `W16`, just computed.
#[target_feature(enable = "sse2")]
pub(crate) fn sha1msg2(a: __m128i, b: __m128i) -> __m128i {
    let [p19, p18, p17, p16] = lanes(a);
    let [w15, w14, w13, _] = lanes(b);
    let w16 = (p16 ^ w13).rotate_left(1);
    let w17 = (p17 ^ w14).rotate_left(1);
    let w18 = (p18 ^ w15).rotate_left(1);
    let w19 = (p19 ^ w16).rotate_left(1);
    vector([w19, w18, w17, w16])
}

/// `SHA256RNDS2`: two rounds. `cdgh` holds `C, D, G, H` and `abef` holds `A, B, E, F`
/// (lanes 3 to 0); `wk` lanes 0 and 1 are the two rounds' `W + K`. The result holds the
/// new `A, B, E, F`.
#[target_feature(enable = "sse2")]
pub(crate) fn sha256rnds2(cdgh: __m128i, abef: __m128i, wk: __m128i) -> __m128i {
    let [h, g, d, c] = lanes(cdgh);
    let [f, e, b, a] = lanes(abef);
    let [wk0, wk1, _, _] = lanes(wk);
    let (mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h) = (a, b, c, d, e, f, g, h);
    for wk in [wk0, wk1] {
        let ch = (e & f) ^ (!e & g);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let sigma1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let sigma0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let t1 = ch.wrapping_add(sigma1).wrapping_add(wk).wrapping_add(h);
        (h, g, f, e) = (g, f, e, t1.wrapping_add(d));
        (d, c, b, a) = (c, b, a, t1.wrapping_add(maj).wrapping_add(sigma0));
    }
    vector([f, e, b, a])
}

/// SHA-256's σ0 and σ1 of the message schedule.
fn small_sigma0(x: u32) -> u32 {
    x.rotate_right(7) ^ x.rotate_right(18) ^ (x >> 3)
}
fn small_sigma1(x: u32) -> u32 {
    x.rotate_right(17) ^ x.rotate_right(19) ^ (x >> 10)
}

/// `SHA256MSG1`: `W[i] + σ0(W[i + 1])` for `W0..W3` (lanes 0 to 3 of `a`) and `W4`
/// (lane 0 of `b`).
#[target_feature(enable = "sse2")]
pub(crate) fn sha256msg1(a: __m128i, b: __m128i) -> __m128i {
    let [w0, w1, w2, w3] = lanes(a);
    let w4 = lanes(b)[0];
    vector([
        w0.wrapping_add(small_sigma0(w1)),
        w1.wrapping_add(small_sigma0(w2)),
        w2.wrapping_add(small_sigma0(w3)),
        w3.wrapping_add(small_sigma0(w4)),
    ])
}

/// `SHA256MSG2`: the words `W16..W19` from the partial sums in `a` (lanes 0 to 3) and
/// `W14, W15` (lanes 2, 3 of `b`); `W18` and `W19` use `W16` and `W17`, just computed.
#[target_feature(enable = "sse2")]
pub(crate) fn sha256msg2(a: __m128i, b: __m128i) -> __m128i {
    let [p16, p17, p18, p19] = lanes(a);
    let [_, _, w14, w15] = lanes(b);
    let w16 = p16.wrapping_add(small_sigma1(w14));
    let w17 = p17.wrapping_add(small_sigma1(w15));
    let w18 = p18.wrapping_add(small_sigma1(w16));
    let w19 = p19.wrapping_add(small_sigma1(w17));
    vector([w16, w17, w18, w19])
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    cpufeatures::new!(sha_cpuid, "sha", "sse2", "ssse3", "sse4.1");

    /// Each model against its instruction on random operands, where the CPU has them.
    #[test]
    fn model_matches_the_instructions() {
        if !sha_cpuid::get() {
            std::eprintln!("skipped: no SHA extensions to check the model against");
            return;
        }
        // SAFETY: the SHA extensions were detected above.
        unsafe { compare_on_random_operands() }
    }

    #[target_feature(enable = "sha,sse2")]
    fn compare_on_random_operands() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            let mut step = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as i64
            };
            _mm_set_epi64x(step(), step())
        };
        let same = |x: __m128i, y: __m128i| lanes(x) == lanes(y);
        for _ in 0..2000 {
            let (a, b, c) = (next(), next(), next());
            assert!(same(sha1rnds4::<0>(a, b), _mm_sha1rnds4_epu32::<0>(a, b)));
            assert!(same(sha1rnds4::<1>(a, b), _mm_sha1rnds4_epu32::<1>(a, b)));
            assert!(same(sha1rnds4::<2>(a, b), _mm_sha1rnds4_epu32::<2>(a, b)));
            assert!(same(sha1rnds4::<3>(a, b), _mm_sha1rnds4_epu32::<3>(a, b)));
            assert!(same(sha1nexte(a, b), _mm_sha1nexte_epu32(a, b)));
            assert!(same(sha1msg1(a, b), _mm_sha1msg1_epu32(a, b)));
            assert!(same(sha1msg2(a, b), _mm_sha1msg2_epu32(a, b)));
            assert!(same(sha256rnds2(a, b, c), _mm_sha256rnds2_epu32(a, b, c)));
            assert!(same(sha256msg1(a, b), _mm_sha256msg1_epu32(a, b)));
            assert!(same(sha256msg2(a, b), _mm_sha256msg2_epu32(a, b)));
        }
    }
}

//! The SHA extensions' instructions as the SHA-NI engines call them.
//!
//! In normal builds these are the `std::arch` intrinsics themselves. In the
//! MemorySanitizer build (`cfg(ct_msan)`) each runs through `gcm_core::ct::msan::opaque`,
//! because the sanitizer does not follow a secret through them: it checks `SHA1RNDS4`'s
//! operands strictly (a report, then a clean result, so everything computed from it
//! would go unchecked), and takes the others for lane-wise arithmetic, poisoning a lane
//! of the result only where that lane of an operand was, whereas each of their result
//! lanes depends on several operand lanes. Through `opaque` the whole result is poisoned
//! iff any operand is, decided on the shadow alone. Under Miri, which does not implement
//! these instructions, each is its model in plain integer code (`sha_ext_model`).

use core::arch::x86_64::*;

/// One wrapper per instruction: `$name(args)` is `$intrinsic(args)`, the same through
/// `opaque` under the sanitizer, or the model's `$name(args)` under Miri.
macro_rules! sha_instructions {
    ($(
        $(#[$doc:meta])*
        fn $name:ident $(<const $imm:ident: i32>)? ($($arg:ident),+) = $intrinsic:ident;
    )*) => {$(
        $(#[$doc])*
        #[inline]
        #[target_feature(enable = "sha,sse2")]
        pub(crate) fn $name $(<const $imm: i32>)? ($($arg: __m128i),+) -> __m128i {
            #[cfg(ct_msan)]
            return gcm_core::ct::msan::opaque(($($arg),+), |($($arg),+)| {
                $intrinsic $(::<$imm>)? ($($arg),+)
            });
            #[cfg(miri)]
            return super::sha_ext_model::$name $(::<$imm>)? ($($arg),+);
            #[cfg(not(any(ct_msan, miri)))]
            $intrinsic $(::<$imm>)? ($($arg),+)
        }
    )*};
}

sha_instructions! {
    /// `SHA1RNDS4`: four SHA-1 rounds with round function `FUNC` (0 to 3).
    fn sha1rnds4<const FUNC: i32>(abcd, e) = _mm_sha1rnds4_epu32;
    /// `SHA1NEXTE`: the next `E` from `A` four rounds back, plus the message words.
    fn sha1nexte(a, b) = _mm_sha1nexte_epu32;
    /// `SHA1MSG1`: the first step of the message schedule.
    fn sha1msg1(a, b) = _mm_sha1msg1_epu32;
    /// `SHA1MSG2`: the second step of the message schedule.
    fn sha1msg2(a, b) = _mm_sha1msg2_epu32;
    /// `SHA256RNDS2`: two SHA-256 rounds on `CDGH`, `ABEF` and two `W + K` words.
    fn sha256rnds2(cdgh, abef, wk) = _mm_sha256rnds2_epu32;
    /// `SHA256MSG1`: the first step of the message schedule.
    fn sha256msg1(a, b) = _mm_sha256msg1_epu32;
    /// `SHA256MSG2`: the second step of the message schedule.
    fn sha256msg2(a, b) = _mm_sha256msg2_epu32;
}

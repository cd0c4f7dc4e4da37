//! SHA-512 compression for x86_64 on 256-bit vectors: the body shared by the AVX2 engine
//! (`sha512_avx2`) and the AVX-512VL one (`sha512_avx512`), which differ only in how they
//! compute the message schedule's σ functions ([`Sigmas`]).
//!
//! The sha2 crate's x86 back end vectorises the message schedule but runs it before the
//! rounds of each block; here the schedule of two blocks is computed at once (one block
//! per 128-bit lane) while the rounds of the first block run, a step after each two
//! rounds, so the vector units work beside the scalar rounds instead of before them, and
//! the second block's rounds only read the precomputed `W + K`. These CPUs have no
//! SHA-512 instructions; the rounds are written out with constant indices, in one of the
//! forms of [`RoundForm`] picked per CPU when a key is made: scalar, in the fewest
//! operations (cores with four integer ALUs) or the shortest dependency chain (five; see
//! `round!`), or, on the AVX-512 engine, with `a..d` in vector lanes beside a scalar
//! `e..h` (`sha512_avx512::SplitLanes`, for AMD Zen 4). With BMI2 the rotations are
//! `rorx`, which leave their input intact. [`group_of_16!`] lays out a group of 16 rounds
//! for every form.
//!
//! Other splits between the register files, measured on an AMD EPYC Zen 4 and not kept:
//! all eight working variables in lanes (`VPROLQ`, `VPTERNLOG` for Σ, `Ch` and `Maj`) ran
//! 8.2 cycles a round against the scalar 7.2: `VPROLQ` takes 2 cycles there and only two
//! issue per cycle, so Σ costs 4 cycles on the chain, and both chains pay it. `e..h` in
//! lanes with `a..d` scalar (two `VMOVQ` a round between them) compressed 6-7% faster
//! alone, but opened AES-256-CBC-SHA384 records no faster at 256 and 1350 bytes and 1.6%
//! faster at 16 KiB. The split kept, `a..d` in lanes, moves the other half: see
//! `SplitLanes`.
//!
//! The same split without AVX-512 (for Zen 3, which has only this file's AVX2 engine)
//! was tried on that Zen 4 with the AVX2 engine: `Σ0` as six 64-bit shifts, three ORs
//! and two XORs, `Maj` as `b ^ ((a ^ b) & (b ^ c))`. The six shifts issue two a cycle,
//! so the chain through `a` (shifts, OR, XOR, XOR, add) takes 6 cycles a round
//! (measured alone), and the compression of 16 blocks ran 483 TSC ticks a block against
//! 390 in the fewest operations; with the split in the second block of each pair only
//! (no schedule beside it there), 436. Not kept; not tried on a Zen 3.
//!
//! On AMD Zen 5 (EPYC, family 0x1a model 2), vector rounds were not tried again: there a
//! chain of dependent `VPADDQ`, `VPXOR`, `VPTERNLOGQ` or `VPROLQ` takes 2 cycles a step,
//! so Σ alone would cost 4 on the chain. The scalar rounds there run six simple
//! operations a cycle, `rorx` three. Timed in one process (TSC ticks, fastest of 400),
//! 16 KiB: this engine's compression of 128 blocks 38.4-39.0k (`FewestOps`), OpenSSL's
//! SHA-384 of the same bytes (129 blocks) 38.8-39.5k: the same speed a block. The
//! short-chain form compressed 4% faster in that loop, but opened AES-256-CBC-SHA384
//! records no faster in one session (16 KiB 16.35k / 16.36k ns; 1350 B 0.5% and 4%
//! slower in two runs) and 2-3.5% faster at 8-16 KiB in another, while the stitched seal
//! ran 5-6% slower with it. Once open's constant-time tail went block by block there
//! (`engine::FinishSteps`), open ran 1.5-6% faster with the short chain at every size,
//! timed per record in one process, and the stitched seal still 6-8% slower: so on
//! Zen 5 the plain compressions take the short chain and the stitched seal the fewest
//! operations (`engine::Tunings`).
//!
//! What bounds the rounds on AMD Zen 3 (EPYC, family 25 model 1) is the integer ALUs,
//! not the schedule or the spills. Both blocks of a pair run at about 6.8 core cycles a
//! round (OpenSSL's AVX2 SHA-512 there: 6.7). Of a round's 22 operations, the six
//! rotations issue on only two of the four ALUs: measured there, six `rorx` and 16
//! simple operations with no dependency between them take 6.25 cycles, against 5.6
//! for 22 simple ones and 3.0 for the six `rorx` alone. Other measurements on the same
//! machine (AES-256-CBC-SHA384 open at 16 KiB, fastest of 3000 runs, TSC cycles;
//! 57.7k as written):
//! * `Maj` without the carried `a ^ b` in block A, one more operation a round: the loop
//!   no longer reloads the group's offset from the stack (30 reloads per 16 rounds
//!   down to 4), and the open took 60.3k.
//! * `Wk` without its 32-byte alignment, which frees the frame pointer: 58.4k.
//! * Half of block A's schedule steps left out (a wrong digest, timing only): 56.5k.
//!   So the vector work in block A costs about 4% of the open. With that half run in
//!   block B instead (on a copy of the window, timing only): 61.1k.
//!
//! The rounds call a hook before every 4 of them, so that seal can run its CBC
//! encryption, a serial chain on the AES unit, in the gaps the scalar rounds leave
//! (see `stitch`). Nothing here branches on or indexes by the data, so open's
//! constant-time argument is unchanged.

use core::arch::x86_64::*;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use super::{Hook, two_blocks};

/// The round constants (the first 64 bits of the fractional parts of the cube roots of
/// the first 80 primes).
static K: [u64; 80] = [
    0x428a_2f98_d728_ae22,
    0x7137_4491_23ef_65cd,
    0xb5c0_fbcf_ec4d_3b2f,
    0xe9b5_dba5_8189_dbbc,
    0x3956_c25b_f348_b538,
    0x59f1_11f1_b605_d019,
    0x923f_82a4_af19_4f9b,
    0xab1c_5ed5_da6d_8118,
    0xd807_aa98_a303_0242,
    0x1283_5b01_4570_6fbe,
    0x2431_85be_4ee4_b28c,
    0x550c_7dc3_d5ff_b4e2,
    0x72be_5d74_f27b_896f,
    0x80de_b1fe_3b16_96b1,
    0x9bdc_06a7_25c7_1235,
    0xc19b_f174_cf69_2694,
    0xe49b_69c1_9ef1_4ad2,
    0xefbe_4786_384f_25e3,
    0x0fc1_9dc6_8b8c_d5b5,
    0x240c_a1cc_77ac_9c65,
    0x2de9_2c6f_592b_0275,
    0x4a74_84aa_6ea6_e483,
    0x5cb0_a9dc_bd41_fbd4,
    0x76f9_88da_8311_53b5,
    0x983e_5152_ee66_dfab,
    0xa831_c66d_2db4_3210,
    0xb003_27c8_98fb_213f,
    0xbf59_7fc7_beef_0ee4,
    0xc6e0_0bf3_3da8_8fc2,
    0xd5a7_9147_930a_a725,
    0x06ca_6351_e003_826f,
    0x1429_2967_0a0e_6e70,
    0x27b7_0a85_46d2_2ffc,
    0x2e1b_2138_5c26_c926,
    0x4d2c_6dfc_5ac4_2aed,
    0x5338_0d13_9d95_b3df,
    0x650a_7354_8baf_63de,
    0x766a_0abb_3c77_b2a8,
    0x81c2_c92e_47ed_aee6,
    0x9272_2c85_1482_353b,
    0xa2bf_e8a1_4cf1_0364,
    0xa81a_664b_bc42_3001,
    0xc24b_8b70_d0f8_9791,
    0xc76c_51a3_0654_be30,
    0xd192_e819_d6ef_5218,
    0xd699_0624_5565_a910,
    0xf40e_3585_5771_202a,
    0x106a_a070_32bb_d1b8,
    0x19a4_c116_b8d2_d0c8,
    0x1e37_6c08_5141_ab53,
    0x2748_774c_df8e_eb99,
    0x34b0_bcb5_e19b_48a8,
    0x391c_0cb3_c5c9_5a63,
    0x4ed8_aa4a_e341_8acb,
    0x5b9c_ca4f_7763_e373,
    0x682e_6ff3_d6b2_b8a3,
    0x748f_82ee_5def_b2fc,
    0x78a5_636f_4317_2f60,
    0x84c8_7814_a1f0_ab72,
    0x8cc7_0208_1a64_39ec,
    0x90be_fffa_2363_1e28,
    0xa450_6ceb_de82_bde9,
    0xbef9_a3f7_b2c6_7915,
    0xc671_78f2_e372_532b,
    0xca27_3ece_ea26_619c,
    0xd186_b8c7_21c0_c207,
    0xeada_7dd6_cde0_eb1e,
    0xf57d_4f7f_ee6e_d178,
    0x06f0_67aa_7217_6fba,
    0x0a63_7dc5_a2c8_98a6,
    0x113f_9804_bef9_0dae,
    0x1b71_0b35_131c_471b,
    0x28db_77f5_2304_7d84,
    0x32ca_ab7b_40c7_2493,
    0x3c9e_be0a_15c9_bebc,
    0x431d_67c4_9c10_0d4c,
    0x4cc5_d4be_cb3e_42b6,
    0x597f_299c_fc65_7e2a,
    0x5fcb_6fab_3ad6_faec,
    0x6c44_198c_4a47_5817,
];

/// `W + K` for two blocks, two words of block A then the same two of block B, so one
/// 256-bit store writes a schedule step of both; 8 steps to a group of 16 rounds.
pub(crate) type Wk = two_blocks::Wk<[u64; 4], 40, 8>;

/// The 16 message words of blocks `a` and `b`, big-endian to native, as
/// `[a[2i], a[2i + 1], b[2i], b[2i + 1]]` for `i` in `0..8`.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn load_pair(a: &[u8; 128], b: &[u8; 128]) -> [__m256i; 8] {
    let swap = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
    ));
    core::array::from_fn(|i| {
        let (pa, pb) = (&a[16 * i..16 * i + 16], &b[16 * i..16 * i + 16]);
        // SAFETY: `pa` and `pb` are 16 readable bytes each; the loads are unaligned.
        let v = unsafe { _mm256_loadu2_m128i(pb.as_ptr().cast(), pa.as_ptr().cast()) };
        _mm256_shuffle_epi8(v, swap)
    })
}

/// Stores words `t, t + 1` of both blocks (`words`, as the schedule holds them) plus
/// `K[t], K[t + 1]` into `slot`, the step that the rounds `t, t + 1` read; `t` is even.
#[inline]
#[target_feature(enable = "avx2")]
fn put_step(slot: &mut MaybeUninit<[u64; 4]>, t: usize, words: __m256i) {
    let v = _mm256_add_epi64(words, k2(t));
    // SAFETY: `slot` is 32 writable bytes; the store is unaligned.
    unsafe { _mm256_storeu_si256(slot.as_mut_ptr().cast(), v) };
}

/// `K[t], K[t + 1]` in both lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn k2(t: usize) -> __m256i {
    let k = &K[t..t + 2];
    // SAFETY: `k` is 16 readable bytes.
    _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(k.as_ptr().cast()) })
}

/// The message schedule's σ functions on four 64-bit words, as one engine computes them.
pub(crate) trait Sigmas {
    /// σ0 (`ror 1 ^ ror 8 ^ shr 7`) of each word.
    ///
    /// # Safety
    /// The CPU must have the engine's features.
    unsafe fn small_sigma0(x: __m256i) -> __m256i;
    /// σ1 (`ror 19 ^ ror 61 ^ shr 6`) of each word.
    ///
    /// # Safety
    /// The CPU must have the engine's features.
    unsafe fn small_sigma1(x: __m256i) -> __m256i;
}

/// One schedule step for both blocks: words `t, t + 1` from the window
/// `x[s..] ++ x[..s]` of words `t - 16 .. t`, written over its oldest entry `x[s]`.
///
/// # Safety
/// The CPU must have `S`'s features.
#[inline(always)]
unsafe fn schedule_step<S: Sigmas>(x: &mut [__m256i; 8], s: usize) {
    // SAFETY: the caller guarantees `S`'s features, AVX2 among them.
    unsafe {
        let w15 = _mm256_alignr_epi8::<8>(x[(s + 1) % 8], x[s]);
        let w7 = _mm256_alignr_epi8::<8>(x[(s + 5) % 8], x[(s + 4) % 8]);
        let sum = _mm256_add_epi64(_mm256_add_epi64(x[s], w7), S::small_sigma0(w15));
        // σ1 reads the newest words, so it joins last.
        x[s] = _mm256_add_epi64(sum, S::small_sigma1(x[(s + 7) % 8]));
    }
}

#[inline(always)]
fn big_sigma0(a: u64) -> u64 {
    a.rotate_right(28) ^ a.rotate_right(34) ^ a.rotate_right(39)
}

#[inline(always)]
pub(super) fn big_sigma1(e: u64) -> u64 {
    e.rotate_right(14) ^ e.rotate_right(18) ^ e.rotate_right(41)
}

/// Defines `$name`, which hides a value of type `$ty` (held in register class `$class`)
/// from the optimiser: an empty `asm!` that claims to change it, so that a sum passed
/// through it is computed as written. `$template`, a comment naming the register, is
/// `"/* {0} */"` unless given (`"/* {0:e} */"` for a 32-bit word, whose register the
/// default would name by its 64-bit form).
///
/// Under MemorySanitizer and Miri, `black_box`: the sanitizer would report the secret
/// going into the `asm!` and take what comes out as public, and Miri cannot run `asm!`.
macro_rules! define_opaque {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $class:ident) => {
        $crate::x86_64::sha512::define_opaque!($(#[$doc])* $name, $ty, $class, "/* {0} */");
    };
    ($(#[$doc:meta])* $name:ident, $ty:ty, $class:ident, $template:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub(super) fn $name(#[allow(unused_mut)] mut x: $ty) -> $ty {
            #[cfg(any(ct_msan, miri))]
            return core::hint::black_box(x);
            // SAFETY: the template is empty: no instruction runs, no memory or flags
            // change.
            #[cfg(not(any(ct_msan, miri)))]
            unsafe {
                core::arch::asm!(
                    $template,
                    inout($class) x,
                    options(pure, nomem, nostack, preserves_flags)
                );
            }
            #[cfg(not(any(ct_msan, miri)))]
            x
        }
    };
}
pub(super) use define_opaque;

define_opaque!(
    /// A word computed as written: LLVM otherwise regroups a round's additions by its
    /// own ranking, and puts `W + K` at the end of the chain through `e`.
    opaque,
    u64,
    reg
);

/// How the rounds are written: in the fewest operations, with the shortest chain of
/// dependent steps, or (AVX-512VL only) with `a..d` in vector lanes. Which is faster
/// depends on the core (see `round!` and `sha512_avx512::SplitLanes`);
/// `engine::RoundTuning` picks one per CPU when a key is made.
pub(crate) trait RoundForm {
    /// The working variables `a..h` as the rounds hold them from one group of 16 rounds
    /// to the next.
    type Vars: Copy;

    /// `state` as working variables.
    ///
    /// # Safety
    /// The CPU must have the form's features.
    unsafe fn vars(state: &[u64; 8]) -> Self::Vars;

    /// The working variables as words.
    ///
    /// # Safety
    /// As [`Self::vars`].
    unsafe fn words(v: &Self::Vars) -> [u64; 8];

    /// 16 rounds of block A (`L` = 0) or B (`L` = 2) on `v`, reading `W + K` from `wk`,
    /// calling `hook` before each 4 of them and `between` after each 2 (see
    /// [`group_of_16!`]).
    ///
    /// # Safety
    /// The CPU must have the form's features and those of the engine whose `between`
    /// this is.
    unsafe fn rounds16<const L: usize, H: Hook, B: Between>(
        v: &mut Self::Vars,
        wk: &[[u64; 4]; 8],
        hook: &mut H,
        between: &mut B,
    );
}

/// 22 operations a round: for cores whose four integer ALUs bound the rounds (AMD Zen;
/// Intel before Golden Cove).
#[derive(Debug)]
pub(crate) enum FewestOps {}

/// Four dependent steps a round: for cores with ALUs to spare (Intel's five, from Golden
/// Cove on).
#[derive(Debug)]
pub(crate) enum ShortChain {}

/// The two scalar forms: all eight working variables in general registers.
macro_rules! scalar_form {
    ($form:ty, $fewest_ops:literal) => {
        impl RoundForm for $form {
            type Vars = [u64; 8];

            #[inline(always)]
            unsafe fn vars(state: &[u64; 8]) -> [u64; 8] {
                *state
            }

            #[inline(always)]
            unsafe fn words(v: &[u64; 8]) -> [u64; 8] {
                *v
            }

            #[inline(always)]
            unsafe fn rounds16<const L: usize, H: Hook, B: Between>(
                v: &mut [u64; 8],
                wk: &[[u64; 4]; 8],
                hook: &mut H,
                between: &mut B,
            ) {
                // SAFETY: forwarded contract.
                unsafe { scalar_rounds16::<L, $fewest_ops, H, B>(v, wk, hook, between) }
            }
        }
    };
}

scalar_form!(FewestOps, true);
scalar_form!(ShortChain, false);

/// One scalar round, in the `FewestOps` form if `$fewest_ops`, else `ShortChain`; the
/// caller rotates the names instead of the values. `x` carries `(a ^ b, a & b)` from one
/// round to the next, where it is `(b ^ c, b & c)` (`FewestOps` uses only the first).
///
/// A round is latency-bound or throughput-bound depending on the core. One round's `e`
/// and `a` feed the next; `h` and `d` were `e` and `a` three rounds ago, so sums of them
/// and `W + K` are ready early.
///
/// * `ShortChain`: the new `e` is `((d + h + W + K) + Ch) + Σ1(e)`: Σ1 (rotate, two XOR
///   levels) and `Ch` (two levels, `f ^ g` being ready early) side by side, then two
///   adds, four steps from `e`. `T1`, which the new `a` needs, is the new `e` less the old
///   `d`: one subtraction off the chain. `Maj(a, b, c) = (a & (b ^ c)) ^ (b & c)` is two
///   steps from `a`, so the new `a`, `Σ0(a) + (Maj + T1)`, is four steps from `a` too;
///   24 operations. Measured on an Intel Xeon (Emerald Rapids) when it was written, with
///   `T1` summed apart (25 operations): 3.55 cycles/byte, from 3.8 before the additions
///   were grouped so (OpenSSL's assembly, whose rounds are close to the other form, also
///   3.8 there). `T1` by subtraction is not measured on an Intel core: on the second
///   block's loop `llvm-mca-19` predicts 7.00 cycles a round for `sapphirerapids` and
///   `alderlake`, against 7.19 with the 25 operations. On an AMD EPYC Zen 4, with this
///   form forced, against the 25 operations: compress 4-8% and the stitched
///   AES-256-CBC-SHA384 seal's MAC 6-8% faster, 256 B to 16 KiB (fastest tenth of 1500
///   alternations, three runs).
/// * `FewestOps`: 22 operations: the two Σ (three `rorx` and two XOR each), `Ch` and
///   `Maj` (three each, `Maj = ((a ^ b) & (b ^ c)) ^ b` from a carried `b ^ c`), and six
///   adds, `T1 = h + W + K + Ch + Σ1(e)` shared by `e = d + T1` and `a = T1 + Maj +
///   Σ0(a)`; five steps through `e`. On four integer ALUs 22 operations are 5.5 cycles,
///   more than the chain, so the count is what to cut. Measured on an AMD EPYC Zen 4:
///   6.99 cycles a round against 7.28 for the 25-operation `ShortChain` (842 against
///   808 MB/s, with the schedule's vector work); against the 24-operation one, compress
///   within 1%, the stitched seal's MAC 1.5-2.5% faster, open's MAC 1.5-2% faster at
///   256-1350 B and 2.5% slower at 16 KiB. `llvm-mca-19` on the second block's loop
///   predicts a tie for `znver3`/`znver4` (6.38 against 6.31 cycles a round) and the
///   opposite for `sapphirerapids` (8.81 against 7.00).
macro_rules! round {
    ($fewest_ops:ident; $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $x:ident, $wk:expr) => {
        if $fewest_ops {
            let ch = (($f ^ $g) & $e) ^ $g;
            let hk_ch = opaque(opaque($h.wrapping_add($wk)).wrapping_add(ch));
            let t1 = hk_ch.wrapping_add(big_sigma1($e));
            $d = $d.wrapping_add(t1);
            let ab = $a ^ $b;
            let maj = (ab & $x.0) ^ $b;
            $x.0 = ab;
            $h = opaque(t1.wrapping_add(maj)).wrapping_add(big_sigma0($a));
        } else {
            let hk = opaque($h.wrapping_add($wk));
            let dhk = opaque($d.wrapping_add(hk));
            let ch = (($f ^ $g) & $e) ^ $g;
            let e = opaque(dhk.wrapping_add(ch)).wrapping_add(big_sigma1($e));
            // `T1`, off the chain through `e`: the new `e` less the old `d`.
            let t1 = e.wrapping_sub($d);
            $d = e;
            let maj = ($a & $x.0) ^ $x.1;
            $x = ($a ^ $b, $a & $b);
            $h = big_sigma0($a).wrapping_add(opaque(maj.wrapping_add(t1)));
        }
    };
}

/// Vector work run between the scalar rounds, after each two of them.
pub(crate) trait Between {
    /// The `s`-th (0..8) call in a group of 16 rounds.
    ///
    /// # Safety
    /// The CPU must have the features of the engine running the rounds.
    unsafe fn run(&mut self, s: usize);
}

/// No work between the rounds: the last group of block A, and block B.
impl Between for () {
    #[inline(always)]
    unsafe fn run(&mut self, _: usize) {}
}

/// The message schedule of the next group of rounds, one step of both blocks per call.
///
/// Spread through the rounds rather than run as one batch of eight steps before them:
/// the batch, about 130 vector instructions in a row, stood in program order before
/// the 16 rounds' scalar work and held it back. Measured on an AMD EPYC Zen 3 (family
/// 25 model 1, AVX2 engine, `FewestOps`), fastest of many runs: compression of a pair
/// of blocks 5.8 -> 5.5 TSC cycles a round, of one block 6.4 -> 5.9; AES-256-CBC-SHA384
/// open 3.3-5.5% faster at 256 and 1350 bytes, 1.5% at 16 KiB, and the stitched seal
/// 4-5% faster at 1350 bytes and 16 KiB. A method of a struct, not a closure: a
/// closure has no target features of its own, and LLVM left one out of line in the
/// single-block path, with its vector intrinsics as calls (ten times slower).
struct NextSchedule<'a, S> {
    /// The schedule's window of 16 words of both blocks.
    x: &'a mut [__m256i; 8],
    /// Where the next group's `W + K` go.
    next: &'a mut [MaybeUninit<[u64; 4]>; 8],
    /// The first round of the next group.
    t: usize,
    sigmas: PhantomData<S>,
}

impl<S: Sigmas> Between for NextSchedule<'_, S> {
    #[inline(always)]
    unsafe fn run(&mut self, s: usize) {
        // SAFETY: the caller guarantees `S`'s features, AVX2 among them.
        unsafe {
            schedule_step::<S>(self.x, s);
            put_step(&mut self.next[s], self.t + 2 * s, self.x[s]);
        }
    }
}

/// The layout of a group of 16 rounds, shared by every round form: `hook` called
/// before each 4 rounds, `between` run after each 2; the arguments are the 16 rounds in
/// order, each a block that updates the working variables in place.
///
/// Written out round by round with constant indices: a loop over the two halves made
/// LLVM index `W + K` at run time, with bounds checks, and copy it to the stack first.
/// Used in `unsafe fn`s whose callers guarantee the features `between` needs.
macro_rules! group_of_16 {
    ($hook:ident, $between:ident;
     $r0:block $r1:block $r2:block $r3:block $r4:block $r5:block $r6:block $r7:block
     $r8:block $r9:block $r10:block $r11:block $r12:block $r13:block $r14:block $r15:block) => {
        $hook.call();
        $r0 $r1
        // SAFETY: the caller guarantees the features `between` needs.
        unsafe { $between.run(0) };
        $r2 $r3
        // SAFETY: as above.
        unsafe { $between.run(1) };
        $hook.call();
        $r4 $r5
        // SAFETY: as above.
        unsafe { $between.run(2) };
        $r6 $r7
        // SAFETY: as above.
        unsafe { $between.run(3) };
        $hook.call();
        $r8 $r9
        // SAFETY: as above.
        unsafe { $between.run(4) };
        $r10 $r11
        // SAFETY: as above.
        unsafe { $between.run(5) };
        $hook.call();
        $r12 $r13
        // SAFETY: as above.
        unsafe { $between.run(6) };
        $r14 $r15
        // SAFETY: as above.
        unsafe { $between.run(7) };
    };
}
pub(super) use group_of_16;

/// 16 scalar rounds (`FewestOps` if `FEWEST_OPS`, else `ShortChain`) of block A (`L` =
/// 0) or B (`L` = 2) on the working variables `v` (see [`RoundForm::rounds16`]).
// Plain scalar code, always inlined into the BMI2 callers, where the rotations become
// `rorx` (a `#[target_feature]` function could not be forced inline).
//
// # Safety
// The CPU must have the features of the engine whose `between` this is.
#[inline(always)]
unsafe fn scalar_rounds16<const L: usize, const FEWEST_OPS: bool, H: Hook, B: Between>(
    v: &mut [u64; 8],
    wk: &[[u64; 4]; 8],
    hook: &mut H,
    between: &mut B,
) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *v;
    let mut x = (b ^ c, b & c);
    macro_rules! w {
        ($i:literal) => {
            wk[$i / 2][L + $i % 2]
        };
    }
    group_of_16!(hook, between;
        { round!(FEWEST_OPS; a, b, c, d, e, f, g, h, x, w!(0)); }
        { round!(FEWEST_OPS; h, a, b, c, d, e, f, g, x, w!(1)); }
        { round!(FEWEST_OPS; g, h, a, b, c, d, e, f, x, w!(2)); }
        { round!(FEWEST_OPS; f, g, h, a, b, c, d, e, x, w!(3)); }
        { round!(FEWEST_OPS; e, f, g, h, a, b, c, d, x, w!(4)); }
        { round!(FEWEST_OPS; d, e, f, g, h, a, b, c, x, w!(5)); }
        { round!(FEWEST_OPS; c, d, e, f, g, h, a, b, x, w!(6)); }
        { round!(FEWEST_OPS; b, c, d, e, f, g, h, a, x, w!(7)); }
        { round!(FEWEST_OPS; a, b, c, d, e, f, g, h, x, w!(8)); }
        { round!(FEWEST_OPS; h, a, b, c, d, e, f, g, x, w!(9)); }
        { round!(FEWEST_OPS; g, h, a, b, c, d, e, f, x, w!(10)); }
        { round!(FEWEST_OPS; f, g, h, a, b, c, d, e, x, w!(11)); }
        { round!(FEWEST_OPS; e, f, g, h, a, b, c, d, x, w!(12)); }
        { round!(FEWEST_OPS; d, e, f, g, h, a, b, c, x, w!(13)); }
        { round!(FEWEST_OPS; c, d, e, f, g, h, a, b, x, w!(14)); }
        { round!(FEWEST_OPS; b, c, d, e, f, g, h, a, x, w!(15)); }
    );
    // The next group starts its own `Maj` carry from its `b` and `c`.
    let _ = x;
    *v = [a, b, c, d, e, f, g, h];
}

/// Adds the working variables into the chaining value (the feed-forward).
#[inline(always)]
fn feed_forward(state: &mut [u64; 8], v: &[u64; 8]) {
    for (s, x) in state.iter_mut().zip(v) {
        *s = s.wrapping_add(*x);
    }
}

/// Compresses block A of `x` (from [`load_pair`]) and then, if `both`, block B, calling
/// `hook` 20 times a block, before each 4 rounds (before, so that what the hook starts
/// overlaps those rounds). The chaining value after block A is also written to
/// `after_a`, if given.
///
/// Every 4 rounds, not 16, so that the AES chain a hook starts is short beside the rounds
/// (see `stitch::CbcHook`). Measured on Zen 4, AES-256-CBC-SHA384 seal at 16 KiB, with
/// the CBC chain in half blocks: 457 MB/s with a hook every 16 rounds, 581 every 4
/// (every 8: between the two; the hook's own bookkeeping grows with the calls).
///
/// # Safety
/// The CPU must have `S`'s features (AVX2 and BMI1/BMI2 among them).
#[inline(always)]
pub(crate) unsafe fn compress_pair<S: Sigmas, F: RoundForm, H: Hook>(
    state: &mut [u64; 8],
    wk: &mut Wk,
    mut x: [__m256i; 8],
    both: bool,
    after_a: Option<&mut [u64; 8]>,
    hook: &mut H,
) {
    for (s, w) in x.iter().enumerate() {
        // SAFETY: the caller guarantees AVX2.
        unsafe { put_step(wk.step_mut(s), 2 * s, *w) };
    }
    // SAFETY: the caller guarantees the features.
    let mut v = unsafe { F::vars(state) };
    for group in 0..4 {
        // Words 16 (group + 1) .. 16 (group + 2), which the next group of rounds needs,
        // are computed during these rounds, one step after each two of them (see
        // `NextSchedule`).
        // SAFETY: steps 0..8 were written before this loop, and those of each later
        // group in the iteration before.
        let (cur, next) = unsafe { wk.group_and_next(group) };
        let mut schedule = NextSchedule::<S> {
            x: &mut x,
            next,
            t: 16 * (group + 1),
            sigmas: PhantomData,
        };
        // SAFETY: the caller guarantees `S`'s features.
        unsafe { F::rounds16::<0, H, _>(&mut v, cur, hook, &mut schedule) };
    }
    // SAFETY: steps 32..40 were written in the last iteration; no vector work between
    // the rounds.
    unsafe { F::rounds16::<0, H, _>(&mut v, wk.group(4), hook, &mut ()) };
    // SAFETY: as above.
    feed_forward(state, &unsafe { F::words(&v) });
    if let Some(after_a) = after_a {
        *after_a = *state;
    }
    if both {
        // SAFETY: as above.
        let mut v = unsafe { F::vars(state) };
        if H::IS_EMPTY {
            // Block B's 80 rounds written out when nothing runs between them, so that
            // every `W + K` is at a constant offset from the stack pointer. In a loop
            // over the five groups the group's offset took a register, one too many
            // beside the working variables and the round's temporaries: in the AVX2
            // engine's `FewestOps` build LLVM kept it on the stack, a reload every
            // round. Measured on an AMD EPYC Zen 3 (family 25 model 1, that build), 16
            // KiB: 5.7 -> 5.2 TSC cycles a round (OpenSSL's SHA-512 there: 5.1);
            // AES-256-CBC-SHA384 open 7% faster from 8 KiB. The AVX-512 engine, not
            // measured here: `llvm-mca-19` predicts 6.4 -> 6.1 cycles a round for
            // `znver4` and 7.0 -> 7.1 for `sapphirerapids` (longest straight runs of
            // rounds, before and after). With a hook (the stitched seal), whose AES
            // code sits between the rounds, the written-out block made the seal 5-10%
            // slower at 1350 B to 16 KiB (more code than the decoded-op cache holds),
            // so there the loop stays. Writing out block A's groups as well was slower
            // still (7.2 TSC cycles a round), for the same reason.
            // SAFETY: all 40 steps are written by now; no vector work between the rounds.
            unsafe {
                F::rounds16::<2, H, _>(&mut v, wk.group(0), hook, &mut ());
                F::rounds16::<2, H, _>(&mut v, wk.group(1), hook, &mut ());
                F::rounds16::<2, H, _>(&mut v, wk.group(2), hook, &mut ());
                F::rounds16::<2, H, _>(&mut v, wk.group(3), hook, &mut ());
                F::rounds16::<2, H, _>(&mut v, wk.group(4), hook, &mut ());
            }
        } else {
            for group in 0..5 {
                // SAFETY: as above.
                unsafe { F::rounds16::<2, H, _>(&mut v, wk.group(group), hook, &mut ()) };
            }
        }
        // SAFETY: as above.
        feed_forward(state, &unsafe { F::words(&v) });
    }
}

/// Compresses `blocks` into `state`: `compress_pair` without a hook, two blocks at a
/// time, a lone last block through the same code (`both` false). Writes the chaining
/// value after the first block to `after_first`, if given: the blocks of a
/// secret-length finish go two at a time that way, where the chaining value after
/// either may be the one kept. The SHA-384 record MAC's compressions other than seal's
/// stitched ones.
///
/// One body for every count of blocks, so that open runs one copy of the rounds: with a
/// second copy for the lone block (`both` a constant there) and a third for the
/// finish's pairs, a record ran two or three of them, more than stays in the decoded-op
/// cache together. Measured on an AMD EPYC Zen 5 (family 0x1a model 2),
/// AES-256-CBC-SHA384 open alone, TSC cycles a record (fastest of 5000 batches of eight,
/// three runs), the copies against this body. AVX-512 engine (blocks one at a time in
/// the finish): 16 B 747-757 / 708, 100 B 1072-1079 / 1033-1039, 256 B 1296-1303 /
/// 1339-1355 (the one size that lost), 512 B 2206-2216 / 1988-2024, 1350 B 3796-3809 /
/// 3571-3610, 4 KiB 9428-9460 / 9330-9343, 16 KiB 34281-34290 / 34180-34398. The AVX2
/// engine forced, with Zen 3's choices (fewest-operations rounds, the finish in pairs):
/// 256 B 1686-1696 / 1449-1452, 512 B 2333-2343 / 2060-2102, 1350 B 4004-4036 /
/// 3740-3750, 4 KiB 9932-9958 / 9688-9730, 16 KiB 36016-36058 / 35857-36006. Alone, in
/// a loop: three blocks in one call 910-949 / 757-763, one block 260 either way.
///
/// # Safety
/// The CPU must have `S`'s features.
#[inline(always)]
pub(crate) unsafe fn compress<S: Sigmas, F: RoundForm>(
    state: &mut [u64; 8],
    blocks: &[[u8; 128]],
    mut after_first: Option<&mut [u64; 8]>,
) {
    let mut wk = Wk::new();
    for p in blocks.chunks(2) {
        let both = p.len() == 2;
        let b = &p[p.len() - 1];
        // SAFETY: the caller guarantees `S`'s features.
        unsafe {
            compress_pair::<S, F, _>(
                state,
                &mut wk,
                load_pair(&p[0], b),
                both,
                after_first.take(),
                &mut (),
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::{FewestOps, ShortChain};
    use crate::x86_64::{sha512_avx2, sha512_avx512};
    use std::vec::Vec;

    /// Random multi-block inputs from random chaining values, against sha2's compression,
    /// with and without the chaining value after the first block, which must be sha2's
    /// after that block alone. Under Miri, one run of each length up to two pairs of
    /// blocks: the memory accesses depend on the length alone.
    fn matches_sha2(compress_on: impl Fn(&mut [u64; 8], &[[u8; 128]], Option<&mut [u64; 8]>)) {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (max_blocks, runs) = if cfg!(miri) { (4, 1) } else { (9, 20) };
        for n in 0..=max_blocks {
            for _ in 0..runs {
                let blocks: Vec<[u8; 128]> = (0..n)
                    .map(|_| core::array::from_fn(|_| next() as u8))
                    .collect();
                let start: [u64; 8] = core::array::from_fn(|_| next());
                let mut want = start;
                sha2::block_api::compress512(&mut want, &blocks);
                let mut got = start;
                compress_on(&mut got, &blocks, None);
                assert_eq!(got, want, "{n} blocks");

                let mut want_first = start;
                sha2::block_api::compress512(&mut want_first, &blocks[..n.min(1)]);
                let mut got = start;
                let mut got_first = start;
                compress_on(&mut got, &blocks, Some(&mut got_first));
                assert_eq!(got, want, "{n} blocks, keeping the first");
                assert_eq!(got_first, want_first, "after the first of {n} blocks");
            }
        }
    }

    #[test]
    fn avx512_matches_sha2() {
        if !sha512_avx512::available() {
            std::eprintln!("skipped: no AVX2/BMI2/AVX-512VL");
            return;
        }
        // SAFETY: the features were checked above.
        matches_sha2(|s, b, f| unsafe { sha512_avx512::compress::<FewestOps>(s, b, f) });
        // SAFETY: as above.
        matches_sha2(|s, b, f| unsafe { sha512_avx512::compress::<ShortChain>(s, b, f) });
        // SAFETY: as above.
        matches_sha2(|s, b, f| unsafe {
            sha512_avx512::compress::<sha512_avx512::SplitLanes>(s, b, f)
        });
    }

    #[test]
    fn avx2_matches_sha2() {
        if !sha512_avx2::available() {
            std::eprintln!("skipped: no AVX2/BMI2");
            return;
        }
        // SAFETY: the features were checked above.
        matches_sha2(|s, b, f| unsafe { sha512_avx2::compress::<FewestOps>(s, b, f) });
        // SAFETY: as above.
        matches_sha2(|s, b, f| unsafe { sha512_avx2::compress::<ShortChain>(s, b, f) });
    }
}

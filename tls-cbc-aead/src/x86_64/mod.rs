//! The x86_64 hash engines, the stitched seal and open's MAC extraction, one file each.
//!
//! * `sha1_ni`, `sha256_ni`: SHA-1 and SHA-256 on the SHA extensions (SHA-1's message
//!   schedule on `SHA1MSG1`/`SHA1MSG2`, or on AVX-512VL for cores slow at those);
//! * `sha1_avx2`, `sha256_avx2`: SHA-1 and SHA-256 on AVX2 + BMI2 (the schedule of two
//!   blocks at once on vectors, scalar rounds), for CPUs without the SHA extensions, with
//!   `sha1_avx512` and `sha256_avx512`, the same engines with the schedule's rotations on
//!   AVX-512VL;
//! * `two_blocks`: the `W + K` buffer of the engines that schedule two blocks at once;
//! * `sha512`: SHA-512 on 256-bit vectors, shared by `sha512_avx2` (AVX2 + BMI2) and
//!   `sha512_avx512` (AVX-512VL), which differ in the message schedule's σ functions;
//! * `stitch`: seal's inner hash on any of these with the AES-CBC chain run in its gaps;
//! * `copy_mac`: open's constant-time MAC extraction, with its ring in SSE2 registers;
//! * `tdes`: 3DES CBC decryption built for AVX2 and AVX-512 (the portable code, wider);
//! * `tdes_vbmi`: 3DES CBC encryption with the S-boxes as byte permutations (AVX-512 VBMI);
//! * `sha_ext`: the SHA extensions' instructions, as the SHA-NI engines call them (through
//!   a shadow-propagating wrapper in the MemorySanitizer build, and through
//!   `sha_ext_model`, the instructions in plain integer code, under Miri).
//!
//! Each engine is chosen (or forced, see `Engines`) once when a key is made, after a
//! check of the CPU features it is built with; the hash of a record then checks nothing.
//! All of it is `std::arch` intrinsics in `#[target_feature]` functions, with no branch
//! or memory index that depends on the data.

pub(crate) mod copy_mac;
pub(crate) mod sha1_avx2;
pub(crate) mod sha1_avx512;
pub(crate) mod sha1_ni;
pub(crate) mod sha256_avx2;
pub(crate) mod sha256_avx512;
pub(crate) mod sha256_ni;
pub(crate) mod sha512;
pub(crate) mod sha512_avx2;
pub(crate) mod sha512_avx512;
mod sha_ext;
#[cfg(any(miri, test))]
mod sha_ext_model;
pub(crate) mod stitch;
#[cfg(feature = "des")]
pub(crate) mod tdes;
#[cfg(feature = "des")]
pub(crate) mod tdes_vbmi;
mod two_blocks;

/// Work that a compression runs between groups of its rounds: seal's CBC encryption
/// (`stitch`), or nothing (`()`).
///
/// The compressions and the hook are `#[inline(always)]`, so that all of a stitched
/// kernel lands in one `#[target_feature]` function with both the hash's and AES-NI's
/// features: a closure there was left out of line, and its CBC chaining value went
/// through memory between calls, on the chain's critical path.
pub(crate) trait Hook {
    /// Whether [`Self::call`] does nothing (the plain compressions' hook), so that a
    /// compression can lay out its rounds for itself alone.
    const IS_EMPTY: bool = false;

    /// Whether the work of a call is picked by the call's number, which is a constant
    /// only where the compression writes every call out: a compression that loops over
    /// groups of rounds when a hook runs between them writes them out for such a hook.
    const NUMBERED: bool = false;

    /// The latency, in core cycles, that a call adds to a serial chain of the hook's
    /// own (the CBC chain's AES rounds), averaged over the calls: 0 for the empty hook,
    /// `usize::MAX` where it is not known at compile time. A compression whose best
    /// layout differs between rounds that wait only on themselves and rounds that the
    /// hook's chain paces compares it with the time its own rounds between two calls
    /// take (`sha1_avx2`'s `round!`).
    const CHAIN_CYCLES: usize = if Self::IS_EMPTY { 0 } else { usize::MAX };

    /// Runs the work of the next slot (each compression documents how many slots a
    /// block has).
    fn call(&mut self);
}

impl Hook for () {
    const IS_EMPTY: bool = true;

    #[inline(always)]
    fn call(&mut self) {}
}

/// A build of one of the SHA-NI compressions, for their tests: its name, whether this
/// CPU can run it, and the compression (whose precondition is that check).
#[cfg(test)]
pub(crate) type Build<const W: usize> = (
    &'static str,
    fn() -> bool,
    unsafe fn(&mut [u32; W], &[[u8; 64]]),
);

/// For the compressions' tests: each build the CPU can run (the others reported
/// skipped) against `reference` (the RustCrypto crate's compression), on random runs of
/// 0 to 5 blocks from random chaining values, 40 of each length (one under Miri, which
/// checks the memory accesses, the same for every run of a length).
#[cfg(test)]
pub(crate) fn check_compressions<const W: usize>(
    seed: u64,
    reference: impl Fn(&mut [u32; W], &[[u8; 64]]),
    builds: &[Build<W>],
) {
    for &(name, runs_here, ours) in builds {
        if !runs_here() {
            std::eprintln!("skipped: {name} does not run here");
            continue;
        }
        let mut seed = seed;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in 0..=5 {
            for _ in 0..if cfg!(miri) { 1 } else { 40 } {
                let blocks: std::vec::Vec<[u8; 64]> = (0..n)
                    .map(|_| core::array::from_fn(|_| next() as u8))
                    .collect();
                let start: [u32; W] = core::array::from_fn(|_| next() as u32);
                let (mut want, mut got) = (start, start);
                reference(&mut want, &blocks);
                // SAFETY: `runs_here` checked the build's features.
                unsafe { ours(&mut got, &blocks) };
                assert_eq!(got, want, "{name}, {n} blocks");
            }
        }
    }
}

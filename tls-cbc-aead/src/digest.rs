//! The three record hashes, driven through their raw compression functions, and a
//! streaming hasher whose last step can run over a suffix of secret length.
//!
//! The record MAC on open covers data whose length is secret (it depends on the padding).
//! Finishing a hash the usual way would branch on that length and compress a
//! length-dependent number of blocks. [`Stream::finish_with_secret_suffix`] instead builds
//! every block that the longest possible suffix could need, writes the final padding and
//! bit count into the right one under masks, compresses them all, and keeps, under a
//! mask, the chaining value after the block that really was the last one.

use subtle::ConditionallySelectable;

#[cfg(target_arch = "x86_64")]
use crate::x86_64::{
    sha1_avx2, sha1_avx512, sha1_ni, sha256_avx2, sha256_avx512, sha256_ni, sha512::RoundForm,
    sha512_avx2, sha512_avx512, stitch,
};
use crate::{
    ct,
    engine::{FinishSteps, HashEngine, RoundTuning, ShaScheduleOn},
};

/// The largest block of the supported hashes (SHA-384).
pub(crate) const MAX_BLOCK_LEN: usize = 128;
/// The largest digest of the supported hashes (SHA-384).
pub(crate) const MAX_OUTPUT_LEN: usize = 48;
/// Room for the blocks of a secret-length finish: the buffered bytes (up to two blocks
/// less one), a suffix of up to `MAX_PADDING` bytes (and some slack, for the tests),
/// 0x80 and the length field.
const SECRET_SUFFIX_BUF: usize = 5 * MAX_BLOCK_LEN;

/// Words that can be wiped on drop (with feature `zeroize`).
#[cfg(feature = "zeroize")]
pub(crate) trait Wipe: zeroize::DefaultIsZeroes {}
#[cfg(feature = "zeroize")]
impl<T: zeroize::DefaultIsZeroes> Wipe for T {}
/// Words that can be wiped on drop (with feature `zeroize`).
#[cfg(not(feature = "zeroize"))]
pub(crate) trait Wipe {}
#[cfg(not(feature = "zeroize"))]
impl<T> Wipe for T {}

/// A Merkle–Damgård hash seen as its compression function and its chaining value.
pub(crate) trait HashAlg {
    /// Bytes per compression block.
    const BLOCK_LEN: usize;
    /// Bytes of digest (also the TLS MAC key length).
    const OUTPUT_LEN: usize;
    /// Bytes of the big-endian bit count that ends the padded message.
    const LENGTH_FIELD_LEN: usize;
    /// One word of the chaining value.
    type Word: Copy + ConditionallySelectable + Wipe;
    /// The chaining value.
    type State: Copy + AsRef<[Self::Word]> + AsMut<[Self::Word]>;
    /// The standard initial chaining value.
    const INITIAL: Self::State;
    /// The RustCrypto crate that [`HashEngine::RustCrypto`] runs for this hash.
    const RUSTCRYPTO_CRATE: &'static str;
    /// Whether this CPU can run `engine` for this hash.
    fn is_available(engine: HashEngine) -> bool;
    /// The fastest engine this CPU has for this hash.
    fn best_engine() -> HashEngine {
        HashEngine::ALL
            .into_iter()
            .find(|&e| Self::is_available(e))
            .unwrap_or(HashEngine::RustCrypto)
    }
    /// The compression function of `engine`, which [`Self::is_available`] accepted: it
    /// compresses blocks whose length is a multiple of [`Self::BLOCK_LEN`].
    ///
    /// A function picked once per hash, not a `match` on the engine per call: with the
    /// `match` inside the compression that open calls per block, SHA-1 open at 1350 bytes
    /// ran 3% slower on Zen 4, whatever the engine.
    /// `tuning` picks between the engine's builds, where it has more than one.
    fn compressor(engine: HashEngine, tuning: RoundTuning) -> Compress<Self::State>;
    /// For an engine that compresses two blocks at once (one message schedule for both,
    /// as SHA-384's vector engines do), that compression on exactly two blocks, keeping
    /// the chaining value after the first; `None` for engines that go block by block.
    ///
    /// Where it is `Some`, [`Stream`] buffers up to two blocks, so that the blocks it
    /// compresses come in pairs wherever the message allows, and the candidate blocks of
    /// a secret-length finish go two at a time where the CPU's `FinishSteps` says so (not
    /// on AMD Zen 5; see there). The SHA-512 engines run it through the same code as
    /// their bulk compression (see `x86_64::sha512::compress`). On such an engine one
    /// block alone costs
    /// more than half of what two do (block A of a pair carries both schedules): the MAC
    /// of an AES-256-CBC-SHA384 record of 1350 bytes took 3 pairs and 6 single blocks,
    /// and now takes 5 pairs and 2 single blocks. Measured on an AMD EPYC Zen 3 (AVX2
    /// engine), fastest of 30 runs: open 2676 -> 2604 ns at 1350 bytes, 0.3% faster at
    /// 16 KiB (where the blocks left single are 4 in 130).
    fn pair_compressor(
        _engine: HashEngine,
        _tuning: RoundTuning,
    ) -> Option<CompressPair<Self::State>> {
        None
    }
    /// Compresses `blocks` on `engine`, which [`Self::is_available`] accepted.
    fn compress(engine: HashEngine, tuning: RoundTuning, state: &mut Self::State, blocks: &[u8]) {
        // SAFETY: the caller passes an engine that `is_available` accepted.
        unsafe { Self::compressor(engine, tuning)(state, blocks) }
    }
    /// A name for `engine` on this hash, for the constant-time harness's list of what it
    /// covered: [`HashEngine::name`], or the RustCrypto crate's name.
    fn engine_name(engine: HashEngine) -> &'static str {
        match engine {
            HashEngine::RustCrypto => Self::RUSTCRYPTO_CRATE,
            engine => engine.name(),
        }
    }
    /// Writes the first [`Self::OUTPUT_LEN`] bytes of the big-endian chaining value.
    fn write_digest(state: &Self::State, out: &mut [u8]);

    /// Whether seal can stitch AES-CBC into this engine's compression
    /// ([`Self::stitched_inner_hash`]).
    fn stitches(_engine: HashEngine) -> bool {
        false
    }

    /// Seal's whole inner hash, from `state` (after the key block) over `head || data`
    /// and the final padding, with the CBC encryption of `data`'s whole blocks stitched
    /// in (see `x86_64::stitch`); returns the bytes encrypted. `None` (and nothing done)
    /// if `engine` has no stitched kernel, or the stitch does not pay for this length.
    ///
    /// # Safety
    /// `engine` was accepted by [`Self::is_available`], and the CPU has AES-NI.
    #[cfg(target_arch = "x86_64")]
    unsafe fn stitched_inner_hash(
        _engine: HashEngine,
        _tuning: RoundTuning,
        _state: &mut Self::State,
        _head: &[u8; 13],
        _data: &mut [u8],
        _keys: crate::x86_64::stitch::AesKeys<'_>,
        _iv: &mut [u8; 16],
    ) -> Option<usize> {
        None
    }
}

/// A compression function over whole blocks.
///
/// # Safety
/// Only from [`HashAlg::compressor`], for an engine that [`HashAlg::is_available`]
/// accepted on this CPU.
pub(crate) type Compress<S> = unsafe fn(&mut S, &[u8]);

/// A compression of exactly two blocks that also writes the chaining value between them
/// to its third argument.
///
/// # Safety
/// Only from [`HashAlg::pair_compressor`], for an engine that [`HashAlg::is_available`]
/// accepted on this CPU.
pub(crate) type CompressPair<S> = unsafe fn(&mut S, &[u8], &mut S);

/// `sha1_ni`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have SHA-NI.
#[cfg(target_arch = "x86_64")]
unsafe fn sha1_shani(state: &mut [u32; 5], blocks: &[u8]) {
    // SAFETY: the caller guarantees SHA-NI.
    unsafe { sha1_ni::compress(state, blocks.as_chunks().0) }
}

/// `sha1_ni`'s compression with the schedule on AVX-512VL behind a [`Compress`]
/// pointer.
///
/// # Safety
/// The CPU must have SHA-NI and AVX-512VL.
#[cfg(target_arch = "x86_64")]
unsafe fn sha1_shani_avx512(state: &mut [u32; 5], blocks: &[u8]) {
    // SAFETY: the caller guarantees SHA-NI and AVX-512VL.
    unsafe { sha1_ni::compress_avx512(state, blocks.as_chunks().0) }
}

/// `sha1_avx2`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have AVX2 and BMI1/BMI2 (`sha1_avx2::available`).
#[cfg(target_arch = "x86_64")]
unsafe fn sha1_on_avx2(state: &mut [u32; 5], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha1_avx2::compress(state, blocks.as_chunks().0) }
}

/// `sha1_avx512`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have AVX-512VL, AVX2 and BMI1/BMI2 (`sha1_avx512::available`).
#[cfg(target_arch = "x86_64")]
unsafe fn sha1_on_avx512(state: &mut [u32; 5], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha1_avx512::compress(state, blocks.as_chunks().0) }
}

/// The sha1 crate's compression behind a [`Compress`] pointer (no precondition).
unsafe fn sha1_rustcrypto(state: &mut [u32; 5], blocks: &[u8]) {
    // MemorySanitizer does not model SHA1RNDS4, which the sha1 crate's SHA-NI
    // compression uses: run it block by block through `ct::msan::opaque` (the new state
    // is poisoned if the old state or the block was).
    #[cfg(all(ct_msan, target_arch = "x86_64", not(sha1_backend = "soft")))]
    if sha1_crate_shani::get() {
        for block in blocks.as_chunks::<64>().0 {
            *state = gcm_core::ct::msan::opaque((*state, *block), |(mut s, b)| {
                sha1::block_api::compress(&mut s, &[b]);
                s
            });
        }
        return;
    }
    sha1::block_api::compress(state, blocks.as_chunks().0);
}

// The sha1 crate's own test for its SHA-NI compression (which ignores the features the
// constant-time harness hides).
#[cfg(all(ct_msan, target_arch = "x86_64", not(sha1_backend = "soft")))]
cpufeatures::new!(sha1_crate_shani, "sha", "sse2", "ssse3", "sse4.1");

/// `sha256_ni`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have SHA-NI.
#[cfg(target_arch = "x86_64")]
unsafe fn sha256_shani(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees SHA-NI.
    unsafe { sha256_ni::compress(state, blocks.as_chunks().0) }
}

/// `sha256_ni`'s compression with the schedule's first step on AVX-512VL behind a
/// [`Compress`] pointer.
///
/// # Safety
/// The CPU must have SHA-NI and AVX-512VL (`sha256_ni::available_avx512`).
#[cfg(target_arch = "x86_64")]
unsafe fn sha256_shani_avx512(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees SHA-NI and AVX-512VL.
    unsafe { sha256_ni::compress_avx512(state, blocks.as_chunks().0) }
}

/// `sha256_avx2`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have AVX2 and BMI1/BMI2 (`sha256_avx2::available`).
#[cfg(target_arch = "x86_64")]
unsafe fn sha256_on_avx2(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha256_avx2::compress(state, blocks.as_chunks().0, None) }
}

/// `sha256_avx512`'s compression behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have AVX-512VL, AVX2 and BMI1/BMI2 (`sha256_avx512::available`).
#[cfg(target_arch = "x86_64")]
unsafe fn sha256_on_avx512(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha256_avx512::compress(state, blocks.as_chunks().0, None) }
}

/// The sha2 crate's SHA-256 compression behind a [`Compress`] pointer (no precondition).
unsafe fn sha256_rustcrypto(state: &mut [u32; 8], blocks: &[u8]) {
    sha2::block_api::compress256(state, blocks.as_chunks().0);
}

/// `sha512_avx512`'s compression, rounds in form `F`, behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have that engine's features.
#[cfg(target_arch = "x86_64")]
unsafe fn sha512_on_avx512<F: RoundForm>(state: &mut [u64; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha512_avx512::compress::<F>(state, blocks.as_chunks().0, None) }
}

/// `sha512_avx2`'s compression, rounds in form `F`, behind a [`Compress`] pointer.
///
/// # Safety
/// The CPU must have that engine's features.
#[cfg(target_arch = "x86_64")]
unsafe fn sha512_on_avx2<F: RoundForm>(state: &mut [u64; 8], blocks: &[u8]) {
    // SAFETY: the caller guarantees the features.
    unsafe { sha512_avx2::compress::<F>(state, blocks.as_chunks().0, None) }
}

/// `sha512_avx512`'s two-block compression, rounds in form `F`, behind a
/// [`CompressPair`] pointer.
///
/// # Safety
/// The CPU must have that engine's features.
#[cfg(target_arch = "x86_64")]
unsafe fn sha512_pair_on_avx512<F: RoundForm>(
    state: &mut [u64; 8],
    blocks: &[u8],
    mid: &mut [u64; 8],
) {
    debug_assert_eq!(blocks.len(), 256);
    // SAFETY: the caller guarantees the features.
    unsafe { sha512_avx512::compress::<F>(state, blocks.as_chunks().0, Some(mid)) }
}

/// `sha512_avx2`'s two-block compression, rounds in form `F`, behind a [`CompressPair`]
/// pointer.
///
/// # Safety
/// The CPU must have that engine's features.
#[cfg(target_arch = "x86_64")]
unsafe fn sha512_pair_on_avx2<F: RoundForm>(
    state: &mut [u64; 8],
    blocks: &[u8],
    mid: &mut [u64; 8],
) {
    debug_assert_eq!(blocks.len(), 256);
    // SAFETY: the caller guarantees the features.
    unsafe { sha512_avx2::compress::<F>(state, blocks.as_chunks().0, Some(mid)) }
}

/// The sha2 crate's SHA-512 compression behind a [`Compress`] pointer (no precondition).
unsafe fn sha512_rustcrypto(state: &mut [u64; 8], blocks: &[u8]) {
    sha2::block_api::compress512(state, blocks.as_chunks().0);
}

/// SHA-1 (HMAC-SHA1 record MACs).
#[derive(Debug)]
pub(crate) enum Sha1 {}
/// SHA-256 (HMAC-SHA256 record MACs).
#[derive(Debug)]
pub(crate) enum Sha256 {}
/// SHA-384 (HMAC-SHA384 record MACs).
#[derive(Debug)]
pub(crate) enum Sha384 {}

/// Serialises 32-bit chaining words big-endian, as far as `out` reaches.
fn write_be_words(state: &[u32], out: &mut [u8]) {
    for (dst, w) in out.chunks_exact_mut(4).zip(state) {
        dst.copy_from_slice(&w.to_be_bytes());
    }
}

/// The methods SHA-1 and SHA-256 share, for state type `$state`: the choice between the
/// two SHA-NI engines ([`ShaScheduleOn`]); the RustCrypto crate's compression
/// `$rustcrypto` anywhere; and for each of this crate's engines (the SHA-NI ones and the
/// AVX2 and AVX-512 ones), where the CPU can run it (`$available`), its compression `$ours` and its
/// stitched seal `$stitched`.
macro_rules! sha1_sha256_methods {
    (
        $state:ty,
        $rustcrypto:path,
        $($engine:ident => ($available:path, $ours:path, $stitched:path)),+ $(,)?
    ) => {
        /// `ShaNiAvx512` where [`ShaScheduleOn`] says and the CPU has it; else the
        /// first other engine in [`HashEngine::ALL`] that runs.
        fn best_engine() -> HashEngine {
            let on_vectors =
                ShaScheduleOn::for_cpu(gcm_core::__this_cpu()) == ShaScheduleOn::Vectors;
            if on_vectors && Self::is_available(HashEngine::ShaNiAvx512) {
                return HashEngine::ShaNiAvx512;
            }
            HashEngine::ALL
                .into_iter()
                .filter(|&e| e != HashEngine::ShaNiAvx512)
                .find(|&e| Self::is_available(e))
                .unwrap_or(HashEngine::RustCrypto)
        }

        fn is_available(engine: HashEngine) -> bool {
            match engine {
                HashEngine::RustCrypto => true,
                $(
                    #[cfg(target_arch = "x86_64")]
                    HashEngine::$engine => $available(),
                )+
                _ => false,
            }
        }

        fn compressor(engine: HashEngine, _: RoundTuning) -> Compress<$state> {
            match engine {
                $(
                    #[cfg(target_arch = "x86_64")]
                    HashEngine::$engine => $ours,
                )+
                _ => $rustcrypto,
            }
        }

        fn write_digest(state: &$state, out: &mut [u8]) {
            write_be_words(state, out);
        }

        #[cfg(target_arch = "x86_64")]
        fn stitches(engine: HashEngine) -> bool {
            matches!(engine, $(HashEngine::$engine)|+)
        }

        #[cfg(target_arch = "x86_64")]
        unsafe fn stitched_inner_hash(
            engine: HashEngine,
            _: RoundTuning,
            state: &mut $state,
            head: &[u8; 13],
            data: &mut [u8],
            keys: stitch::AesKeys<'_>,
            iv: &mut [u8; 16],
        ) -> Option<usize> {
            match engine {
                $(
                    // SAFETY: the caller guarantees the engine's features (it was
                    // available) and AES-NI.
                    HashEngine::$engine => Some(unsafe { $stitched(state, head, data, keys, iv) }),
                )+
                _ => None,
            }
        }
    };
}

impl HashAlg for Sha1 {
    const BLOCK_LEN: usize = 64;
    const OUTPUT_LEN: usize = 20;
    const LENGTH_FIELD_LEN: usize = 8;
    type Word = u32;
    type State = [u32; 5];
    const INITIAL: [u32; 5] = [
        0x6745_2301,
        0xefcd_ab89,
        0x98ba_dcfe,
        0x1032_5476,
        0xc3d2_e1f0,
    ];
    const RUSTCRYPTO_CRATE: &'static str = "sha1 crate";

    sha1_sha256_methods!(
        [u32; 5],
        sha1_rustcrypto,
        ShaNi => (sha1_ni::available, sha1_shani, stitch::sha1_ni),
        ShaNiAvx512 => (sha1_ni::available_avx512, sha1_shani_avx512, stitch::sha1_ni_avx512),
        Avx2 => (sha1_avx2::available, sha1_on_avx2, stitch::sha1_avx2),
        Avx512 => (sha1_avx512::available, sha1_on_avx512, stitch::sha1_avx512),
    );
}

impl HashAlg for Sha256 {
    const BLOCK_LEN: usize = 64;
    const OUTPUT_LEN: usize = 32;
    const LENGTH_FIELD_LEN: usize = 8;
    type Word = u32;
    type State = [u32; 8];
    const INITIAL: [u32; 8] = [
        0x6a09_e667,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];
    const RUSTCRYPTO_CRATE: &'static str = "sha2 crate";

    sha1_sha256_methods!(
        [u32; 8],
        sha256_rustcrypto,
        ShaNi => (sha256_ni::available, sha256_shani, stitch::sha256_ni),
        ShaNiAvx512 => (sha256_ni::available_avx512, sha256_shani_avx512, stitch::sha256_ni_avx512),
        Avx2 => (sha256_avx2::available, sha256_on_avx2, stitch::sha256_avx2),
        Avx512 => (sha256_avx512::available, sha256_on_avx512, stitch::sha256_avx512),
    );
}

impl HashAlg for Sha384 {
    const BLOCK_LEN: usize = 128;
    const OUTPUT_LEN: usize = 48;
    const LENGTH_FIELD_LEN: usize = 16;
    type Word = u64;
    type State = [u64; 8];
    const INITIAL: [u64; 8] = [
        0xcbbb_9d5d_c105_9ed8,
        0x629a_292a_367c_d507,
        0x9159_015a_3070_dd17,
        0x152f_ecd8_f70e_5939,
        0x6733_2667_ffc0_0b31,
        0x8eb4_4a87_6858_1511,
        0xdb0c_2e0d_64f9_8fa7,
        0x47b5_481d_befa_4fa4,
    ];
    const RUSTCRYPTO_CRATE: &'static str = "sha2 crate";

    fn is_available(engine: HashEngine) -> bool {
        match engine {
            HashEngine::RustCrypto => true,
            #[cfg(target_arch = "x86_64")]
            HashEngine::Sha512Avx2 => sha512_avx2::available(),
            #[cfg(target_arch = "x86_64")]
            HashEngine::Sha512Avx512 => sha512_avx512::available(),
            _ => false,
        }
    }

    fn compressor(engine: HashEngine, tuning: RoundTuning) -> Compress<[u64; 8]> {
        #[cfg(target_arch = "x86_64")]
        use crate::x86_64::{
            sha512::{FewestOps, ShortChain},
            sha512_avx512::SplitLanes,
        };
        // `SplitLanes` needs AVX-512VL: a key made for another engine never holds it
        // (`HmacKey::new` takes its forms through `RoundTuning::on`).
        match (engine, tuning) {
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::FewestOps) => sha512_on_avx512::<FewestOps>,
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::ShortChain) => sha512_on_avx512::<ShortChain>,
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::SplitLanes) => sha512_on_avx512::<SplitLanes>,
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx2, RoundTuning::FewestOps) => sha512_on_avx2::<FewestOps>,
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx2, RoundTuning::ShortChain) => sha512_on_avx2::<ShortChain>,
            _ => sha512_rustcrypto,
        }
    }

    fn pair_compressor(engine: HashEngine, tuning: RoundTuning) -> Option<CompressPair<[u64; 8]>> {
        #[cfg(target_arch = "x86_64")]
        use crate::x86_64::{
            sha512::{FewestOps, ShortChain},
            sha512_avx512::SplitLanes,
        };
        // As in `compressor`.
        match (engine, tuning) {
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::FewestOps) => {
                Some(sha512_pair_on_avx512::<FewestOps>)
            }
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::ShortChain) => {
                Some(sha512_pair_on_avx512::<ShortChain>)
            }
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx512, RoundTuning::SplitLanes) => {
                Some(sha512_pair_on_avx512::<SplitLanes>)
            }
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx2, RoundTuning::FewestOps) => {
                Some(sha512_pair_on_avx2::<FewestOps>)
            }
            #[cfg(target_arch = "x86_64")]
            (HashEngine::Sha512Avx2, RoundTuning::ShortChain) => {
                Some(sha512_pair_on_avx2::<ShortChain>)
            }
            _ => None,
        }
    }

    fn write_digest(state: &[u64; 8], out: &mut [u8]) {
        // SHA-384 is SHA-512 with its own IV, truncated to six words.
        for (dst, w) in out.chunks_exact_mut(8).zip(state) {
            dst.copy_from_slice(&w.to_be_bytes());
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn stitches(engine: HashEngine) -> bool {
        matches!(engine, HashEngine::Sha512Avx2 | HashEngine::Sha512Avx512)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn stitched_inner_hash(
        engine: HashEngine,
        tuning: RoundTuning,
        state: &mut [u64; 8],
        head: &[u8; 13],
        data: &mut [u8],
        keys: stitch::AesKeys<'_>,
        iv: &mut [u8; 16],
    ) -> Option<usize> {
        // An inner message of one block (up to 98 bytes of data) seals faster without the
        // stitch, whose set-up then outweighs the one to six CBC blocks it hides. Measured
        // on an AMD EPYC Zen 3 (family 25 model 1, AVX2 engine), AES-256-CBC-SHA384 seal,
        // fastest of 60000, TSC cycles, stitched against plain: 16 B 1421 / 1274, 64 B
        // 1445 / 1421, 96 B 1544 / 1519; with two blocks the stitch wins: 112 B 1935 /
        // 2033, 160 B 1911 / 2180. The length is public.
        if head.len() + data.len() + 1 + Self::LENGTH_FIELD_LEN <= Self::BLOCK_LEN {
            return None;
        }
        // SAFETY: the caller guarantees the engine's features (it was available) and
        // AES-NI.
        unsafe {
            use crate::x86_64::{
                sha512::{FewestOps, ShortChain},
                sha512_avx512::SplitLanes,
            };
            // As in `compressor`.
            match (engine, tuning) {
                (HashEngine::Sha512Avx512, RoundTuning::FewestOps) => Some(
                    stitch::sha512_avx512::<FewestOps>(state, head, data, keys, iv),
                ),
                (HashEngine::Sha512Avx512, RoundTuning::ShortChain) => Some(
                    stitch::sha512_avx512::<ShortChain>(state, head, data, keys, iv),
                ),
                (HashEngine::Sha512Avx512, RoundTuning::SplitLanes) => Some(
                    stitch::sha512_avx512::<SplitLanes>(state, head, data, keys, iv),
                ),
                (HashEngine::Sha512Avx2, RoundTuning::FewestOps) => {
                    Some(stitch::sha512_avx2::<FewestOps>(
                        state, head, data, keys, iv,
                    ))
                }
                (HashEngine::Sha512Avx2, RoundTuning::ShortChain) => {
                    Some(stitch::sha512_avx2::<ShortChain>(
                        state, head, data, keys, iv,
                    ))
                }
                _ => None,
            }
        }
    }
}

/// A hash in progress: chaining value, the bytes not yet compressed, and the byte count
/// so far.
///
/// Bytes are compressed a step at a time: a block, or two blocks on an engine with a
/// [`HashAlg::pair_compressor`], so that such an engine's blocks come in pairs wherever
/// the message allows (see there).
pub(crate) struct Stream<H: HashAlg> {
    /// The key's engine's compression (available on this CPU).
    compress: Compress<H::State>,
    /// Its two-block compression, if it has one.
    compress_pair: Option<CompressPair<H::State>>,
    /// Whether a secret-length finish takes its candidate blocks in pairs through
    /// `compress_pair` (where there is one), or one at a time.
    finish: FinishSteps,
    state: H::State,
    /// Up to a step less one byte; room for the final padding's blocks beyond it.
    partial: [u8; 3 * MAX_BLOCK_LEN],
    partial_len: usize,
    total: u64,
}

impl<H: HashAlg> Stream<H> {
    /// Starts from the initial value.
    #[cfg(test)]
    pub(crate) fn new(engine: HashEngine, tuning: RoundTuning, finish: FinishSteps) -> Self {
        Self::resume(engine, tuning, finish, H::INITIAL, 0)
    }

    /// Continues from a chaining value reached after `blocks` whole blocks.
    pub(crate) fn resume(
        engine: HashEngine,
        tuning: RoundTuning,
        finish: FinishSteps,
        state: H::State,
        blocks: u64,
    ) -> Self {
        Stream {
            compress: H::compressor(engine, tuning),
            compress_pair: H::pair_compressor(engine, tuning),
            finish,
            state,
            partial: [0; 3 * MAX_BLOCK_LEN],
            partial_len: 0,
            total: blocks * H::BLOCK_LEN as u64,
        }
    }

    /// Bytes per step: one block, or two where the engine compresses pairs.
    #[inline(always)]
    fn step_len(&self) -> usize {
        H::BLOCK_LEN * if self.compress_pair.is_some() { 2 } else { 1 }
    }

    /// Compresses whole blocks into the chaining value.
    #[inline(always)]
    fn compress_into(compress: Compress<H::State>, state: &mut H::State, blocks: &[u8]) {
        debug_assert!(blocks.len().is_multiple_of(H::BLOCK_LEN));
        // SAFETY: `compress` came from `H::compressor` for the key's engine, which was
        // checked available on this CPU when the key was made.
        unsafe { compress(state, blocks) }
    }

    /// Absorbs `data`. Its length (not its content) is public.
    pub(crate) fn update(&mut self, mut data: &[u8]) {
        let step = self.step_len();
        self.total += data.len() as u64;
        if self.partial_len > 0 {
            let take = (step - self.partial_len).min(data.len());
            self.partial[self.partial_len..self.partial_len + take].copy_from_slice(&data[..take]);
            self.partial_len += take;
            data = &data[take..];
            if self.partial_len < step {
                return;
            }
            Self::compress_into(self.compress, &mut self.state, &self.partial[..step]);
            self.partial_len = 0;
        }
        let whole = data.len() - data.len() % step;
        if whole > 0 {
            Self::compress_into(self.compress, &mut self.state, &data[..whole]);
        }
        let rest = &data[whole..];
        self.partial[..rest.len()].copy_from_slice(rest);
        self.partial_len = rest.len();
    }

    /// Pads and finishes; writes [`HashAlg::OUTPUT_LEN`] bytes to `out`.
    pub(crate) fn finish(mut self, out: &mut [u8]) {
        let field = H::LENGTH_FIELD_LEN;
        let bits = u128::from(self.total) * 8;
        let n = self.partial_len;
        // The buffered bytes, 0x80, zeros and the bit count, to the end of a block: up to
        // three blocks after two buffered ones, compressed in one call.
        let end = (n + 1 + field).div_ceil(H::BLOCK_LEN) * H::BLOCK_LEN;
        self.partial[n] = 0x80;
        self.partial[n + 1..end - field].fill(0);
        self.partial[end - field..end].copy_from_slice(&bits.to_be_bytes()[16 - field..]);
        Self::compress_into(self.compress, &mut self.state, &self.partial[..end]);
        H::write_digest(&self.state, out);
    }

    /// Absorbs the first `secret_len` bytes of `suffix` and finishes, with the same
    /// instructions and memory accesses for every `secret_len <= suffix.len()`.
    ///
    /// `suffix.len()` is public and decides how many blocks are compressed.
    // Inlined into open, so that it is built with open's target features.
    #[inline(always)]
    pub(crate) fn finish_with_secret_suffix(
        &mut self,
        suffix: &[u8],
        secret_len: usize,
        out: &mut [u8],
    ) {
        let block = H::BLOCK_LEN;
        let field = H::LENGTH_FIELD_LEN;
        let buffered = self.partial_len;
        let max_len = suffix.len();

        // Enough blocks for the longest suffix, its 0x80 byte and the bit count.
        let blocks = (buffered + max_len + 1 + field).div_ceil(block);
        let end = blocks * block;
        // The block that carries the bit count for the real length (a division by a
        // constant power of two: a shift).
        let last = (buffered + secret_len + field) / block;
        // The byte count stays far below 2^61, so the bit count fits the low 8 bytes of
        // the length field; the high bytes of SHA-384's 16-byte field stay zero.
        let bits = (self.total + secret_len as u64) * 8;

        let mut work = [0u8; SECRET_SUFFIX_BUF];
        work[..buffered].copy_from_slice(&self.partial[..buffered]);
        // Keep the suffix bytes below the secret length, put 0x80 at it, zero the rest.
        // Positions and lengths are below 2^15, so the masks are sign bits of i16
        // differences: lane arithmetic that vectorises, with no compare to branch on.
        // The suffix is masked on its way in from the record, not copied first and masked
        // in place: the vector loads would then span the copy's stores, which cannot be
        // forwarded, and wait for them to reach the cache.
        let secret = secret_len as i16;
        let masked = |k: usize, b: u8| {
            let d = (k as i16).wrapping_sub(secret);
            let keep = (d >> 15) as u8;
            let at_end = (!(d >> 15) & (d.wrapping_sub(1) >> 15)) as u8;
            (b & keep) | (0x80 & at_end)
        };
        let (from_suffix, past_suffix) = work[buffered..end].split_at_mut(max_len);
        for (k, (w, &b)) in from_suffix.iter_mut().zip(suffix).enumerate() {
            *w = masked(k, b);
        }
        for (k, w) in past_suffix.iter_mut().enumerate() {
            *w = masked(max_len + k, 0);
        }
        // Those positions are all past the secret length, hence zero: OR the count in.
        for (i, blk) in work[..end].chunks_exact_mut(block).enumerate() {
            let is_last = ct::eq(i, last) as u64;
            let tail: &mut [u8; 8] = (&mut blk[block - 8..]).try_into().unwrap();
            *tail = (u64::from_be_bytes(*tail) | (bits & is_last)).to_be_bytes();
        }

        // The bit count cannot sit in a block before this one, whatever the secret length,
        // so those blocks have nothing to select: going block by block, they are
        // compressed in one call. Going in pairs, they join the candidates' pairs instead:
        // with 112 to 239 bytes buffered (about half of all record lengths for SHA-384),
        // the four blocks go as two pairs rather than a block, a pair and a block. Their
        // chaining values are never kept, since `last` is at least `first_candidate`.
        // Zen 3, AES-256-CBC-SHA384 open, fastest of 30 runs: 1400 B 2830-2858 ->
        // 2807-2843 ns, 1200 B 0.6% faster. Whether to go in pairs is the CPU's
        // `FinishSteps`.
        let pairs = match self.finish {
            FinishSteps::Pairs => self.compress_pair,
            FinishSteps::Blocks => None,
        };
        let first_candidate = (buffered + field) / block;
        let mut i = 0;
        if first_candidate > 0 && pairs.is_none() {
            Self::compress_into(
                self.compress,
                &mut self.state,
                &work[..first_candidate * block],
            );
            i = first_candidate;
        }
        let mut result = self.state;
        let mut keep_if_last = |i: usize, state: &H::State| {
            let keep = ct::choice(ct::eq(i, last));
            for (r, s) in result.as_mut().iter_mut().zip(state.as_ref()) {
                r.conditional_assign(s, keep);
            }
        };
        if let Some(compress_pair) = pairs {
            // Two blocks a call, keeping the chaining value between them. All the
            // candidates in one call that keeps every chaining value (a call costs about
            // 45 TSC cycles beyond its rounds) was measured on the same Zen 3 and not
            // kept: as its own function, a second copy of the rounds, open at 1350 bytes
            // took 1.6% longer (the copies outgrow the decoded-op cache together); as
            // the bulk compression's one body, with the lone block's `both` a run-time
            // value, no faster at 1350 bytes and 6% slower at 16 KiB. (That body now
            // has `both` at run time, and the pairs here run through it: on Zen 5 that
            // cost nothing at 16 KiB; see `x86_64::sha512::compress`. Not measured on
            // Zen 3 since.)
            while i + 2 <= blocks {
                let mut mid = self.state;
                // SAFETY: `compress_pair` came from `H::pair_compressor` for the key's
                // engine, which was checked available on this CPU when the key was made.
                unsafe {
                    compress_pair(&mut self.state, &work[i * block..(i + 2) * block], &mut mid)
                };
                keep_if_last(i, &mid);
                keep_if_last(i + 1, &self.state);
                i += 2;
            }
        }
        while i < blocks {
            Self::compress_into(
                self.compress,
                &mut self.state,
                &work[i * block..(i + 1) * block],
            );
            keep_if_last(i, &self.state);
            i += 1;
        }
        H::write_digest(&result, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;
    use std::{vec, vec::Vec};

    fn reference<H: HashAlg>(data: &[u8]) -> Vec<u8> {
        match H::OUTPUT_LEN {
            20 => sha1::Sha1::digest(data).to_vec(),
            32 => sha2::Sha256::digest(data).to_vec(),
            48 => sha2::Sha384::digest(data).to_vec(),
            _ => unreachable!(),
        }
    }

    /// Every engine this CPU has for `H`, in each of its builds.
    fn engines<H: HashAlg>() -> Vec<(HashEngine, RoundTuning)> {
        HashEngine::ALL
            .into_iter()
            .filter(|&e| H::is_available(e))
            .flat_map(|e| RoundTuning::builds_of(e).iter().map(move |&t| (e, t)))
            .collect()
    }

    /// SHA-1 and SHA-256 keys take the SHA-NI engines where the CPU has SHA-NI; else the
    /// AVX-512VL variant of the AVX2 engine where it has AVX-512VL, else the AVX2 engine
    /// where it has AVX2 and BMI2; else the RustCrypto crates. Against std's detection,
    /// not the crate's own.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sha1_sha256_engine_follows_the_cpu() {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2") && has!("bmi1") && has!("bmi2");
        let want = if has!("sha") && has!("sse4.1") {
            None
        } else if avx2 && has!("avx512f") && has!("avx512vl") {
            Some(HashEngine::Avx512)
        } else if avx2 {
            Some(HashEngine::Avx2)
        } else {
            Some(HashEngine::RustCrypto)
        };
        for got in [Sha1::best_engine(), Sha256::best_engine()] {
            match want {
                Some(want) => assert_eq!(got, want),
                None => assert!(
                    matches!(got, HashEngine::ShaNi | HashEngine::ShaNiAvx512),
                    "{got}"
                ),
            }
        }
    }

    /// The ways a secret-length finish can step on `engine`: both where it has a pair
    /// compression, which one is then taken for depends on the CPU (see `FinishSteps`).
    fn finish_steps<H: HashAlg>(engine: HashEngine, tuning: RoundTuning) -> Vec<FinishSteps> {
        if H::pair_compressor(engine, tuning).is_some() {
            vec![FinishSteps::Pairs, FinishSteps::Blocks]
        } else {
            vec![FinishSteps::Pairs]
        }
    }

    fn streaming_matches<H: HashAlg>() {
        let data: Vec<u8> = (0..700u32).map(|i| (i * 11 + 1) as u8).collect();
        // Under Miri, which checks the memory accesses: each side of a block boundary.
        let b = H::BLOCK_LEN;
        let lens: Vec<usize> = if cfg!(miri) {
            vec![0, b - 1, b, 2 * b + 37]
        } else {
            (0..400).collect()
        };
        for (engine, tuning) in engines::<H>() {
            for &len in &lens {
                for split in [0, 1.min(len), len / 3, len] {
                    let mut s = Stream::<H>::new(engine, tuning, FinishSteps::Pairs);
                    s.update(&data[..split]);
                    s.update(&data[split..len]);
                    let mut out = [0u8; MAX_OUTPUT_LEN];
                    s.finish(&mut out[..H::OUTPUT_LEN]);
                    assert_eq!(&out[..H::OUTPUT_LEN], reference::<H>(&data[..len]), "{len}");
                }
            }
        }
    }

    /// Sweeps public prefix length x public maximum x secret length, like the
    /// secret-suffix tests of BoringSSL.
    fn secret_suffix_matches<H: HashAlg>() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 29 + 7) as u8).collect();
        let b = H::BLOCK_LEN;
        let (prefixes, max_lens): (Vec<usize>, Vec<usize>) = if cfg!(miri) {
            // Miri checks the memory accesses: a few shapes of prefix and suffix.
            (vec![0, b + 55], vec![b - 9, 2 * b + 3])
        } else {
            (
                vec![0, 1, 13, b - 1, b, b + 55, 2 * b - 1, 300],
                (0..=300).step_by(7).chain([b - 9, b]).collect(),
            )
        };
        let builds = engines::<H>().into_iter().flat_map(|(engine, tuning)| {
            finish_steps::<H>(engine, tuning)
                .into_iter()
                .map(move |steps| (engine, tuning, steps))
        });
        for (engine, tuning, steps) in builds {
            for &prefix in &prefixes {
                for &max_len in &max_lens {
                    let lens: Vec<usize> = if cfg!(miri) {
                        vec![0, max_len / 2, max_len]
                    } else {
                        (0..=max_len).collect()
                    };
                    for len in lens {
                        let mut s = Stream::<H>::new(engine, tuning, steps);
                        s.update(&data[..prefix]);
                        let mut out = [0u8; MAX_OUTPUT_LEN];
                        let suffix = &data[prefix..prefix + max_len];
                        s.finish_with_secret_suffix(suffix, len, &mut out[..H::OUTPUT_LEN]);
                        assert_eq!(
                            &out[..H::OUTPUT_LEN],
                            reference::<H>(&data[..prefix + len]),
                            "prefix {prefix} max {max_len} len {len} {engine:?} {tuning:?} {steps:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sha1_streaming() {
        streaming_matches::<Sha1>();
    }
    #[test]
    fn sha256_streaming() {
        streaming_matches::<Sha256>();
    }
    #[test]
    fn sha384_streaming() {
        streaming_matches::<Sha384>();
    }
    #[test]
    fn sha1_secret_suffix() {
        secret_suffix_matches::<Sha1>();
    }
    #[test]
    fn sha256_secret_suffix() {
        secret_suffix_matches::<Sha256>();
    }
    #[test]
    fn sha384_secret_suffix() {
        secret_suffix_matches::<Sha384>();
    }
}

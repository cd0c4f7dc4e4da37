//! Seal's inner HMAC hash and its CBC encryption in one pass (x86_64, AES-NI beside the
//! SHA-NI SHA-1/SHA-256 engines, the AVX2 SHA-1/SHA-256 ones or the AVX2/AVX-512 SHA-512
//! ones).
//!
//! CBC encryption is a serial chain of `aesenc`, bound by its latency and leaving the AES
//! unit idle most of the time; the hash rounds run on other units (SHA-NI, or the scalar
//! ALUs for SHA-512). So the CBC blocks are encrypted from the hook that each engine's
//! compression calls every few rounds, and the out-of-order core runs the two side by
//! side.
//!
//! The hash input is `ad || len16 || plaintext`, so its blocks sit 13 bytes off the CBC
//! blocks, and encryption is in place: a CBC block is encrypted only once the hash has
//! loaded all of it (each step's blocks are in registers before its first hook runs).
//! The record length is public, so the whole padded inner message, its final padding and
//! bit count included, goes through this one loop: the plaintext blocks at the end are
//! copied out with the padding first, and by the time the inner hash is done every whole
//! plaintext block is encrypted. What is left for the caller is the outer hash and the
//! CBC blocks that hold the MAC, which depend on it.
//!
//! Every branch and index here depends only on the record length; the plaintext flows
//! through the hash and the AES rounds and nothing else.

use core::arch::x86_64::*;
use core::marker::PhantomData;

use super::{
    Hook, sha1_avx2, sha1_avx512, sha1_ni, sha256_avx2, sha256_avx512, sha256_ni, sha512,
    sha512_avx2::Avx2, sha512_avx512::Avx512, two_blocks,
};

/// Bytes of the hash input in front of the plaintext: the associated data and the length.
pub(crate) const HEAD_LEN: usize = 13;
/// The largest hash block (SHA-512's).
const MAX_BLOCK: usize = 128;

/// AES encryption round keys usable with AES-NI, of the two key sizes the suites use.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AesKeys<'a> {
    Aes128(&'a [__m128i; 11]),
    Aes256(&'a [__m128i; 15]),
}

impl<'a> AesKeys<'a> {
    /// From the `rounds + 1` keys of an AES-NI key schedule (`None` for AES-192).
    pub(crate) fn new(rk: &'a [__m128i]) -> Option<Self> {
        match rk.len() {
            11 => rk.try_into().ok().map(AesKeys::Aes128),
            15 => rk.try_into().ok().map(AesKeys::Aes256),
            _ => None,
        }
    }
}

/// A compression function whose rounds call a hook every few rounds.
pub(crate) trait StitchedHash {
    /// Bytes per block.
    const BLOCK_LEN: usize;
    /// Bytes of the bit count that ends the padded message.
    const LENGTH_FIELD_LEN: usize;
    /// Blocks loaded, then compressed, per step: 1, or 2 for an engine that computes two
    /// blocks' message schedules at once.
    const STEP_BLOCKS: usize;
    /// Hook calls per block.
    const HOOKS: usize;
    /// Whether the steps between the first and the last may go through [`whole_steps`]
    /// (the compression writes every hook call out), rather than [`CbcHook`].
    const WHOLE_STEPS: bool;
    /// Core cycles the rounds between two hook calls take on their own, which
    /// [`StepHook::SUITS`] weighs against the CBC chain's: on an AMD EPYC Zen 3, from
    /// the time of OpenSSL's compression for the same CPU features (`hash-floor`) and
    /// the core's clock, about 3.23 GHz.
    const SLOT_CYCLES: usize;
    /// The chaining value in the standard word order.
    type State;
    /// The chaining value as the engine keeps it between blocks.
    type Regs;
    /// The message words of one step.
    type Loaded: Copy;

    /// # Safety
    /// The CPU must have the engine's features (the same for all the methods).
    unsafe fn start(state: &Self::State) -> Self::Regs;
    /// Loads blocks `a` and `b` (`b` is `a` again for a step of one block).
    ///
    /// # Safety
    /// As [`Self::start`].
    unsafe fn load(a: &[u8], b: &[u8]) -> Self::Loaded;
    /// Compresses the first `blocks` blocks of `x`, calling `hook` `blocks * HOOKS`
    /// times.
    ///
    /// # Safety
    /// As [`Self::start`].
    unsafe fn compress<K: Hook>(
        regs: &mut Self::Regs,
        x: Self::Loaded,
        blocks: usize,
        hook: &mut K,
    );
    /// # Safety
    /// As [`Self::start`].
    unsafe fn finish(regs: Self::Regs, state: &mut Self::State);
}

/// SHA-1 on SHA-NI with message schedule `S`: one block per step, a hook every 20
/// rounds.
struct Sha1Ni<S>(core::marker::PhantomData<S>);

impl<S: sha1_ni::Schedule> StitchedHash for Sha1Ni<S> {
    const BLOCK_LEN: usize = 64;
    const LENGTH_FIELD_LEN: usize = 8;
    const STEP_BLOCKS: usize = 1;
    const HOOKS: usize = 4;
    const WHOLE_STEPS: bool = true;
    // 20 rounds at about 1.6 cycles.
    const SLOT_CYCLES: usize = 32;
    type State = [u32; 5];
    type Regs = sha1_ni::Regs;
    type Loaded = [__m128i; 4];

    #[inline(always)]
    unsafe fn start(state: &[u32; 5]) -> sha1_ni::Regs {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { sha1_ni::Regs::load(state) }
    }
    #[inline(always)]
    unsafe fn load(a: &[u8], _: &[u8]) -> [__m128i; 4] {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { sha1_ni::load_block(a.try_into().unwrap()) }
    }
    #[inline(always)]
    unsafe fn compress<K: Hook>(regs: &mut sha1_ni::Regs, x: [__m128i; 4], _: usize, hook: &mut K) {
        // SAFETY: the caller guarantees SHA-NI (and AVX-512VL, for `VectorAlu`).
        unsafe { sha1_ni::compress_block::<S, K>(regs, x, hook) }
    }
    #[inline(always)]
    unsafe fn finish(regs: sha1_ni::Regs, state: &mut [u32; 5]) {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { regs.store(state) }
    }
}

/// SHA-256 on SHA-NI with message schedule `S`: one block per step, a hook every 16
/// rounds.
struct Sha256Ni<S>(core::marker::PhantomData<S>);

impl<S: sha256_ni::Schedule> StitchedHash for Sha256Ni<S> {
    const BLOCK_LEN: usize = 64;
    const LENGTH_FIELD_LEN: usize = 8;
    const STEP_BLOCKS: usize = 1;
    const HOOKS: usize = 4;
    const WHOLE_STEPS: bool = true;
    // 16 rounds at about 2.1 cycles.
    const SLOT_CYCLES: usize = 33;
    type State = [u32; 8];
    type Regs = sha256_ni::Regs;
    type Loaded = [__m128i; 4];

    #[inline(always)]
    unsafe fn start(state: &[u32; 8]) -> sha256_ni::Regs {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { sha256_ni::Regs::load(state) }
    }
    #[inline(always)]
    unsafe fn load(a: &[u8], _: &[u8]) -> [__m128i; 4] {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { sha256_ni::load_block(a.try_into().unwrap()) }
    }
    #[inline(always)]
    unsafe fn compress<K: Hook>(
        regs: &mut sha256_ni::Regs,
        x: [__m128i; 4],
        _: usize,
        hook: &mut K,
    ) {
        // SAFETY: the caller guarantees SHA-NI (and AVX-512VL, for `VectorAlu`).
        unsafe { sha256_ni::compress_block::<S, K>(regs, x, hook) }
    }
    #[inline(always)]
    unsafe fn finish(regs: sha256_ni::Regs, state: &mut [u32; 8]) {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { regs.store(state) }
    }
}

/// SHA-512 on 256-bit vectors with the σ functions of `S` and the rounds in form `F`:
/// two blocks per step (one per vector lane of the schedule), a hook every 4 rounds.
struct Sha512With<S, F>(core::marker::PhantomData<(S, F)>);

impl<S: sha512::Sigmas, F: sha512::RoundForm> StitchedHash for Sha512With<S, F> {
    const BLOCK_LEN: usize = 128;
    const LENGTH_FIELD_LEN: usize = 16;
    const STEP_BLOCKS: usize = 2;
    const HOOKS: usize = 20;
    // Its compression loops over groups of rounds around the hook (see
    // `sha512::compress_pair`), so [`StepHook`]'s call numbers would not be constants.
    const WHOLE_STEPS: bool = false;
    // 4 rounds at about 6.9 cycles (the AVX2 engine).
    const SLOT_CYCLES: usize = 28;
    type State = [u64; 8];
    type Regs = ([u64; 8], sha512::Wk);
    type Loaded = [__m256i; 8];

    #[inline(always)]
    unsafe fn start(state: &[u64; 8]) -> Self::Regs {
        (*state, sha512::Wk::new())
    }
    #[inline(always)]
    unsafe fn load(a: &[u8], b: &[u8]) -> [__m256i; 8] {
        // SAFETY: the caller guarantees the engine's features, AVX2 among them.
        unsafe { sha512::load_pair(a.try_into().unwrap(), b.try_into().unwrap()) }
    }
    #[inline(always)]
    unsafe fn compress<K: Hook>(
        regs: &mut Self::Regs,
        x: [__m256i; 8],
        blocks: usize,
        hook: &mut K,
    ) {
        // SAFETY: the caller guarantees the engine's features.
        unsafe {
            sha512::compress_pair::<S, F, K>(&mut regs.0, &mut regs.1, x, blocks == 2, None, hook)
        }
    }
    #[inline(always)]
    unsafe fn finish(regs: Self::Regs, state: &mut [u64; 8]) {
        *state = regs.0;
    }
}

/// SHA-1 on the AVX2 engine or its AVX-512VL variant (for CPUs without SHA-NI; `S`, the
/// schedule's operations, picks which): two blocks per step (one per vector lane of the
/// schedule), a hook every 4 rounds.
struct Sha1TwoBlocks<S>(PhantomData<S>);

impl<S: sha1_avx2::Schedule> StitchedHash for Sha1TwoBlocks<S> {
    const BLOCK_LEN: usize = 64;
    const LENGTH_FIELD_LEN: usize = 8;
    const STEP_BLOCKS: usize = 2;
    const HOOKS: usize = 20;
    const WHOLE_STEPS: bool = true;
    const SLOT_CYCLES: usize = sha1_avx2::SLOT_CYCLES;
    type State = [u32; 5];
    type Regs = ([u32; 5], sha1_avx2::Wk);
    type Loaded = [__m256i; 4];

    #[inline(always)]
    unsafe fn start(state: &[u32; 5]) -> Self::Regs {
        (*state, sha1_avx2::Wk::new())
    }
    #[inline(always)]
    unsafe fn load(a: &[u8], b: &[u8]) -> [__m256i; 4] {
        // SAFETY: the caller guarantees the engine's features, AVX2 among them.
        unsafe { two_blocks::load_pair_32(a.try_into().unwrap(), b.try_into().unwrap()) }
    }
    #[inline(always)]
    unsafe fn compress<K: Hook>(
        regs: &mut Self::Regs,
        x: [__m256i; 4],
        blocks: usize,
        hook: &mut K,
    ) {
        // SAFETY: the caller guarantees the engine's features.
        unsafe {
            sha1_avx2::compress_pair::<S, K>(&mut regs.0, &mut regs.1, x, blocks == 2, None, hook)
        }
    }
    #[inline(always)]
    unsafe fn finish(regs: Self::Regs, state: &mut [u32; 5]) {
        *state = regs.0;
    }
}

/// SHA-256 on the AVX2 engine or its AVX-512VL variant (for CPUs without SHA-NI; `S`, the
/// schedule's σ functions, picks which): two blocks per step (one per vector lane of the
/// schedule), a hook every 4 rounds.
struct Sha256TwoBlocks<S>(PhantomData<S>);

impl<S: sha256_avx2::Sigmas> StitchedHash for Sha256TwoBlocks<S> {
    const BLOCK_LEN: usize = 64;
    const LENGTH_FIELD_LEN: usize = 8;
    const STEP_BLOCKS: usize = 2;
    const HOOKS: usize = 16;
    const WHOLE_STEPS: bool = true;
    // 4 rounds at about 6.7 cycles.
    const SLOT_CYCLES: usize = 27;
    type State = [u32; 8];
    type Regs = ([u32; 8], sha256_avx2::Wk);
    type Loaded = [__m256i; 4];

    #[inline(always)]
    unsafe fn start(state: &[u32; 8]) -> Self::Regs {
        (*state, sha256_avx2::Wk::new())
    }
    #[inline(always)]
    unsafe fn load(a: &[u8], b: &[u8]) -> [__m256i; 4] {
        // SAFETY: the caller guarantees the engine's features, AVX2 among them.
        unsafe { two_blocks::load_pair_32(a.try_into().unwrap(), b.try_into().unwrap()) }
    }
    #[inline(always)]
    unsafe fn compress<K: Hook>(
        regs: &mut Self::Regs,
        x: [__m256i; 4],
        blocks: usize,
        hook: &mut K,
    ) {
        // SAFETY: the caller guarantees the engine's features.
        unsafe {
            sha256_avx2::compress_pair::<S, K>(&mut regs.0, &mut regs.1, x, blocks == 2, None, hook)
        }
    }
    #[inline(always)]
    unsafe fn finish(regs: Self::Regs, state: &mut [u32; 8]) {
        *state = regs.0;
    }
}

/// Runs seal's whole inner hash over `head || data` (from `state`, the chaining value
/// after the key block, to the final one, padding included) and CBC-encrypts in place,
/// from `iv` (left holding the last ciphertext block), every whole 16-byte block of
/// `data`; returns the bytes encrypted.
///
/// # Safety
/// The CPU must have `H`'s features and AES-NI.
#[inline(always)]
unsafe fn inner_hash_and_encrypt<H: StitchedHash, const R: usize>(
    state: &mut H::State,
    head: &[u8; HEAD_LEN],
    data: &mut [u8],
    rk: &[__m128i; R],
    iv: &mut [u8; 16],
) -> usize {
    let b = H::BLOCK_LEN;
    let len = data.len();
    let msg_len = HEAD_LEN + len;
    // Blocks wholly inside `head || data`, and blocks of the padded message.
    let whole = msg_len / b;
    let total = (msg_len + 1 + H::LENGTH_FIELD_LEN).div_ceil(b);
    // The bit count covers the key block too.
    let bits = (b + msg_len) as u128 * 8;

    // Block 0 joins the head to the data; the blocks from `whole` on hold the end of the
    // data, the 0x80 byte and the bit count.
    let mut first = [0u8; MAX_BLOCK];
    let mut tail = [0u8; 2 * MAX_BLOCK];
    if whole > 0 {
        first[..HEAD_LEN].copy_from_slice(head);
        first[HEAD_LEN..b].copy_from_slice(&data[..b - HEAD_LEN]);
        let from = whole * b - HEAD_LEN;
        tail[..len - from].copy_from_slice(&data[from..]);
    } else {
        tail[..HEAD_LEN].copy_from_slice(head);
        tail[HEAD_LEN..msg_len].copy_from_slice(data);
    }
    tail[msg_len - whole * b] = 0x80;
    let tail_end = (total - whole) * b;
    let field = H::LENGTH_FIELD_LEN;
    tail[tail_end - field..tail_end].copy_from_slice(&bits.to_be_bytes()[16 - field..]);

    // SAFETY: the caller guarantees the features (for every `H` call below too).
    let mut regs = unsafe { H::start(state) };
    // SAFETY: `iv` is 16 readable bytes.
    let iv_block = unsafe { _mm_loadu_si128(iv.as_ptr().cast()) };
    // What enters the first block's rounds: its plaintext, the IV and the first round key;
    // and the last round key with the first folded in (see `CbcChain::second_half`).
    // SAFETY: the caller guarantees AES-NI, hence SSE2; `first` is 16 readable bytes.
    let mut cbc = unsafe {
        CbcChain {
            rk,
            last_first: _mm_xor_si128(rk[R - 1], rk[0]),
            chain: iv_block,
            next_in: match data.first_chunk::<16>() {
                Some(first) => _mm_xor_si128(
                    _mm_xor_si128(_mm_loadu_si128(first.as_ptr().cast()), iv_block),
                    rk[0],
                ),
                None => iv_block,
            },
        }
    };
    let mut encrypted = 0;
    let mut k = 0;
    while k < total {
        if k > 0 && H::WHOLE_STEPS && StepHook::<H, R>::SUITS {
            // SAFETY: as above.
            (k, encrypted) =
                unsafe { whole_steps::<H, R>(&mut regs, data, k, whole, encrypted, &mut cbc) };
            if k >= total {
                break;
            }
        }
        let blocks = H::STEP_BLOCKS.min(total - k);
        let (first, tail, data_in) = (&first[..b], &tail[..], &*data);
        let pa = hash_block(first, tail, data_in, whole, k, b);
        let pz = hash_block(first, tail, data_in, whole, k + blocks - 1, b);
        // SAFETY: as above. The blocks are in registers from here on, before any of
        // `data` is encrypted below.
        let x = unsafe { H::load(pa, pz) };
        // The CBC blocks of `data` wholly loaded so far, spread evenly over the hooks.
        let loaded = ((k + blocks) * b - HEAD_LEN).min(len);
        let limit = loaded / 16;
        let (blocks16, _) = data.as_chunks_mut::<16>();
        let mut hook = CbcHook {
            cbc,
            half_done: cbc.chain,
            blocks: &mut blocks16[encrypted..],
            count: limit - encrypted,
            slots: blocks * H::HOOKS,
            next: 0,
            credit: 0,
        };
        // SAFETY: as above.
        unsafe { H::compress(&mut regs, x, blocks, &mut hook) };
        cbc = hook.cbc;
        encrypted = limit;
        k += blocks;
    }
    // SAFETY: as above.
    unsafe { H::finish(regs, state) };
    // SAFETY: `iv` is 16 writable bytes.
    unsafe { _mm_storeu_si128(iv.as_mut_ptr().cast(), cbc.chain) };
    16 * encrypted
}

/// The steps of [`inner_hash_and_encrypt`] from block `k` (not the first) whose hash
/// blocks all lie in `data` and whose CBC blocks are followed by one still plaintext:
/// every step but the first and the last one or two. Each encrypts the same number of
/// CBC blocks (`H::STEP_BLOCKS * H::BLOCK_LEN / 16`) through a hook whose every count is
/// a constant ([`StepHook`]), so that each hook slot is a fixed run of AES rounds or
/// nothing. Returns the next block and the CBC blocks then encrypted.
///
/// With every step through [`CbcHook`], LLVM laid each step out as the whole
/// compression and then the hook's loop, and the AES-128-CBC-SHA1 seal cost 1.60 TSC
/// cycles a byte at 16 KiB (`SHA1MSG2` schedule; Intel Xeon with AVX512-FP16 and AMX,
/// KVM guest reporting family 6 model 0xa7); through this loop 1.47-1.53, with the AES
/// blocks between the rounds. The round keys are copied to the stack first: read
/// through `rk` inside the loop, which stores to `data`, they were reloaded and spilled
/// again every step (AES-128-CBC-SHA256 seal 2-4% slower at 16 KiB).
///
/// # Safety
/// As [`inner_hash_and_encrypt`].
#[inline(always)]
unsafe fn whole_steps<H: StitchedHash, const R: usize>(
    regs: &mut H::Regs,
    data: &mut [u8],
    mut k: usize,
    whole: usize,
    mut encrypted: usize,
    cbc: &mut CbcChain<'_, R>,
) -> (usize, usize) {
    let per_block = H::BLOCK_LEN / 16;
    let step_blocks = StepHook::<H, R>::BLOCKS;
    // A copy that no store to `data` can alias (see above).
    let rk = &cbc.rk.clone();
    let mut local = CbcChain { rk, ..*cbc };
    // The step from block `k` hashes `data[b k - 13..][..b s]` (`b` the hash block's
    // bytes, `s` the step's blocks), which ends inside CBC block `b (k + s) / 16 - 1`, so
    // it encrypts the blocks from `b k / 16 - 1` up to that one, and reads that one,
    // still plaintext.
    while k + H::STEP_BLOCKS <= whole && per_block * (k + H::STEP_BLOCKS) <= data.len() / 16 {
        debug_assert_eq!(encrypted, per_block * k - 1);
        let hashed = &data[k * H::BLOCK_LEN - HEAD_LEN..][..H::STEP_BLOCKS * H::BLOCK_LEN];
        let (a, z) = (
            &hashed[..H::BLOCK_LEN],
            &hashed[hashed.len() - H::BLOCK_LEN..],
        );
        // SAFETY: the caller guarantees the features. The blocks are in registers from
        // here on, before any of them is encrypted below.
        let x = unsafe { H::load(a, z) };
        let (blocks16, _) = data.as_chunks_mut::<16>();
        let mut hook = StepHook::<H, R> {
            cbc: local,
            half_done: local.chain,
            blocks: &mut blocks16[encrypted..encrypted + step_blocks + 1],
            calls: 0,
            hash: PhantomData,
        };
        // SAFETY: as above.
        unsafe { H::compress(regs, x, H::STEP_BLOCKS, &mut hook) };
        local = hook.cbc;
        encrypted += step_blocks;
        k += H::STEP_BLOCKS;
    }
    (cbc.chain, cbc.next_in) = (local.chain, local.next_in);
    (k, encrypted)
}

/// Block `i` (of `b` bytes) of the padded inner message: `first`, a block of `data`, or
/// one of `tail`, which starts at block `whole`.
#[inline(always)]
fn hash_block<'a>(
    first: &'a [u8],
    tail: &'a [u8],
    data: &'a [u8],
    whole: usize,
    i: usize,
    b: usize,
) -> &'a [u8] {
    if i >= whole {
        &tail[(i - whole) * b..][..b]
    } else if i == 0 {
        first
    } else {
        &data[i * b - HEAD_LEN..][..b]
    }
}

/// The CBC encryption of one step's blocks, in halves (the first half of a block's AES
/// rounds, then the rest), spread evenly over its hook slots.
///
/// Halves, not whole blocks: a hook's AES ops wait on the chain at the head of the
/// reorder buffer while the rounds behind them pile up, and with whole AES-256 blocks
/// (56 cycles of latency) the SHA-512 rounds, which issue many scalar ops a cycle, filled
/// the core's queues and waited: the stitched seal cost the hash plus most of the CBC
/// chain. In halves the chain stays short enough to hide. Measured on Zen 4 (TSC
/// cycles/byte at 16 KiB, SHA-512 alone 3.2): stitched AES-256 5.4 in whole blocks, 4.25
/// in halves (4.0 with the Bresenham spreading below instead of two divisions a call);
/// SHA-1/SHA-256 with AES-128 stay at the AES chain's own 1.8.
///
/// What the stitch costs SHA-384 on an AMD EPYC Zen 3 (family 25 model 1, AVX2 engine),
/// AES-256-CBC-SHA384 seal at 16 KiB, fastest of 3000, TSC cycles: 70k as written; 58k
/// with every hook empty (the hash alone, in this kernel's form); 66.5k with two of the
/// 14 AES rounds of each block. So the chain is not what costs (with no chain between
/// the blocks, also 70k): the hooks' bookkeeping and AES operations among rounds bound
/// by the integer ALUs are. Two leaner forms were measured and not kept: a block pointer
/// and a flag for the half index and its bounds checks (72.7k), and the round keys
/// copied into the hook (69.4k, but AES-256-CBC-SHA1 6% slower); the register
/// allocation LLVM picks for the SHA-512 rounds around them decides more than their
/// own operations.
struct CbcHook<'a, 'k, const R: usize> {
    cbc: CbcChain<'k, R>,
    /// The block in flight, between its two halves.
    half_done: __m128i,
    /// The blocks of `data` not yet encrypted; this step encrypts the first `count`. The
    /// one after those is read (it is still plaintext) to fold it into the last round.
    blocks: &'a mut [[u8; 16]],
    count: usize,
    /// Hook slots in the step.
    slots: usize,
    /// The next half to run: block `next / 2`, first or second half.
    next: usize,
    /// Halves owed, in units of 1 / `slots`: each call adds the step's halves and runs
    /// one half per whole `slots` (Bresenham's spreading, without a division).
    credit: usize,
}

impl<const R: usize> Hook for CbcHook<'_, '_, R> {
    #[inline(always)]
    fn call(&mut self) {
        self.credit += 2 * self.count;
        while self.credit >= self.slots {
            self.credit -= self.slots;
            let h = self.next;
            self.next += 1;
            if h.is_multiple_of(2) {
                // SAFETY: hooks run only inside the stitched kernels, which have AES-NI.
                self.half_done = unsafe { self.cbc.first_half() };
            } else {
                let (block, after) = self.blocks[h / 2..].split_first_mut().unwrap();
                // SAFETY: as above.
                unsafe { self.cbc.second_half(self.half_done, block, after.first()) };
            }
        }
    }
}

/// The CBC encryption of a step of [`whole_steps`]: its [`Self::BLOCKS`] blocks spread
/// evenly over its hook calls, the same number of AES rounds at each call or as even as
/// the counts allow.
///
/// With as many blocks as calls (SHA-NI: four of each a block) each call encrypts the
/// next block whole, the same code at every call. With fewer (the AVX2 engines, two
/// blocks a step: 8 CBC blocks over 40 calls for SHA-1, 32 for SHA-256), each call runs
/// the halves of blocks (as [`CbcHook`]) that its number gives. The number starts at 0,
/// every count is a constant and the compression writes every call out
/// ([`Hook::NUMBERED`]), so once LLVM has inlined the step each call is a fixed run of
/// AES rounds or nothing: none of [`CbcHook`]'s counting, loop or branch is left among
/// the hash rounds. And each run ends in [`pin_chain`], without which LLVM gathered the
/// AES rounds of block B (whose rounds have no memory barrier between them) into one
/// run at the end of the step, where the chain no longer overlapped the hash.
///
/// Measured on an AMD EPYC Zen 3 (family 25 model 1), the AVX2 engines forced, seal at
/// 16 KiB, fastest of 3000 (`hash-floor --backend aesni --hash-engine avx2`, the two
/// builds run in turn), through [`CbcHook`] -> through this hook: AES-128-CBC-SHA1 18.76
/// -> 17.06 us (its SHA-1 alone about 15.8), AES-128-CBC-SHA256 39.53 -> 37.52,
/// AES-256-CBC-SHA256 40.09 -> 37.53; at 8 KiB 9.6 -> 8.7, 20.0 -> 19.0, 20.3 -> 19.1.
/// Without the pin, AES-128-CBC-SHA1 took 24.2 us. The SHA-NI seals are as fast as
/// through the whole-block hook this one replaced (within 0.6%).
struct StepHook<'a, 'k, H, const R: usize> {
    cbc: CbcChain<'k, R>,
    /// The block in flight, between its two halves.
    half_done: __m128i,
    /// The step's blocks, and the plaintext block after them.
    blocks: &'a mut [[u8; 16]],
    /// Calls so far.
    calls: usize,
    hash: PhantomData<H>,
}

impl<H: StitchedHash, const R: usize> StepHook<'_, '_, H, R> {
    /// CBC blocks a step encrypts.
    const BLOCKS: usize = H::STEP_BLOCKS * H::BLOCK_LEN / 16;
    /// Hook calls a step makes.
    const SLOTS: usize = H::STEP_BLOCKS * H::HOOKS;
    /// The latency of an AES round: 4 cycles on Zen 3 and on Intel cores from Skylake
    /// on (7 on Haswell and Broadwell).
    const AES_ROUND_CYCLES: usize = 4;
    /// Whether this hook is the better one for the engine and key size: with one whole
    /// block a call, always; with halves spread over the calls, where the hash rounds
    /// pace the CBC chain rather than the other way round. Where the chain paces them
    /// (AES-256 with SHA-1 on AVX2: 11 cycles of chain a call against 10 of rounds),
    /// [`CbcHook`] was faster: AES-256-CBC-SHA1 seal at 16 KiB 19.6 us against
    /// 19.9-20.3 through this hook, 20.3-20.6 with `sha1_avx2`'s rounds laid out as
    /// for themselves alone, 22.7 with whole blocks spread instead of halves (Zen 3).
    const SUITS: bool = Self::BLOCKS == Self::SLOTS || Self::CHAIN_CYCLES < H::SLOT_CYCLES;
}

impl<H: StitchedHash, const R: usize> Hook for StepHook<'_, '_, H, R> {
    const NUMBERED: bool = Self::BLOCKS != Self::SLOTS;
    const CHAIN_CYCLES: usize = Self::BLOCKS * (R - 1) * Self::AES_ROUND_CYCLES / Self::SLOTS;

    #[inline(always)]
    fn call(&mut self) {
        let call = self.calls;
        self.calls += 1;
        if Self::BLOCKS == Self::SLOTS {
            let (block, after) = self.blocks[call..].split_first_mut().unwrap();
            // SAFETY: hooks run only inside the stitched kernels, which have AES-NI.
            unsafe {
                let half_done = self.cbc.first_half();
                self.cbc.second_half(half_done, block, after.first());
            }
            return;
        }
        let (halves, slots) = (2 * Self::BLOCKS, Self::SLOTS);
        let (from, to) = (halves * call / slots, halves * (call + 1) / slots);
        for h in from..to {
            if h % 2 == 0 {
                // SAFETY: as above.
                self.half_done = unsafe { self.cbc.first_half() };
            } else {
                let (block, after) = self.blocks[h / 2..].split_first_mut().unwrap();
                // SAFETY: as above.
                unsafe { self.cbc.second_half(self.half_done, block, after.first()) };
            }
        }
        if from < to {
            pin_chain(&mut self.half_done, &mut self.cbc.next_in);
        }
    }
}

/// `x` and `y` (the CBC chain's values) unchanged, through an empty `asm!` that LLVM
/// must keep in place: it is not `pure`, so it stays in order with the loads of the
/// hash rounds' `W + K` on each side of it, and the AES rounds that compute `x` and `y`
/// stay ahead of the rounds after it. Under MemorySanitizer and Miri, `black_box`.
#[inline(always)]
fn pin_chain(x: &mut __m128i, y: &mut __m128i) {
    #[cfg(any(ct_msan, miri))]
    {
        (*x, *y) = core::hint::black_box((*x, *y));
    }
    // SAFETY: the template is empty: no instruction runs, no memory or flags change.
    #[cfg(not(any(ct_msan, miri)))]
    unsafe {
        core::arch::asm!(
            "/* {0} {1} */",
            inout(xmm_reg) * x,
            inout(xmm_reg) * y,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// The CBC encryption's state from one block to the next, which a stitched step's hook
/// carries and hands on.
#[derive(Clone, Copy)]
struct CbcChain<'a, const R: usize> {
    rk: &'a [__m128i; R],
    /// `rk[R - 1] ^ rk[0]`.
    last_first: __m128i,
    /// The chaining value: the last ciphertext block.
    chain: __m128i,
    /// What enters the next block's first `aesenc`: its plaintext, `chain` and `rk[0]`.
    next_in: __m128i,
}

impl<const R: usize> CbcChain<'_, R> {
    /// The first half of the next block's CBC step: its input (plaintext, chaining value
    /// and first round key, XORed) through rounds 1 to `(R - 1) / 2`.
    #[inline]
    #[target_feature(enable = "aes")]
    fn first_half(&self) -> __m128i {
        let mut s = self.next_in;
        for k in &self.rk[1..=(R - 1) / 2] {
            s = _mm_aesenc_si128(s, *k);
        }
        s
    }

    /// The rest of the CBC step from `s`, the first half's result: stores the ciphertext
    /// in `block` and makes it the chaining value, and `next`'s input (if there is a next
    /// block) the next input.
    ///
    /// The next block's plaintext and first round key go into this block's last round key:
    /// `aesenclast(s, rk[R - 1] ^ rk[0] ^ p)` is the next input, and XORing `rk[0] ^ p` back
    /// out of it, off the chain, gives the ciphertext. So the serial chain is the AES rounds
    /// alone, without an XOR per block: 14 AES-round latencies per AES-256 block rather than
    /// 14 and one XOR's (gcm-core's `cbc_encrypt` does the same). Measured on an AMD EPYC
    /// Zen 3 (family 25 model 1; AES latency 4), fastest of 30 runs, seal at 16 KiB:
    /// AES-128-CBC-SHA1 13.69 -> 13.28 us, AES-256-CBC-SHA256 18.78 -> 18.49 us,
    /// AES-256-CBC-SHA384 30.5 -> 29.0 us; at 1350 bytes 1.5-2.7% faster.
    #[inline]
    #[target_feature(enable = "aes")]
    fn second_half(&mut self, mut s: __m128i, block: &mut [u8; 16], next: Option<&[u8; 16]>) {
        let (rk, last_first) = (self.rk, self.last_first);
        for k in &rk[(R - 1) / 2 + 1..R - 1] {
            s = _mm_aesenc_si128(s, *k);
        }
        let (c, next_in) = match next {
            Some(next) => {
                // SAFETY: `next` is 16 readable bytes.
                let p = unsafe { _mm_loadu_si128(next.as_ptr().cast()) };
                let next_in = _mm_aesenclast_si128(s, _mm_xor_si128(last_first, p));
                (_mm_xor_si128(next_in, _mm_xor_si128(p, rk[0])), next_in)
            }
            None => {
                let c = _mm_aesenclast_si128(s, rk[R - 1]);
                (c, c)
            }
        };
        // SAFETY: `block` is 16 writable bytes.
        unsafe { _mm_storeu_si128(block.as_mut_ptr().cast(), c) };
        (self.chain, self.next_in) = (c, next_in);
    }
}

/// [`inner_hash_and_encrypt`] for one engine and both AES key sizes, built with the
/// engine's features and AES-NI.
macro_rules! stitched_entry {
    ($(#[$doc:meta])* $name:ident $(<$form:ident>)?, $hash:ty, $state:ty, $features:literal) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        pub(crate) fn $name$(<$form: sha512::RoundForm>)?(
            state: &mut $state,
            head: &[u8; HEAD_LEN],
            data: &mut [u8],
            keys: AesKeys<'_>,
            iv: &mut [u8; 16],
        ) -> usize {
            // SAFETY: this function has the engine's features and AES-NI.
            unsafe {
                match keys {
                    AesKeys::Aes128(rk) => {
                        inner_hash_and_encrypt::<$hash, 11>(state, head, data, rk, iv)
                    }
                    AesKeys::Aes256(rk) => {
                        inner_hash_and_encrypt::<$hash, 15>(state, head, data, rk, iv)
                    }
                }
            }
        }
    };
}

stitched_entry!(
    /// HMAC-SHA1's inner hash on SHA-NI with AES-CBC (see [`inner_hash_and_encrypt`]).
    sha1_ni, Sha1Ni<sha1_ni::ShaMsg>, [u32; 5], "sha,sse2,ssse3,sse4.1,aes"
);
stitched_entry!(
    /// HMAC-SHA1's inner hash on SHA-NI, the message schedule on AVX-512VL
    /// (`sha1_ni::VectorAlu`), with AES-CBC.
    sha1_ni_avx512, Sha1Ni<sha1_ni::VectorAlu>, [u32; 5], "sha,sse4.1,avx2,avx512f,avx512vl,aes"
);
stitched_entry!(
    /// HMAC-SHA256's inner hash on SHA-NI with AES-CBC.
    sha256_ni, Sha256Ni<sha256_ni::ShaMsg>, [u32; 8], "sha,sse2,ssse3,sse4.1,aes"
);
stitched_entry!(
    /// HMAC-SHA256's inner hash on SHA-NI, the message schedule's first step on
    /// AVX-512VL (`sha256_ni::VectorAlu`), with AES-CBC.
    sha256_ni_avx512, Sha256Ni<sha256_ni::VectorAlu>, [u32; 8], "sha,sse4.1,avx2,avx512f,avx512vl,aes"
);
stitched_entry!(
    /// HMAC-SHA1's inner hash on the AVX2 engine (CPUs without SHA-NI), with AES-CBC.
    sha1_avx2, Sha1TwoBlocks<sha1_avx2::Avx2>, [u32; 5], "avx2,bmi1,bmi2,aes"
);
stitched_entry!(
    /// HMAC-SHA1's inner hash on the AVX-512VL variant of the AVX2 engine (CPUs with
    /// AVX-512 but without SHA-NI), with AES-CBC.
    sha1_avx512, Sha1TwoBlocks<sha1_avx512::Avx512>, [u32; 5], "avx2,bmi1,bmi2,avx512f,avx512vl,aes"
);
stitched_entry!(
    /// HMAC-SHA256's inner hash on the AVX2 engine (CPUs without SHA-NI), with AES-CBC.
    sha256_avx2, Sha256TwoBlocks<sha256_avx2::Avx2>, [u32; 8], "avx2,bmi1,bmi2,aes"
);
stitched_entry!(
    /// HMAC-SHA256's inner hash on the AVX-512VL variant of the AVX2 engine (CPUs with
    /// AVX-512 but without SHA-NI), with AES-CBC.
    sha256_avx512, Sha256TwoBlocks<sha256_avx512::Avx512>, [u32; 8], "avx2,bmi1,bmi2,avx512f,avx512vl,aes"
);
stitched_entry!(
    /// HMAC-SHA384's inner hash on the AVX2 SHA-512 engine, rounds in form `F`, with
    /// AES-CBC.
    sha512_avx2<F>, Sha512With<Avx2, F>, [u64; 8], "avx2,bmi1,bmi2,aes"
);
stitched_entry!(
    /// HMAC-SHA384's inner hash on the AVX-512VL SHA-512 engine, rounds in form `F`,
    /// with AES-CBC.
    sha512_avx512<F>, Sha512With<Avx512, F>, [u64; 8], "avx2,bmi1,bmi2,avx512f,avx512vl,aes"
);

#[cfg(test)]
mod tests {
    use crate::{
        cbc::CbcCipher,
        digest::{HashAlg, Sha1, Sha256, Sha384},
        engine::{Backend, HashEngine, RoundTuning, Tunings},
        hmac_key::HmacKey,
        record,
    };
    use gcm_core::aes::{Aes128, Aes256};
    use std::{vec, vec::Vec};

    /// Every stitched engine against the plain seal on RustCrypto's hash, record for
    /// record, on every AES-NI back end: every length through several hash blocks past
    /// the first, and large ones (chaining value included).
    fn stitched_matches_plain<C: CbcCipher, H: HashAlg>(enc_key: &[u8]) {
        let mac_key: Vec<u8> = (0..H::OUTPUT_LEN as u8).map(|i| i ^ 0x5a).collect();
        let rustcrypto = (HashEngine::RustCrypto, RoundTuning::ShortChain);
        let plain = HmacKey::<H>::new(&mac_key, rustcrypto.0, Tunings::both(rustcrypto.1), false);
        let ad = [0, 0, 0, 0, 0, 0, 0, 3, 0x17, 3, 3];
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + (i >> 8)) as u8).collect();
        let lens: Vec<usize> = if cfg!(miri) {
            // Miri checks the memory accesses: an empty record, one that ends inside the
            // first hash block, and several blocks with a partial last one. (SHA-384
            // seals the first two without the stitch: see its `stitched_inner_hash`.)
            vec![0, 21, 300]
        } else {
            (0..=700)
                .chain([1350, 4095, 4096, 8192, 16383, 16384, 16385, 19_999])
                .collect()
        };
        let mut runs = 0;
        let engines = HashEngine::ALL
            .into_iter()
            .filter(|&e| H::is_available(e) && H::stitches(e))
            .flat_map(|e| RoundTuning::builds_of(e).iter().map(move |&t| (e, t)));
        for (engine, tuning) in engines {
            let stitched = HmacKey::<H>::new(&mac_key, engine, Tunings::both(tuning), true);
            for backend in Backend::available().filter(|&b| b != Backend::Portable) {
                let cipher = C::new_on(enc_key, backend).unwrap();
                for &len in &lens {
                    let mut records = vec![];
                    for mac in [&plain, &stitched] {
                        let mut iv = C::block_from(&[0x11u8; 16][..C::BLOCK_LEN]);
                        let mut buf = data[..len].to_vec();
                        record::seal(&cipher, mac, &mut iv, &ad, &mut buf).unwrap();
                        records.push((buf, iv.as_ref().to_vec()));
                    }
                    assert_eq!(
                        records[0], records[1],
                        "{engine} {tuning:?} {backend} {len}"
                    );
                }
                runs += 1;
            }
        }
        std::eprintln!("{runs} stitched engine/back-end pairs checked");
    }

    #[test]
    fn sha1_aes128() {
        stitched_matches_plain::<Aes128, Sha1>(&[0xc3; 16]);
    }
    #[test]
    fn sha1_aes256() {
        stitched_matches_plain::<Aes256, Sha1>(&[0xc3; 32]);
    }
    #[test]
    fn sha256_aes128() {
        stitched_matches_plain::<Aes128, Sha256>(&[0xc3; 16]);
    }
    #[test]
    fn sha256_aes256() {
        stitched_matches_plain::<Aes256, Sha256>(&[0xc3; 32]);
    }
    #[test]
    fn sha384_aes256() {
        stitched_matches_plain::<Aes256, Sha384>(&[0xc3; 32]);
    }
}

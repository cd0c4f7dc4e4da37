//! Triple DES (TDEA with three keys, encrypt-decrypt-encrypt) in constant time: no table
//! is indexed and no branch is taken by key or data, on every CPU.
//!
//! Table-driven DES (RustCrypto `des`, OpenSSL, BoringSSL) looks its S-boxes up with the
//! key-mixed data as index, which cache timing can reveal. Here the S-boxes are computed
//! with AND, XOR and shifts only:
//!
//! - **T-boxes.** Each of the 32 S-box output bits of a round is a Boolean function of
//!   six inputs (a "T-box"). The 32 are evaluated together, one bit lane of 32-bit words
//!   each: S-box `s`'s four in nibble `s` (S1's at bits 31..28, S8's at 3..0), in the
//!   order within the nibble that makes P cheapest ([`T_BOX_SLOT`]).
//! - **Algebraic normal form.** A function of six bits is the XOR of those products of
//!   its inputs (64 monomials) whose coefficient is 1. [`ANF`] holds, per monomial, the
//!   coefficients of the 32 T-boxes as one word, derived at compile time from the S-box
//!   tables ([`SBOX`]) by the Möbius transform. Summed as a tree, one input at a time
//!   (`y = a ^ (x & b)`: the monomials that contain `x` count only where `x` is 1), the
//!   64 monomials take 63 AND-XOR steps. The monomials without the last input sit in the
//!   low half of a `u64` and those with it in the high half, so the first five levels
//!   run on both halves at once (31 steps) and the last input then picks
//!   `low ^ (x & high)`.
//! - **Expansion E.** S-box `s` reads the four bits of nibble `s` of the right half
//!   (the nibble its T-boxes sit in) and the nearest bit of each neighbouring nibble. So
//!   each of the six input words is a bit of every nibble copied across its nibble (a
//!   mask, a shift and `x * 15`), the outer two the inner ones rotated by a nibble; the
//!   subkey bits are stored the same way, copied across nibbles
//!   ([`TdesEde3::round_keys`]).
//! - **P, IP, FP** move bits by fixed amounts: the bits that move by the same rotation
//!   form one mask, derived from the tables at compile time ([`Moves`]). IP and FP run
//!   once per 3DES block: between the three DES passes FP is followed by IP, which undo
//!   each other.
//!
//! Cost: about 150 integer instructions a round, 48 rounds a block, where table DES needs
//! a few dozen. CBC encryption is serial, one block after another: on AMD Zen 4 (family
//! 25 model 17) 12.6 MB/s, RustCrypto `des` (tables) 12.3 MB/s, OpenSSL's table code
//! (`openssl speed -evp des-ede3-cbc`) 31 MB/s. So on CPUs with AVX-512 VBMI, CBC
//! encryption runs the rounds on byte permutations of registers instead
//! (`x86_64::tdes_vbmi`, [`TdesEncryption`]): there about 27 MB/s. CBC decryption runs
//! groups of blocks whose rounds the compiler vectorises across the group, on the widest
//! kernel the CPU has ([`TdesKernel`]): there 2.5 times OpenSSL's table 3DES. The key
//! schedule only moves bits by public amounts.

/// The eight S-boxes of FIPS 46-3: `SBOX[s][row][column]`, row from the outer input bits
/// (first and sixth), column from the inner four.
const SBOX: [[[u8; 16]; 4]; 8] = [
    [
        [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7],
        [0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8],
        [4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0],
        [15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
    ],
    [
        [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10],
        [3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5],
        [0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15],
        [13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
    ],
    [
        [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8],
        [13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1],
        [13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7],
        [1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
    ],
    [
        [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15],
        [13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9],
        [10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4],
        [3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
    ],
    [
        [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9],
        [14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6],
        [4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14],
        [11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
    ],
    [
        [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11],
        [10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8],
        [9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6],
        [4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
    ],
    [
        [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1],
        [13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6],
        [1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2],
        [6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
    ],
    [
        [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7],
        [1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2],
        [7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8],
        [2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
    ],
];

/// Initial permutation: output bit `i` (FIPS numbering, 1 = most significant) is input
/// bit `IP[i - 1]`.
const IP: [u8; 64] = [
    58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, //
    62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8, //
    57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3, //
    61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
];

/// The permutation P after the S-boxes, numbered as [`IP`].
pub(crate) const P: [u8; 32] = [
    16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, //
    2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25,
];

/// Permuted choice 1: the 56 key bits (parity bits dropped) as the halves C and D.
const PC1: [u8; 56] = [
    57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, //
    10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36, //
    63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, //
    14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
];

/// Permuted choice 2: a round's 48 subkey bits from the 56 bits of C and D.
const PC2: [u8; 48] = [
    14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, //
    23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2, //
    41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, //
    44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
];

/// The S-boxes by their six input bits as E delivers them (the first the most
/// significant): `SBOX_INPUTS[s][e]`, row from the outer bits, column from the inner four.
pub(crate) const SBOX_INPUTS: [[u8; 64]; 8] = {
    let mut t = [[0u8; 64]; 8];
    let mut s = 0;
    while s < 8 {
        let mut e = 0;
        while e < 64 {
            t[s][e] = SBOX[s][((e >> 4) & 2) | (e & 1)][(e >> 1) & 15];
            e += 1;
        }
        s += 1;
    }
    t
};

/// How far C and D rotate left before each round.
const KEY_ROTATIONS: [u8; 16] = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];

/// Where in its S-box's nibble each T-box sits: output bit `j` of S-box `s` (0 = the
/// most significant, as FIPS numbers them) at bit `31 - (4s + T_BOX_SLOT[s][j])`. The
/// expansion E treats the four bits of a nibble alike, so any order works; this one,
/// found by a search over all 24 orders of each nibble, leaves P with 8 distinct rotation
/// amounts instead of the 19 of FIPS order, so P costs 8 groups of mask, rotate and OR
/// (checked by `p_takes_eight_rotations`).
const T_BOX_SLOT: [[u8; 4]; 8] = [
    [3, 2, 0, 1],
    [2, 1, 3, 0],
    [1, 2, 3, 0],
    [0, 1, 3, 2],
    [1, 3, 2, 0],
    [2, 3, 0, 1],
    [2, 1, 3, 0],
    [3, 1, 0, 2],
];

/// The S-box and output bit of the T-box at bit `n`.
const fn t_box_at(n: usize) -> (usize, usize) {
    let (sbox, slot) = ((31 - n) / 4, (31 - n) % 4);
    let mut out_bit = 0;
    while T_BOX_SLOT[sbox][out_bit] as usize != slot {
        out_bit += 1;
    }
    (sbox, out_bit)
}

/// The value of the T-box at bit `n` (see the module documentation) for S-box input
/// `e`, whose bits from the most significant are the S-box's inputs 1 to 6.
const fn t_box(n: usize, e: usize) -> u64 {
    let (sbox, out_bit) = t_box_at(n);
    ((SBOX_INPUTS[sbox][e] >> (3 - out_bit)) & 1) as u64
}

/// The algebraic normal form of the 32 T-boxes: word `m` has, at bit `n`, the
/// coefficient of monomial `m` of T-box `n` (in the low half), and at bit `32 + n` that
/// of monomial `m + 32`. Bit `i` of a monomial's index says whether it contains the
/// input [`TdesEde3::round`] evaluates at level `i`: S-box input `6 - i`, so index and S-box
/// input number the same way and monomial 32 and up contain input 1.
const ANF: [u64; 32] = {
    let mut words = [0u64; 32];
    let mut n = 0;
    while n < 32 {
        // The truth table, then the Möbius transform in place: step `i` adds into each
        // entry whose bit `i` is set the entry without it, and after all six, entry `m`
        // is the XOR of the table over the inputs `e` with `e & m == e`, which is the
        // coefficient of monomial `m`.
        let mut f = [0u64; 64];
        let mut e = 0;
        while e < 64 {
            f[e] = t_box(n, e);
            e += 1;
        }
        let mut i = 0;
        while i < 6 {
            let mut e = 0;
            while e < 64 {
                if e & (1 << i) != 0 {
                    f[e] ^= f[e ^ (1 << i)];
                }
                e += 1;
            }
            i += 1;
        }
        let mut m = 0;
        while m < 32 {
            words[m] |= (f[m] << n) | (f[m + 32] << (32 + n));
            m += 1;
        }
        n += 1;
    }
    words
};

/// A fixed bit permutation of `W`-bit words as the `N` groups of bits that rotate left
/// by the same amount: each group a mask of source bits and its rotation. Built at
/// compile time ([`rotation_masks`], [`Moves::compact`]) and unrolled where applied.
struct Moves<const W: u32, const N: usize> {
    groups: [(u64, u32); N],
}

/// Per rotation amount `d`, the mask of the source bits that a permutation of `W`-bit
/// words moves left by `d`: destination bit `b` takes source bit `sources[b]`.
const fn rotation_masks<const W: usize>(sources: &[u8; W]) -> [u64; W] {
    let mut masks = [0u64; W];
    let mut to = 0;
    while to < W {
        let from = sources[to] as usize;
        masks[(to + W - from) % W] |= 1u64 << from;
        to += 1;
    }
    masks
}

/// How many of `masks` are not empty.
const fn groups<const W: usize>(masks: &[u64; W]) -> usize {
    let (mut n, mut d) = (0, 0);
    while d < W {
        n += (masks[d] != 0) as usize;
        d += 1;
    }
    n
}

/// The source positions of a FIPS table's permutation of `W`-bit words: output bit `i`
/// (1 = most significant) is input bit `table[i - 1]`.
const fn fips_sources<const W: usize>(table: &[u8; W]) -> [u8; W] {
    let mut sources = [0u8; W];
    let mut i = 0;
    while i < W {
        sources[W - 1 - i] = (W - table[i] as usize) as u8;
        i += 1;
    }
    sources
}

/// The inverse of a permutation given by its source positions.
const fn inverse<const W: usize>(sources: &[u8; W]) -> [u8; W] {
    let mut inv = [0u8; W];
    let mut to = 0;
    while to < W {
        inv[sources[to] as usize] = to as u8;
        to += 1;
    }
    inv
}

impl<const W: u32, const N: usize> Moves<W, N> {
    /// The non-empty groups of `masks` (of which there must be `N`).
    const fn compact<const M: usize>(masks: &[u64; M]) -> Self {
        let mut groups = [(0u64, 0u32); N];
        let (mut n, mut d) = (0, 0);
        while d < M {
            if masks[d] != 0 {
                groups[n] = (masks[d], d as u32);
                n += 1;
            }
            d += 1;
        }
        assert!(n == N && M == W as usize);
        Moves { groups }
    }
}

impl<const N: usize> Moves<32, N> {
    #[inline(always)]
    fn apply(&self, x: u32) -> u32 {
        let mut out = 0;
        for &(mask, by) in &self.groups {
            out |= (x & mask as u32).rotate_left(by);
        }
        out
    }
}

impl<const N: usize> Moves<64, N> {
    #[inline(always)]
    fn apply(&self, x: u64) -> u64 {
        let mut out = 0;
        for &(mask, by) in &self.groups {
            out |= (x & mask).rotate_left(by);
        }
        out
    }
}

/// P after the S-boxes, from where the T-boxes put the S-box output bits: FIPS output
/// bit `i` takes S-box output bit `P[i - 1]`, that is output bit `(P[i - 1] - 1) % 4` of
/// S-box `(P[i - 1] - 1) / 4`.
const P_SOURCES: [u8; 32] = {
    let mut sources = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        let q = P[i] as usize - 1;
        sources[31 - i] = (31 - (4 * (q / 4) + T_BOX_SLOT[q / 4][q % 4] as usize)) as u8;
        i += 1;
    }
    sources
};
const P_MASKS: [u64; 32] = rotation_masks(&P_SOURCES);
const P_MOVES: Moves<32, { groups(&P_MASKS) }> = Moves::compact(&P_MASKS);
const IP_MASKS: [u64; 64] = rotation_masks(&fips_sources(&IP));
const IP_MOVES: Moves<64, { groups(&IP_MASKS) }> = Moves::compact(&IP_MASKS);
const FP_MASKS: [u64; 64] = rotation_masks(&inverse(&fips_sources(&IP)));
const FP_MOVES: Moves<64, { groups(&FP_MASKS) }> = Moves::compact(&FP_MASKS);

/// The initial permutation of a block (as a big-endian word).
#[cfg(target_arch = "x86_64")]
pub(crate) fn ip(block: u64) -> u64 {
    IP_MOVES.apply(block)
}

/// The final permutation, IP's inverse.
#[cfg(target_arch = "x86_64")]
pub(crate) fn fp(x: u64) -> u64 {
    FP_MOVES.apply(x)
}

/// One bit of every nibble (`0x1111...`), in both halves of a doubled word.
const NIBBLE_LSB: u64 = 0x1111_1111_1111_1111;

/// A 32-bit word in both halves of a `u64` (rotations of the `u64` by less than 32 then
/// rotate each half as a 32-bit word).
#[inline(always)]
fn doubled(x: u32) -> u64 {
    u64::from(x) | (u64::from(x) << 32)
}

/// How [`TdesEde3::cbc_decrypt_blocks`] runs: how many blocks at once, compiled for which
/// instructions. CBC decryption can decrypt every block independently; with a group of
/// blocks in flight, LLVM turns each round's integer operations on their `u64` words into
/// vector operations across the group. Chosen when the key is made ([`Self::best`]).
///
/// Measured on AMD Zen 4 (family 25 model 17), 3DES-EDE-CBC-SHA1 open of 16 KiB records
/// (`speed`), MB/s: one block at a time 10; baseline build, 2 or 3 blocks 16, 4 blocks
/// 29-31 (SSE2, two blocks a register), 8 blocks 33; AVX2, 8 blocks 58; AVX-512, 16
/// blocks 77-80; OpenSSL's table 3DES with HMAC, 32. At 16 bytes (five blocks) 9, 12 and
/// 15 on the three kernels, OpenSSL 10.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum TdesKernel {
    /// 4 blocks at a time, the baseline instructions (SSE2 on x86_64).
    Baseline = 0,
    /// 8 blocks at a time on 256-bit vectors (x86_64 with AVX2).
    Avx2,
    /// 16 blocks at a time on 512-bit vectors (x86_64 with AVX-512F and VL).
    Avx512,
}

impl TdesKernel {
    /// Every kernel, widest first.
    pub(crate) const ALL: [TdesKernel; 3] =
        [TdesKernel::Avx512, TdesKernel::Avx2, TdesKernel::Baseline];

    /// Whether this CPU can run the kernel (less what the constant-time harness hides).
    pub(crate) fn is_available(self) -> bool {
        match self {
            TdesKernel::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            TdesKernel::Avx2 => crate::x86_64::tdes::avx2_available(),
            #[cfg(target_arch = "x86_64")]
            TdesKernel::Avx512 => crate::x86_64::tdes::avx512_available(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The kernel for this CPU: the widest it has, except AVX-512 on the Intel cores that
    /// slow down under 512-bit vectors (gcm-core's list).
    pub(crate) fn best() -> TdesKernel {
        Self::ALL
            .into_iter()
            .find(|k| k.is_available() && (zmm_ok() || *k != TdesKernel::Avx512))
            .unwrap_or(TdesKernel::Baseline)
    }

    /// A short name: `3des-avx512`, `3des-avx2` or `3des-baseline`.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            TdesKernel::Baseline => "3des-baseline",
            TdesKernel::Avx2 => "3des-avx2",
            TdesKernel::Avx512 => "3des-avx512",
        }
    }
}

/// Whether this CPU may run 512-bit vectors at full speed: not one of the Intel cores that
/// slow down under them (gcm-core's list).
fn zmm_ok() -> bool {
    #[cfg(target_arch = "x86_64")]
    return !gcm_core::__avoids_zmm(gcm_core::__this_cpu());
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// How [`TdesEde3::cbc_encrypt_blocks`] runs. CBC encryption is serial, one block after
/// another, so what counts is the latency of a block's 48 rounds. Chosen when the key is
/// made ([`Self::best`]).
///
/// Measured on AMD Zen 4 (family 25 model 17), one block after another, core cycles a
/// round: portable 43, AVX-512 VBMI about 22 (OpenSSL's table 3DES, not constant time:
/// about 20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum TdesEncryption {
    /// The portable rounds ([`TdesEde3::encrypt_block`]).
    Portable = 0,
    /// The S-boxes as byte permutations in registers (`x86_64::tdes_vbmi`, AVX-512 VBMI
    /// and BITALG).
    Vbmi,
}

impl TdesEncryption {
    /// Every kernel, fastest first.
    #[cfg(test)]
    pub(crate) const ALL: [TdesEncryption; 2] = [TdesEncryption::Vbmi, TdesEncryption::Portable];

    /// Whether this CPU can run the kernel (less what the constant-time harness hides).
    pub(crate) fn is_available(self) -> bool {
        match self {
            TdesEncryption::Portable => true,
            #[cfg(target_arch = "x86_64")]
            TdesEncryption::Vbmi => crate::x86_64::tdes_vbmi::available(),
            #[cfg(not(target_arch = "x86_64"))]
            TdesEncryption::Vbmi => false,
        }
    }

    /// The kernel for this CPU: VBMI where it has it, except on the Intel cores that slow
    /// down under 512-bit vectors (as [`TdesKernel::best`]).
    pub(crate) fn best() -> TdesEncryption {
        if TdesEncryption::Vbmi.is_available() && zmm_ok() {
            TdesEncryption::Vbmi
        } else {
            TdesEncryption::Portable
        }
    }
}

/// Three-key Triple DES (EDE). Blocks are encrypted and decrypted in place; CBC
/// encryption [`Self::cbc_encrypt_blocks`], CBC decryption [`Self::cbc_decrypt_blocks`].
#[derive(Clone)]
pub struct TdesEde3 {
    /// The 48 round subkeys in encryption order (K1's 16 rounds, K2's in reverse, K3's),
    /// each as the six T-box input words it is XORed into (index as in [`ANF`]): at
    /// every nibble `s`, subkey bit `6s + (6 - i)` copied across the nibble, doubled.
    /// Decryption walks them backwards.
    round_keys: [[u64; 6]; 48],
    /// The same subkeys as the VBMI encryption kernel XORs them in (see
    /// `x86_64::tdes_vbmi::round_keys`); zero unless `encryption` is that kernel.
    #[cfg(target_arch = "x86_64")]
    vbmi_round_keys: [u64; 48],
    /// How CBC decryption runs; only a kernel this CPU has (checked when made).
    kernel: TdesKernel,
    /// How CBC encryption runs; likewise.
    encryption: TdesEncryption,
}

impl TdesEde3 {
    /// A cipher from the 24-byte key `K1 || K2 || K3` (parity bits ignored), on the best
    /// kernels this CPU has.
    pub fn new(key: &[u8; 24]) -> Self {
        Self::build(key, TdesKernel::best(), TdesEncryption::best())
    }

    /// A cipher that decrypts with `kernel` and encrypts with `encryption`, if this CPU
    /// has both (for the tests, which run every kernel).
    #[cfg(test)]
    pub(crate) fn with_kernels(
        key: &[u8; 24],
        kernel: TdesKernel,
        encryption: TdesEncryption,
    ) -> Option<Self> {
        (kernel.is_available() && encryption.is_available())
            .then(|| Self::build(key, kernel, encryption))
    }

    /// The key schedule; `kernel` and `encryption` are ones this CPU has.
    fn build(key: &[u8; 24], kernel: TdesKernel, encryption: TdesEncryption) -> Self {
        let mut subkeys = [0u64; 48];
        let (singles, _) = key.as_chunks::<8>();
        for (stage, single) in singles.iter().enumerate() {
            for (round, subkey) in des_subkeys(u64::from_be_bytes(*single)).iter().enumerate() {
                // The middle pass decrypts: its subkeys in reverse.
                let at = if stage == 1 { 15 - round } else { round };
                subkeys[16 * stage + at] = *subkey;
            }
        }
        let cipher = TdesEde3 {
            round_keys: subkeys.map(t_box_key_words),
            #[cfg(target_arch = "x86_64")]
            vbmi_round_keys: match encryption {
                TdesEncryption::Vbmi => crate::x86_64::tdes_vbmi::round_keys(&subkeys),
                TdesEncryption::Portable => [0; 48],
            },
            kernel,
            encryption,
        };
        #[cfg(feature = "zeroize")]
        zeroize::Zeroize::zeroize(&mut subkeys);
        cipher
    }

    /// The kernel CBC decryption runs on.
    #[cfg(test)]
    pub(crate) fn kernel(&self) -> TdesKernel {
        self.kernel
    }

    /// The kernel CBC encryption runs on.
    #[cfg(test)]
    pub(crate) fn encryption(&self) -> TdesEncryption {
        self.encryption
    }

    /// The kernels by name, for the constant-time harness's report and the `speed` tool:
    /// the decryption kernel's ([`TdesKernel::name`]), with `-vbmi` when encryption runs
    /// on VBMI.
    pub(crate) const fn engine_name(&self) -> &'static str {
        match (self.kernel, self.encryption) {
            (TdesKernel::Avx512, TdesEncryption::Vbmi) => "3des-avx512-vbmi",
            (TdesKernel::Avx2, TdesEncryption::Vbmi) => "3des-avx2-vbmi",
            (TdesKernel::Baseline, TdesEncryption::Vbmi) => "3des-baseline-vbmi",
            (kernel, TdesEncryption::Portable) => kernel.name(),
        }
    }

    /// CBC encryption of `blocks` in place, `iv` the chaining value before them; leaves
    /// the last ciphertext block in `iv`.
    pub fn cbc_encrypt_blocks(&self, iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
        match self.encryption {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `encryption` is `Vbmi` only if the CPU has AVX-512F, BW, VBMI and
            // BITALG (`build`'s callers).
            TdesEncryption::Vbmi => unsafe {
                crate::x86_64::tdes_vbmi::cbc_encrypt(&self.vbmi_round_keys, iv, blocks)
            },
            _ => {
                for block in blocks {
                    for (b, v) in block.iter_mut().zip(iv.iter()) {
                        *b ^= v;
                    }
                    self.encrypt_block(block);
                    *iv = *block;
                }
            }
        }
    }

    /// CBC decryption of `blocks` in place, `iv` the chaining value before them; leaves
    /// the last ciphertext block in `iv`.
    pub fn cbc_decrypt_blocks(&self, iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
        match self.kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `kernel` is `Avx2` only if the CPU has AVX2 (`build`'s callers).
            TdesKernel::Avx2 => unsafe { crate::x86_64::tdes::cbc_decrypt_avx2(self, iv, blocks) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `kernel` is `Avx512` only if the CPU has AVX-512F and VL.
            TdesKernel::Avx512 => unsafe {
                crate::x86_64::tdes::cbc_decrypt_avx512(self, iv, blocks)
            },
            _ => self.cbc_decrypt_in_groups::<4>(iv, blocks),
        }
    }

    /// CBC decryption with `N` blocks decrypted at once: the whole groups, then the rest
    /// (fewer than `N` blocks) as one group of 1, 4, 8 or `N` blocks, the smallest that
    /// holds it, padded with zero blocks. Which path runs depends on the length only.
    ///
    /// A small group costs little more than one block, whose 48 rounds depend on each
    /// other, so a padded group beats blocks one at a time. From the rates above at Zen
    /// 4's 3.7 GHz: a block alone about 2350 cycles, a group of 4 about 2900 (AVX2), of 8
    /// about 4000, of 16 about 6100 (AVX-512). Padding the rest of 16-byte records into
    /// one group instead of 4 and a single took them from 9 to 15 MB/s on AVX-512.
    #[inline(always)]
    pub(crate) fn cbc_decrypt_in_groups<const N: usize>(
        &self,
        iv: &mut [u8; 8],
        blocks: &mut [[u8; 8]],
    ) {
        let (groups, rest) = blocks.as_chunks_mut::<N>();
        for group in groups {
            self.cbc_decrypt_group(iv, group);
        }
        match rest.len() {
            0 => {}
            1 => self.cbc_decrypt_group(iv, core::array::from_mut(&mut rest[0])),
            2..=4 => self.cbc_decrypt_padded::<4>(iv, rest),
            5..=8 if N > 8 => self.cbc_decrypt_padded::<8>(iv, rest),
            _ => self.cbc_decrypt_padded::<N>(iv, rest),
        }
    }

    /// CBC decryption of up to `M` blocks as one group of `M`, padded with zero blocks.
    #[inline(always)]
    fn cbc_decrypt_padded<const M: usize>(&self, iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
        let n = blocks.len();
        let mut group = [[0u8; 8]; M];
        group[..n].copy_from_slice(blocks);
        let ciphertext = blocks[n - 1];
        self.cbc_decrypt_group(iv, &mut group);
        blocks.copy_from_slice(&group[..n]);
        *iv = ciphertext;
    }

    /// CBC decryption of one group of `N` blocks.
    #[inline(always)]
    fn cbc_decrypt_group<const N: usize>(&self, iv: &mut [u8; 8], group: &mut [[u8; 8]; N]) {
        let ciphertext = *group;
        self.crypt::<true, N>(group);
        for (block, chain) in group
            .iter_mut()
            .zip(core::iter::once(&*iv).chain(&ciphertext))
        {
            for (b, c) in block.iter_mut().zip(chain) {
                *b ^= c;
            }
        }
        *iv = ciphertext[N - 1];
    }

    /// Encrypts one block.
    #[inline]
    pub fn encrypt_block(&self, block: &mut [u8; 8]) {
        self.crypt::<false, 1>(core::array::from_mut(block));
    }

    /// Decrypts one block.
    #[cfg(test)]
    pub fn decrypt_block(&self, block: &mut [u8; 8]) {
        self.crypt::<true, 1>(core::array::from_mut(block));
    }

    /// `N` blocks at once, their rounds interleaved (and vectorised across the blocks
    /// where the compiler can).
    #[inline(always)]
    fn crypt<const DECRYPT: bool, const N: usize>(&self, blocks: &mut [[u8; 8]; N]) {
        let mut left = [0u32; N];
        let mut right = [0u32; N];
        for (b, block) in blocks.iter().enumerate() {
            let x = IP_MOVES.apply(u64::from_be_bytes(*block));
            (left[b], right[b]) = ((x >> 32) as u32, x as u32);
        }
        // Behind an opaque reference the coefficients are read by the AND and XOR
        // instructions themselves (a load each, on the load ports) instead of being
        // built with 32 `movabs` a round on the integer ALUs, which bound this loop:
        // 12.1 -> 12.6 MB/s (AMD Zen 4, family 25 model 17, 3DES encryption).
        let anf = core::hint::black_box(&ANF);
        for stage in 0..3 {
            for round in 0..16 {
                let i = 16 * stage + round;
                let keys = &self.round_keys[if DECRYPT { 47 - i } else { i }];
                for b in 0..N {
                    (left[b], right[b]) = (right[b], left[b] ^ Self::round(right[b], keys, anf));
                }
            }
            // Each DES pass ends by swapping its halves (and FP, which the next pass's
            // IP undoes).
            (left, right) = (right, left);
        }
        for (b, block) in blocks.iter_mut().enumerate() {
            *block = FP_MOVES
                .apply((u64::from(left[b]) << 32) | u64::from(right[b]))
                .to_be_bytes();
        }
    }

    /// The DES round function: `P(S(E(right) ^ subkey))`.
    #[inline(always)]
    fn round(right: u32, keys: &[u64; 6], anf: &[u64; 32]) -> u32 {
        // The inner inputs of every S-box (its nibble's bits, most significant first)
        // copied across the nibble, then the outer ones from the neighbouring nibbles.
        let r = doubled(right);
        let spread = |shift: u32| ((r >> shift) & NIBBLE_LSB) * 15;
        let (in2, in3, in4, in5) = (spread(3), spread(2), spread(1), spread(0));
        let in1 = in5.rotate_right(4);
        let in6 = in2.rotate_left(4);
        // Level `i` of the tree takes S-box input `6 - i` (see `ANF`).
        let x = [in6, in5, in4, in3, in2, in1];
        let x: [u64; 6] = core::array::from_fn(|i| x[i] ^ keys[i]);

        let mut y: [u64; 16] = core::array::from_fn(|k| anf[2 * k] ^ (x[0] & anf[2 * k + 1]));
        for (level, width) in [(1, 8), (2, 4), (3, 2), (4, 1)] {
            for k in 0..width {
                y[k] = y[2 * k] ^ (x[level] & y[2 * k + 1]);
            }
        }
        let s_out = (y[0] as u32) ^ (x[5] as u32 & (y[0] >> 32) as u32);
        P_MOVES.apply(s_out)
    }
}

/// The 16 round subkeys of single DES (48 bits each, FIPS bit 1 at bit 47).
fn des_subkeys(key: u64) -> [u64; 16] {
    // Bits are moved by public positions only; the key's bits are data, never an index.
    let bit = |word: u64, width: u32, n: u8| (word >> (width - u32::from(n))) & 1;
    let cd = PC1
        .iter()
        .fold(0u64, |acc, &n| (acc << 1) | bit(key, 64, n));
    let (mut c, mut d) = ((cd >> 28) as u32, (cd & 0x0fff_ffff) as u32);
    let rotate28 = |x: u32, by: u8| ((x << by) | (x >> (28 - by))) & 0x0fff_ffff;
    core::array::from_fn(|round| {
        c = rotate28(c, KEY_ROTATIONS[round]);
        d = rotate28(d, KEY_ROTATIONS[round]);
        let cd = (u64::from(c) << 28) | u64::from(d);
        PC2.iter().fold(0u64, |acc, &n| (acc << 1) | bit(cd, 56, n))
    })
}

/// A round subkey as the six T-box input words it is XORed into (see
/// [`TdesEde3::round_keys`]); every T-box of a nibble takes the same input bits, so their
/// order in it does not matter here.
fn t_box_key_words(subkey: u64) -> [u64; 6] {
    core::array::from_fn(|i| {
        let mut word = 0u32;
        for s in 0..8 {
            // Subkey bit `6s + input` (1-based) for S-box input `6 - i`.
            let key_bit = (subkey >> (48 - (6 * s + 6 - i))) & 1;
            word |= (key_bit as u32 * 0xf) << (28 - 4 * s);
        }
        doubled(word)
    })
}

#[cfg(feature = "zeroize")]
impl Drop for TdesEde3 {
    fn drop(&mut self) {
        // The whole struct, padding included (as `HmacKey`'s drop): the key is built on
        // the stack, and the six padding bytes after the two kernel fields kept stale
        // key-derived bytes (the zeroize test found them once the VBMI round keys came).
        // SAFETY: `TdesEde3` is plain data: word arrays and the `TdesKernel` and
        // `TdesEncryption` enums, `repr(u8)` with a variant of 0, so all-zero bytes are a
        // valid value; no field has a `Drop`.
        unsafe { zeroize::zeroize_flat_type(self) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipher::{BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};

    /// A reproducible stream of test words (xorshift64).
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// IP, FP and P move every bit where the tables say, P from where the T-boxes put
    /// the S-box output bits.
    #[test]
    fn moves_follow_the_tables() {
        for i in 1..=64u32 {
            let input = 1u64 << (64 - u32::from(IP[i as usize - 1]));
            assert_eq!(IP_MOVES.apply(input), 1 << (64 - i), "IP bit {i}");
            assert_eq!(FP_MOVES.apply(1 << (64 - i)), input, "FP bit {i}");
        }
        for i in 1..=32u32 {
            let q = usize::from(P[i as usize - 1]) - 1;
            let slot = usize::from(T_BOX_SLOT[q / 4][q % 4]);
            let input = 1u32 << (31 - (4 * (q / 4) + slot));
            assert_eq!(P_MOVES.apply(input), 1 << (32 - i), "P bit {i}");
        }
    }

    #[test]
    fn p_takes_eight_rotations() {
        assert_eq!(P_MOVES.groups.len(), 8);
        let fips_order = rotation_masks(&fips_sources(&P));
        assert_eq!(groups(&fips_order), 19);
    }

    /// FIPS 81 / the classic single-DES example ("Now is the time for all "), run as
    /// 3DES with three equal keys (which is single DES).
    #[test]
    fn single_des_known_answers() {
        let key = 0x0123_4567_89ab_cdefu64.to_be_bytes();
        let c = TdesEde3::new(&[key, key, key].concat().try_into().unwrap());
        for (pt, ct) in [
            (0x4e6f_7720_6973_2074u64, 0x3fa4_0e8a_984d_4815u64),
            (0x6865_2074_696d_6520, 0x6a27_1787_ab88_83f9),
            (0x666f_7220_616c_6c20, 0x893d_51ec_4b56_3b53),
        ] {
            let mut block = pt.to_be_bytes();
            c.encrypt_block(&mut block);
            assert_eq!(u64::from_be_bytes(block), ct);
            c.decrypt_block(&mut block);
            assert_eq!(u64::from_be_bytes(block), pt);
        }
    }

    /// Against RustCrypto `des` (table-driven) for many keys and blocks.
    #[test]
    fn agrees_with_rustcrypto_des() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let key: [u8; 24] = core::array::from_fn(|_| next() as u8);
            let ours = TdesEde3::new(&key);
            let theirs = des::TdesEde3::new_from_slice(&key).unwrap();
            for _ in 0..20 {
                let block = next().to_be_bytes();
                let (mut a, mut b) = (block, block);
                ours.encrypt_block(&mut a);
                theirs.encrypt_block((&mut b).into());
                assert_eq!(a, b, "encrypt, key {key:02x?}");
                ours.decrypt_block(&mut a);
                theirs.decrypt_block((&mut b).into());
                assert_eq!((a, b), (block, block), "decrypt, key {key:02x?}");
            }
        }
    }

    /// CBC decryption on every kernel this CPU has, for 0 to 40 blocks (whole groups and
    /// every size of rest), against RustCrypto `des` block by block.
    #[test]
    fn cbc_decryption_on_every_kernel() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut ran = 0;
        for kernel in TdesKernel::ALL {
            let key: [u8; 24] = core::array::from_fn(|_| next() as u8);
            let Some(ours) = TdesEde3::with_kernels(&key, kernel, TdesEncryption::Portable) else {
                continue;
            };
            assert_eq!(ours.kernel(), kernel);
            let theirs = des::TdesEde3::new_from_slice(&key).unwrap();
            for n in 0..=40 {
                let iv = next().to_be_bytes();
                let ciphertext: std::vec::Vec<[u8; 8]> =
                    (0..n).map(|_| next().to_be_bytes()).collect();
                let mut want = ciphertext.clone();
                let mut chain = iv;
                for block in &mut want {
                    let c = *block;
                    theirs.decrypt_block(block.into());
                    block.iter_mut().zip(&chain).for_each(|(b, v)| *b ^= v);
                    chain = c;
                }
                let (mut got, mut chain) = (ciphertext.clone(), iv);
                ours.cbc_decrypt_blocks(&mut chain, &mut got);
                assert_eq!(got, want, "{kernel:?}, {n} blocks");
                assert_eq!(chain, *ciphertext.last().unwrap_or(&iv), "{kernel:?} chain");
            }
            ran += 1;
        }
        assert!(ran >= 1);
        std::eprintln!("3DES CBC decryption checked on {ran} kernels");
    }

    /// CBC encryption on every kernel this CPU has, for 0 to 40 blocks, against RustCrypto
    /// `des` block by block; and the FIPS example as CBC with a zero IV, one block at a
    /// time (single DES: three equal keys).
    #[test]
    fn cbc_encryption_on_every_kernel() {
        let mut next = xorshift(0x8f0c_2a1e_55d3_b7c9);
        let mut ran = 0;
        for encryption in TdesEncryption::ALL {
            for _ in 0..8 {
                let key: [u8; 24] = core::array::from_fn(|_| next() as u8);
                let Some(ours) = TdesEde3::with_kernels(&key, TdesKernel::Baseline, encryption)
                else {
                    continue;
                };
                assert_eq!(ours.encryption(), encryption);
                let theirs = des::TdesEde3::new_from_slice(&key).unwrap();
                for n in 0..=40 {
                    let iv = next().to_be_bytes();
                    let plaintext: std::vec::Vec<[u8; 8]> =
                        (0..n).map(|_| next().to_be_bytes()).collect();
                    let mut want = plaintext.clone();
                    let mut chain = iv;
                    for block in &mut want {
                        block.iter_mut().zip(&chain).for_each(|(b, v)| *b ^= v);
                        theirs.encrypt_block(block.into());
                        chain = *block;
                    }
                    let (mut got, mut chain) = (plaintext.clone(), iv);
                    ours.cbc_encrypt_blocks(&mut chain, &mut got);
                    assert_eq!(got, want, "{encryption:?}, {n} blocks");
                    assert_eq!(chain, *want.last().unwrap_or(&iv), "{encryption:?} chain");
                }
            }
            let key = 0x0123_4567_89ab_cdefu64.to_be_bytes();
            let key: [u8; 24] = [key, key, key].concat().try_into().unwrap();
            let single = TdesEde3::with_kernels(&key, TdesKernel::Baseline, encryption);
            for (pt, ct) in [
                (0x4e6f_7720_6973_2074u64, 0x3fa4_0e8a_984d_4815u64),
                (0x6865_2074_696d_6520, 0x6a27_1787_ab88_83f9),
            ] {
                let Some(single) = &single else { break };
                let (mut block, mut iv) = ([pt.to_be_bytes()], [0; 8]);
                single.cbc_encrypt_blocks(&mut iv, &mut block);
                assert_eq!(u64::from_be_bytes(block[0]), ct, "{encryption:?}");
            }
            ran += usize::from(encryption.is_available());
        }
        assert!(ran >= 1);
        std::eprintln!("3DES CBC encryption checked on {ran} kernels");
    }

    /// The key picks kernels this CPU has, and only those can be asked for.
    #[test]
    fn kernels_follow_the_cpu() {
        let key = [3u8; 24];
        let cipher = TdesEde3::new(&key);
        assert!(cipher.kernel().is_available());
        assert!(cipher.encryption().is_available());
        for kernel in TdesKernel::ALL {
            for encryption in TdesEncryption::ALL {
                assert_eq!(
                    TdesEde3::with_kernels(&key, kernel, encryption).is_some(),
                    kernel.is_available() && encryption.is_available()
                );
            }
        }
        assert!(TdesKernel::Baseline.is_available());
        assert!(TdesEncryption::Portable.is_available());
        // VBMI comes with AVX-512, so a CPU that encrypts on it decrypts on that kernel.
        assert!(
            TdesEncryption::best() != TdesEncryption::Vbmi
                || TdesKernel::best() == TdesKernel::Avx512
        );
    }

    /// Every T-box's normal form gives back its S-box bit on all 64 inputs (the tree in
    /// `round` evaluates exactly this sum).
    #[test]
    fn normal_form_reproduces_the_sboxes() {
        for n in 0..32 {
            for e in 0..64usize {
                let value = (0..64usize)
                    .filter(|&m| m & e == m)
                    .map(|m| (ANF[m % 32] >> (n + 32 * (m / 32))) & 1)
                    .fold(0, |a, b| a ^ b);
                assert_eq!(value, t_box(n, e), "T-box {n}, input {e:#08b}");
            }
        }
    }
}

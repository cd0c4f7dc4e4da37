//! 3DES CBC encryption on AVX-512 VBMI and BITALG (AMD Zen 4 and later; Intel from Ice
//! Lake, where keys take it from Sapphire Rapids on, as gcm-core's avoid-zmm list
//! decides): a round's eight S-box lookups as byte permutations inside registers, and
//! the permutation P with the next round's expansion E as a bit gather.
//!
//! CBC encryption is one block after another, each block 48 dependent rounds, so what
//! counts is a round's latency. The portable rounds (`tdes.rs`) compute the S-boxes from
//! their algebraic normal form, about 110 integer operations a round: on AMD Zen 4
//! (family 25 model 17) 43 cycles a round. Here a round is a chain of four steps:
//!
//! 1. the eight six-bit S-box inputs, XORed with the subkey, as eight index bytes in
//!    every 64-bit lane: one `VPTERNLOGQ` of `left ^ subkey` (ready early) and the two
//!    halves of the previous round's result;
//! 2. `VPERMI2B` twice, each looking the index bytes up in 128 bytes of table: four
//!    S-boxes, two to a byte, the index's bit 6 (set by the subkey) picking the pair. The
//!    first keeps the bytes of S-boxes 0-3 and zeroes the others, the second the reverse;
//! 3. `VPSHUFBITQMB` on each: every bit of its 64-bit result is one bit of the S-box
//!    outputs, so that it computes `E(P(S(..)))`, the next round's S-box inputs, for the
//!    S-boxes its lookup kept, reading a zeroed byte for the others (and for bits 6 and
//!    7 of each byte): the two results XOR into the whole;
//! 4. each result, a mask register, back into a vector (`KMOVQ`, `VPBROADCASTQ`).
//!
//! Measured on that Zen 4 (dependent chains, core cycles): `VPERMI2B` 5, `VPSHUFBITQMB` 4,
//! `KMOVQ` + `VPBROADCASTQ` about 8, `VPTERNLOGQ` 1: 18 a round. The rounds run about 22
//! (3DES-CBC-SHA1 seal of 16 KiB records at 27 MB/s), twice as fast as the portable
//! ones; with one blend of the two lookups and one gather instead (a step more), 26.5.
//! The compiler applies a constant zeroing mask as an AND after the permutation, a cycle
//! more on the chain, so the masks reach the loop through `black_box`.
//!
//! Step 4 has no shorter path inside the vector unit: the mask is eight bits per 64-bit
//! lane, and the next round wants all 64 together in every lane, so some step must cross
//! lanes. Measured on the same Zen 4 (dependent chains in `asm!`, core cycles from an add
//! chain): `VPSHUFBITQMB` then `KMOVQ` and `VPBROADCASTQ` 12.2 cycles; `VPSHUFBITQMB` then
//! `VPMOVM2B` (the bits as bytes), `VGF2P8AFFINEQB` with those bytes as the matrix (each
//! lane's eight bits packed into a byte) and `VPERMB` (byte `8j` of every lane to byte
//! `j`) 13.0; with a zero-masked move of the bits' byte weights and `VPSADBW` to pack
//! them instead, 13.1. `VPERMB` alone takes 5 cycles on 512-bit vectors (2 on 128-bit
//! ones, 4 on 256-bit), `VGF2P8AFFINEQB` 3, `VPMOVM2B` about 1.
//!
//! The halves live in this "E layout" between rounds: byte `j` holds S-box `j`'s six
//! inputs (bit 5 the first, as FIPS numbers them, bit 0 the sixth), bits 6 and 7 zero; a
//! 32-bit half becomes 48 bits, each of its bits once or twice. XOR commutes with IP and
//! E, so the CBC chain stays in this layout from block to block: the next block starts
//! from `E(IP(plaintext)) ^ state`, and IP, E and FP of the data run beside the rounds
//! instead of in the chain.
//!
//! Constant time: the data and key steer no branch and no memory address. The S-box
//! "tables" are register operands of a byte permutation, read by index inside the
//! vector unit like `PSHUFB` in vector-permutation AES, not loaded from memory by
//! index; the loads here are of the whole tables and the round keys, at fixed
//! addresses. Under MemorySanitizer (`cfg(ct_msan)`), which checks `VPERMI2B`'s and
//! `VPSHUFBITQMB`'s operands strictly (a report, then a clean result), both run through
//! `gcm_core::ct::msan::opaque` (the result poisoned iff an operand is) and `VPTERNLOGQ`
//! through `bitwise3`, so that the harness follows the secrets through.

use core::arch::x86_64::*;

use crate::tdes::{self, SBOX_INPUTS};

cpufeatures::new!(
    vbmi_cpuid,
    "avx512f",
    "avx512bw",
    "avx512vbmi",
    "avx512bitalg"
);

/// Whether this CPU (and OS) can run the kernel (less what the constant-time harness
/// hides: AVX-512, or AVX and AVX2, which no CPU with AVX-512 lacks).
pub(crate) fn available() -> bool {
    use gcm_core::__CpuFeatures as F;
    vbmi_cpuid::get() && !crate::ct_check::hidden(F::AVX512F | F::AVX | F::AVX2)
}

/// The round keys as the kernel XORs them in: per round, byte `j` holds S-box `j`'s six
/// subkey bits (in the E layout's order), and bit 6 of bytes 2, 3, 6 and 7 selects the
/// second half of their lookup table ([`PAIR_TABLES`]).
pub(crate) fn round_keys(subkeys: &[u64; 48]) -> [u64; 48] {
    subkeys.map(|subkey| {
        (0..8).fold(0u64, |acc, j| {
            // Subkey bits 6j + 1 to 6j + 6 (FIPS numbering, bit 1 at bit 47).
            let six = (subkey >> (42 - 6 * j)) & 0x3f;
            let half = if j % 4 >= 2 { 0x40 } else { 0 };
            acc | ((six | half) << (8 * j))
        })
    })
}

/// A 128-byte lookup table for `VPERMI2B` as its two 64-byte operands: entry `v` of the
/// first half packs S-box `s`'s output for input `v` (low nibble) with S-box `s + 1`'s
/// (high nibble); the second half does the same for S-boxes `s + 2` and `s + 3`.
const fn pair_table(s: usize) -> [[u8; 64]; 2] {
    let mut t = [[0u8; 64]; 2];
    let mut v = 0;
    while v < 64 {
        t[0][v] = SBOX_INPUTS[s][v] | (SBOX_INPUTS[s + 1][v] << 4);
        t[1][v] = SBOX_INPUTS[s + 2][v] | (SBOX_INPUTS[s + 3][v] << 4);
        v += 1;
    }
    t
}

/// S-boxes 0-3 and 4-7, for the two lookups of a round.
static PAIR_TABLES: [[[u8; 64]; 2]; 2] = [pair_table(0), pair_table(4)];

/// The bytes each lookup keeps (the others it zeroes): S-boxes 0-3 (bytes 0-3 of every
/// 64-bit lane) from the first, 4-7 from the second.
const KEPT: [u64; 2] = [0x0f0f_0f0f_0f0f_0f0f, 0xf0f0_f0f0_f0f0_f0f0];

/// The E layout's six input bits of every byte.
#[cfg(test)]
const INPUT_BITS: u64 = 0x3f3f_3f3f_3f3f_3f3f;

/// Where a bit of the S-box outputs sits after the lookups: output bit `o` (1 = the most
/// significant, as FIPS numbers them) of S-box `s`, in byte `s`, in its low nibble for
/// even `s` and high nibble for odd.
const fn lookup_bit(s: usize, o: usize) -> u8 {
    (8 * s + if s % 2 == 1 { 4 } else { 0 } + (4 - o)) as u8
}

/// The bit gathers of step 3, one per lookup: result bit `8j + t` (`t` < 6) is S-box
/// input `6 - t` of S-box `j` in the next round, which E takes from bit `4j + 6 - t - 1`
/// of the new right half (FIPS numbering, 0 meaning 32), which P takes from S-box output
/// bit `P[..]`; each gather reads that bit where its lookup computed the S-box, and
/// elsewhere a byte its lookup zeroed, so that the two results XOR into the next round's
/// inputs with bits 6 and 7 of every byte clear.
static E_OF_P: [[u8; 64]; 2] = {
    let mut g = [[0u8; 64]; 2];
    let mut n = 0;
    while n < 64 {
        let (j, t) = (n / 8, n % 8);
        // Bit 0 of byte 4 (zeroed by the first lookup) and of byte 0 (by the second).
        g[0][n] = 32;
        g[1][n] = 0;
        if t < 6 {
            let r = (4 * j + 6 - t - 1 + 31) % 32 + 1;
            let q = tdes::P[r - 1] as usize - 1;
            g[q / 16][n] = lookup_bit(q / 4, q % 4 + 1);
        }
        n += 1;
    }
    g
};

/// A 32-bit half in the E layout: S-box `j` reads bits `4j` to `4j + 5` (FIPS numbering,
/// 0 meaning 32), a window of six that a rotation brings down (FIPS bit `4j` is bit
/// `32 - 4j` of the word, taken mod 32, and goes to bit 5).
fn to_e_layout(half: u32) -> u64 {
    (0..8).fold(0, |acc, j| {
        acc | (u64::from(half.rotate_left(4 * j + 5) & 0x3f) << (8 * j))
    })
}

/// The 32-bit half back from the E layout: bits 1 to 4 of byte `j` (S-box inputs 2 to 5)
/// are the half's bits `4j + 1` to `4j + 4`, its nibble `7 - j`.
fn from_e_layout(e: u64) -> u32 {
    (0..8).fold(0, |acc, j| {
        acc | ((((e >> (8 * j + 1)) & 0xf) as u32) << (28 - 4 * j))
    })
}

/// `IP(block)` as the two halves in the E layout.
fn ip_e(block: &[u8; 8]) -> (u64, u64) {
    let x = tdes::ip(u64::from_be_bytes(*block));
    (to_e_layout((x >> 32) as u32), to_e_layout(x as u32))
}

/// The block that the halves in the E layout give after FP.
fn fp_e(left: u64, right: u64) -> [u8; 8] {
    let x = (u64::from(from_e_layout(left)) << 32) | u64::from(from_e_layout(right));
    tdes::fp(x).to_be_bytes()
}

/// `VPERMI2B`: byte `i` of the result is byte `idx[i] & 63` of `lo` or of `hi` (bit 6),
/// or zero where `kept` has no bit `i`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn lookup(kept: u64, lo: __m512i, idx: __m512i, hi: __m512i) -> __m512i {
    #[cfg(ct_msan)]
    return gcm_core::ct::msan::opaque((lo, idx, hi), |(lo, idx, hi)| {
        _mm512_maskz_permutex2var_epi8(kept, lo, idx, hi)
    });
    #[cfg(not(ct_msan))]
    _mm512_maskz_permutex2var_epi8(kept, lo, idx, hi)
}

/// `VPSHUFBITQMB`: bit `n` of the result is bit `idx[n] & 63` of 64-bit lane `n / 8` of
/// `src`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bitalg")]
fn gather_bits(src: __m512i, idx: __m512i) -> u64 {
    #[cfg(ct_msan)]
    return gcm_core::ct::msan::opaque((src, idx), |(src, idx)| {
        _mm512_bitshuffle_epi64_mask(src, idx)
    });
    #[cfg(not(ct_msan))]
    _mm512_bitshuffle_epi64_mask(src, idx)
}

/// `a ^ b ^ c` in one `VPTERNLOG` (its 32- and 64-bit forms are the same operation
/// unmasked).
#[inline]
#[target_feature(enable = "avx512f")]
fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    #[cfg(ct_msan)]
    return gcm_core::ct::msan::bitwise3(a, b, c, |a, b, c| {
        _mm512_ternarylogic_epi32::<0x96>(a, b, c)
    });
    #[cfg(not(ct_msan))]
    _mm512_ternarylogic_epi32::<0x96>(a, b, c)
}

/// CBC encryption of `blocks` in place under the round keys of [`round_keys`], `iv` the
/// chaining value before them; leaves the last ciphertext block in `iv`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg")]
pub(crate) fn cbc_encrypt(keys: &[u64; 48], iv: &mut [u8; 8], blocks: &mut [[u8; 8]]) {
    let [[a_lo, a_hi], [b_lo, b_hi]] = PAIR_TABLES;
    let [e_of_p_a, e_of_p_b] = &E_OF_P;
    // SAFETY: each source is 64 bytes, read unaligned.
    let (a_lo, a_hi, b_lo, b_hi, e_of_p_a, e_of_p_b) = unsafe {
        (
            _mm512_loadu_si512(a_lo.as_ptr().cast()),
            _mm512_loadu_si512(a_hi.as_ptr().cast()),
            _mm512_loadu_si512(b_lo.as_ptr().cast()),
            _mm512_loadu_si512(b_hi.as_ptr().cast()),
            _mm512_loadu_si512(e_of_p_a.as_ptr().cast()),
            _mm512_loadu_si512(e_of_p_b.as_ptr().cast()),
        )
    };

    // Opaque to the compiler, so that the lookups zero with their masks (see above).
    let kept = core::hint::black_box(KEPT);

    // The chain: the previous ciphertext block after IP, in the E layout.
    let (mut left, mut right) = ip_e(iv);
    let mut next = blocks.first().map(ip_e).unwrap_or_default();
    for i in 0..blocks.len() {
        // IP(plaintext ^ chain) = IP(plaintext) ^ IP(chain).
        left ^= next.0;
        right ^= next.1;
        // The next block's IP and E, beside this block's rounds.
        if let Some(block) = blocks.get(i + 1) {
            next = ip_e(block);
        }

        let mut index = _mm512_set1_epi64((right ^ keys[0]) as i64);
        for pass in 0..3 {
            for round in 0..16 {
                let at = 16 * pass + round;
                let next_key = keys.get(at + 1).copied().unwrap_or(0);
                let fa = gather_bits(lookup(kept[0], a_lo, index, a_hi), e_of_p_a);
                let fb = gather_bits(lookup(kept[1], b_lo, index, b_hi), e_of_p_b);
                if round == 15 {
                    // A pass's last round leaves its halves unswapped (and FP then IP of
                    // the next pass cancel out): the next round reads `right` again.
                    left ^= fa ^ fb;
                    index = _mm512_set1_epi64((right ^ next_key) as i64);
                } else {
                    // The new right half is `left ^ fa ^ fb`; the next index is that with
                    // the next subkey, `left ^ next_key` ready before the rest.
                    let left_key = _mm512_set1_epi64((left ^ next_key) as i64);
                    let (va, vb) = (_mm512_set1_epi64(fa as i64), _mm512_set1_epi64(fb as i64));
                    index = xor3(left_key, va, vb);
                    (left, right) = (right, left ^ fa ^ fb);
                }
            }
        }
        blocks[i] = fp_e(left, right);
    }
    if let Some(last) = blocks.last() {
        *iv = *last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_layout_round_trips() {
        let mut x = 0x9e37_79b9u32;
        for _ in 0..1000 {
            let e = to_e_layout(x);
            assert_eq!(e & !INPUT_BITS, 0);
            assert_eq!(from_e_layout(e), x);
            x = x.wrapping_mul(0x0019_660d).wrapping_add(0x3c6e_f35f);
        }
        // Bits next to a nibble's edge appear twice: bit 32 (FIPS numbering) is S-box 0's
        // first input and S-box 7's fifth.
        assert_eq!(to_e_layout(1), (1 << 5) | (1 << 57));
    }

    /// The gathers read each S-box input from the S-box output bit P and E send there,
    /// and zero into bits 6 and 7 of every byte.
    #[test]
    fn gathers_are_e_after_p() {
        for q in 0..32 {
            // S-box output bit q + 1 (FIPS numbering) set alone, as the lookups leave it
            // (the one that computes its S-box; the other zeroes that byte).
            let (s, o) = (q / 4, q % 4 + 1);
            let mut lookups = [0u64; 2];
            lookups[s / 4] |= 1 << lookup_bit(s, o);
            let p_out = 1u32 << (31 - tdes::P.iter().position(|&p| p as usize == q + 1).unwrap());
            let want = to_e_layout(p_out);
            let got = (0..64).fold(0u64, |acc, n| {
                let bit = |g: usize| (lookups[g] >> E_OF_P[g][n]) & 1;
                acc | ((bit(0) ^ bit(1)) << n)
            });
            assert_eq!(got, want, "S-box output bit {}", q + 1);
        }
        // Whatever the lookups give, the result takes each S-box input bit from exactly
        // one lookup's kept bytes (the other gather reads a byte its lookup zeroed), and
        // bits 6 and 7 of every byte from zeroed bytes only.
        for (n, (&at_a, &at_b)) in E_OF_P[0].iter().zip(&E_OF_P[1]).enumerate() {
            let reads_kept = |kept: u64, at: u8| (kept >> (at / 8)) & 1 == 1;
            let kept_reads = [(KEPT[0], at_a), (KEPT[1], at_b)]
                .into_iter()
                .filter(|&(kept, at)| reads_kept(kept, at))
                .count();
            assert_eq!(kept_reads, usize::from(n % 8 < 6), "result bit {n}");
        }
    }
}

//! The AES key schedule and single-block AES with AES-NI.
//!
//! The schedule is FIPS-197's word recurrence, with `SubWord` done by `AESENCLAST`: with
//! the same word in all four columns, ShiftRows moves nothing, so `AESENCLAST(x, k)` of
//! a broadcast word is `SubWord` of it in every lane, XORed with `k` (which supplies
//! `rcon`). That is two fast instructions (a byte shuffle that broadcasts, and
//! possibly rotates, the word, then the AES round) where `AESKEYGENASSIST` is a
//! microcoded one on several Intel cores, and it runs under Miri, which does not
//! implement `AESKEYGENASSIST`. AES-128 and AES-256 compute four words at a time in a
//! vector (the prefix XOR of a round key's words is three shift-and-XOR steps); AES-192,
//! whose six-word period does not fit the vectors, runs the recurrence one word at a
//! time. No table is indexed by key bytes.

use super::RoundKeys;
use core::arch::x86_64::*;

/// Expands a 16-, 24- or 32-byte key (the caller checks the length).
#[target_feature(enable = "aes,ssse3")]
pub(crate) fn expand_key(key: &[u8]) -> RoundKeys {
    let mut rk = RoundKeys {
        rk: [_mm_setzero_si128(); 15],
        rounds: 0,
    };
    expand_key_into(key, &mut rk);
    rk
}

/// [`expand_key`] into `out`, where the schedule is to stay (see `HwKey::init`).
#[inline]
#[target_feature(enable = "aes,ssse3")]
pub(crate) fn expand_key_into(key: &[u8], out: &mut RoundKeys) {
    match key.len() {
        16 => expand128(key.try_into().expect("16 bytes"), out),
        32 => expand256(key.try_into().expect("32 bytes"), out),
        _ => *out = expand_words(key),
    }
}

/// `SubWord(RotWord(word 3 of k)) ^ rcon` in every lane.
#[inline]
#[target_feature(enable = "aes,ssse3")]
fn rot_sub_word3(k: __m128i, rcon: u8) -> __m128i {
    // Bytes 13, 14, 15, 12 (RotWord of the last word, little-endian) in every column.
    let rot3 = _mm_set_epi8(
        12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13,
    );
    _mm_aesenclast_si128(_mm_shuffle_epi8(k, rot3), _mm_set1_epi32(i32::from(rcon)))
}

/// `SubWord(word 3 of k)` in every lane.
#[inline]
#[target_feature(enable = "aes,sse2")]
fn sub_word3(k: __m128i) -> __m128i {
    _mm_aesenclast_si128(_mm_shuffle_epi32::<0xff>(k), _mm_setzero_si128())
}

/// `k` with each word replaced by the XOR of itself and the words below it, plus `t`:
/// the next four schedule words, given `t` = the substituted word in every lane.
#[inline]
#[target_feature(enable = "sse2")]
fn next4(k: __m128i, t: __m128i) -> __m128i {
    // Word i of `k ^ k<<32` is `w_i ^ w_(i-1)`; that plus itself shifted by 64 bits
    // gives the prefix XORs in two steps rather than three.
    let k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
    let k = _mm_xor_si128(k, _mm_slli_si128::<8>(k));
    _mm_xor_si128(k, t)
}

#[inline]
#[target_feature(enable = "aes,ssse3")]
fn expand128(key: &[u8; 16], out: &mut RoundKeys) {
    let rk = &mut out.rk;
    rk[0] = super::load16(key);
    macro_rules! round {
        ($i:literal, $rcon:literal) => {
            rk[$i] = next4(rk[$i - 1], rot_sub_word3(rk[$i - 1], $rcon));
        };
    }
    round!(1, 0x01);
    round!(2, 0x02);
    round!(3, 0x04);
    round!(4, 0x08);
    round!(5, 0x10);
    round!(6, 0x20);
    round!(7, 0x40);
    round!(8, 0x80);
    round!(9, 0x1b);
    round!(10, 0x36);
    rk[11..].fill(_mm_setzero_si128());
    out.rounds = 10;
}

#[inline]
#[target_feature(enable = "aes,ssse3")]
fn expand256(key: &[u8; 32], out: &mut RoundKeys) {
    let rk = &mut out.rk;
    rk[0] = super::load16(key[..16].try_into().expect("16 bytes"));
    rk[1] = super::load16(key[16..].try_into().expect("16 bytes"));
    macro_rules! even {
        ($i:literal, $rcon:literal) => {
            // Even round keys: SubWord(RotWord) of the last word, with rcon.
            rk[$i] = next4(rk[$i - 2], rot_sub_word3(rk[$i - 1], $rcon));
        };
    }
    macro_rules! odd {
        ($i:literal) => {
            // Odd round keys: SubWord alone, no rotation or rcon.
            rk[$i] = next4(rk[$i - 2], sub_word3(rk[$i - 1]));
        };
    }
    even!(2, 0x01);
    odd!(3);
    even!(4, 0x02);
    odd!(5);
    even!(6, 0x04);
    odd!(7);
    even!(8, 0x08);
    odd!(9);
    even!(10, 0x10);
    odd!(11);
    even!(12, 0x20);
    odd!(13);
    even!(14, 0x40);
    out.rounds = 14;
}

/// The word-at-a-time recurrence (used for AES-192).
#[target_feature(enable = "aes,sse2")]
fn expand_words(key: &[u8]) -> RoundKeys {
    debug_assert!(matches!(key.len(), 16 | 24 | 32));
    let nk = key.len() / 4;
    let rounds = nk + 6;
    let mut w = [0u32; 60];
    for (wi, chunk) in w.iter_mut().zip(key.chunks_exact(4)) {
        *wi = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    let mut rcon = 1u32;
    for i in nk..4 * (rounds + 1) {
        let mut t = w[i - 1];
        if i % nk == 0 {
            // RotWord on a little-endian word is a right rotation by one byte.
            t = sub_word(t.rotate_right(8)) ^ rcon;
            rcon = if rcon & 0x80 != 0 {
                (rcon << 1) ^ 0x11b
            } else {
                rcon << 1
            };
        } else if nk > 6 && i % nk == 4 {
            t = sub_word(t);
        }
        w[i] = w[i - nk] ^ t;
    }
    let mut rk = [_mm_setzero_si128(); 15];
    for (k, words) in rk.iter_mut().zip(w.chunks_exact(4)).take(rounds + 1) {
        *k = _mm_set_epi32(
            words[3] as i32,
            words[2] as i32,
            words[1] as i32,
            words[0] as i32,
        );
    }
    wipe_words(&mut w);
    RoundKeys { rk, rounds }
}

#[target_feature(enable = "aes,sse2")]
fn sub_word(t: u32) -> u32 {
    _mm_cvtsi128_si32(sub_word3(_mm_set1_epi32(t as i32))) as u32
}

/// The key schedule words are key material; clear them before the frame is reused.
fn wipe_words(w: &mut [u32; 60]) {
    for x in w.iter_mut() {
        // SAFETY: `x` is a valid exclusive reference.
        unsafe { core::ptr::write_volatile(x, 0) };
    }
}

/// The round keys for the equivalent inverse cipher (`AESDEC`): reversed, with
/// InvMixColumns applied to all but the first and last.
#[target_feature(enable = "aes,sse2")]
pub(crate) fn decrypt_keys(enc: &RoundKeys) -> RoundKeys {
    let nr = enc.rounds;
    let mut rk = [_mm_setzero_si128(); 15];
    rk[0] = enc.rk[nr];
    for i in 1..nr {
        rk[i] = _mm_aesimc_si128(enc.rk[nr - i]);
    }
    rk[nr] = enc.rk[0];
    RoundKeys { rk, rounds: nr }
}

/// Encrypts one block.
#[target_feature(enable = "aes,sse2")]
pub(crate) fn encrypt_block(k: &RoundKeys, block: __m128i) -> __m128i {
    let mut s = _mm_xor_si128(block, k.rk[0]);
    for r in 1..k.rounds {
        s = _mm_aesenc_si128(s, k.rk[r]);
    }
    _mm_aesenclast_si128(s, k.rk[k.rounds])
}

/// Encrypts one block with `NR` rounds known at compile time (the kernels' `E(J0)` and
/// tail blocks), so the round loop unrolls.
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn encrypt1<const NR: usize>(rk: &[__m128i; 15], b: __m128i) -> __m128i {
    let mut s = _mm_xor_si128(b, rk[0]);
    for k in &rk[1..NR] {
        s = _mm_aesenc_si128(s, *k);
    }
    _mm_aesenclast_si128(s, rk[NR])
}

/// Decrypts one block with the schedule from [`decrypt_keys`].
#[target_feature(enable = "aes,sse2")]
pub(crate) fn decrypt_block(dk: &RoundKeys, block: __m128i) -> __m128i {
    let mut s = _mm_xor_si128(block, dk.rk[0]);
    for r in 1..dk.rounds {
        s = _mm_aesdec_si128(s, dk.rk[r]);
    }
    _mm_aesdeclast_si128(s, dk.rk[dk.rounds])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector schedules agree with the word recurrence for AES-128 and AES-256.
    #[test]
    fn vector_schedules_match_the_word_recurrence() {
        if !crate::Backend::AesNi.is_available() {
            return;
        }
        for seed in 0..64u8 {
            for len in [16, 32] {
                let key: [u8; 32] = core::array::from_fn(|i| {
                    seed.wrapping_mul(37)
                        .wrapping_add((i as u8).wrapping_mul(11))
                });
                // SAFETY: AES-NI is available (checked above).
                let (fast, slow) = unsafe { (expand_key(&key[..len]), expand_words(&key[..len])) };
                assert_eq!(fast.rounds, slow.rounds);
                for i in 0..=fast.rounds {
                    let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
                    super::super::store16(&mut a, fast.rk[i]);
                    super::super::store16(&mut b, slow.rk[i]);
                    assert_eq!(a, b, "len {len} round key {i}");
                }
            }
        }
    }
}

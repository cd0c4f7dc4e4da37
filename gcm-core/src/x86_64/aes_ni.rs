//! The AES key schedule and single-block AES with AES-NI.
//!
//! The schedule is FIPS-197's word recurrence, with `SubWord` done by `AESKEYGENASSIST`
//! (its lowest output word is `SubWord` of input word 1, so a broadcast word comes back
//! substituted). One loop then serves all three key sizes, and no table is indexed by key
//! bytes.

use super::RoundKeys;
use core::arch::x86_64::*;

/// Expands a 16-, 24- or 32-byte key (the caller checks the length).
#[target_feature(enable = "aes,sse2")]
pub(crate) fn expand_key(key: &[u8]) -> RoundKeys {
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
    _mm_cvtsi128_si32(_mm_aeskeygenassist_si128::<0>(_mm_set1_epi32(t as i32))) as u32
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

/// Decrypts one block with the schedule from [`decrypt_keys`].
#[target_feature(enable = "aes,sse2")]
pub(crate) fn decrypt_block(dk: &RoundKeys, block: __m128i) -> __m128i {
    let mut s = _mm_xor_si128(block, dk.rk[0]);
    for r in 1..dk.rounds {
        s = _mm_aesdec_si128(s, dk.rk[r]);
    }
    _mm_aesdeclast_si128(s, dk.rk[dk.rounds])
}

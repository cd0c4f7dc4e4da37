//! Constant-time extraction of the record MAC on SSE2 vectors, all in registers.
//!
//! The portable version (`crate::copy_mac`) gathers the MAC into a byte ring in memory
//! and rotates it there; every rotation step reloads the ring at an offset from the stores
//! of the step before, and those loads cannot be forwarded from the store buffer, so each
//! step waits for its stores to reach the cache. This version keeps the ring in two or
//! four vector registers (32 bytes for MACs up to 32 bytes, 64 for SHA-384's 48):
//!
//! * the window that can hold the MAC is read sixteen bytes at a time, at public
//!   positions; each vector is masked down to the bytes inside the MAC (lane arithmetic on
//!   the public position minus the secret MAC start) and ORed into the register of its
//!   position modulo the ring length, so the ring holds the MAC rotated by the MAC start
//!   modulo the ring length, a power of two;
//! * the rotation is undone with one conditional rotation per bit of that amount: byte
//!   shifts across the registers for 1 to 8 bytes, a change of register for 16 and 32,
//!   each applied under a mask made from the bit.
//!
//! No branch and no address depends on the MAC's position; the loads, their number and
//! the shifts depend only on the record length.

use core::arch::x86_64::{
    __m128i, _mm_add_epi16, _mm_and_si128, _mm_andnot_si128, _mm_cmplt_epi16, _mm_loadu_si128,
    _mm_or_si128, _mm_packs_epi16, _mm_set_epi16, _mm_set1_epi8, _mm_set1_epi16, _mm_setzero_si128,
    _mm_slli_si128, _mm_srli_si128, _mm_storeu_si128,
};

use crate::{ct, padding::MAX_PADDING};

/// Writes into `out` the `out.len()` bytes of `record` that end at the secret `mac_end`.
///
/// The contract of `crate::copy_mac::copy_mac`: `out.len() <= 64`,
/// `out.len() <= mac_end <= record.len()` and `mac_end + MAX_PADDING >= record.len()`.
// SSE2 is part of every x86_64 CPU; `#[inline]` lets open's AVX2 build take it in.
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn copy_mac(out: &mut [u8], record: &[u8], mac_end: usize) {
    // The MAC length is a constant of each suite, so this choice folds away.
    if out.len() <= 32 {
        copy_mac_ring::<2>(out, record, mac_end)
    } else {
        copy_mac_ring::<4>(out, record, mac_end)
    }
}

/// [`copy_mac`] with a ring of `N` registers (`16 * N` bytes, at least the MAC length).
#[inline]
#[target_feature(enable = "sse2")]
fn copy_mac_ring<const N: usize>(out: &mut [u8], record: &[u8], mac_end: usize) {
    let ring_len = 16 * N;
    let mac_len = out.len();
    // Public: the MAC length of the suite. (`mac_end` is secret; the caller bounds it.)
    assert!(mac_len <= ring_len);
    let len = record.len();
    let window_start = len - len.min(mac_len + MAX_PADDING);
    // Reading starts at a multiple of the ring length (at most `ring_len - 1` bytes before
    // the window, bytes that the masks clear), so that register `i` always holds the
    // positions equal to `16 * i .. 16 * i + 16` modulo the ring length.
    let first = window_start / ring_len * ring_len;
    let mac_start = mac_end.wrapping_sub(mac_len);

    // Lane `j` of `rel_lo`/`rel_hi` is the position of byte `j` / `j + 8` of the next
    // vector minus the MAC start: inside the MAC when `0 <= rel < mac_len`. Every
    // position read lies within `mac_len + MAX_PADDING + ring_len` of the MAC start, so
    // the 16-bit lanes never wrap.
    let rel0 = first.wrapping_sub(mac_start) as i16;
    let mut rel_lo = _mm_add_epi16(_mm_set1_epi16(rel0), _mm_set_epi16(7, 6, 5, 4, 3, 2, 1, 0));
    let mut rel_hi = _mm_add_epi16(
        _mm_set1_epi16(rel0),
        _mm_set_epi16(15, 14, 13, 12, 11, 10, 9, 8),
    );
    let limit = _mm_set1_epi16(mac_len as i16);
    let zero = _mm_setzero_si128();

    let mut ring = [zero; N];
    let mut pos = first;
    while pos + ring_len <= len {
        for (i, r) in ring.iter_mut().enumerate() {
            let v = load16(&record[pos + 16 * i..]);
            *r = _mm_or_si128(
                *r,
                _mm_and_si128(v, inside(&mut rel_lo, &mut rel_hi, limit)),
            );
        }
        pos += ring_len;
    }
    // The last, partial group: the record length is public, and so is what is read here.
    for (i, r) in ring.iter_mut().enumerate() {
        let at = pos + 16 * i;
        let v = if at + 16 <= len {
            load16(&record[at..])
        } else if at < len {
            let mut tail = [0u8; 16];
            tail[..len - at].copy_from_slice(&record[at..]);
            load16(&tail)
        } else {
            zero
        };
        *r = _mm_or_si128(
            *r,
            _mm_and_si128(v, inside(&mut rel_lo, &mut rel_hi, limit)),
        );
    }

    // MAC byte k sits in ring byte (rotation + k) modulo the ring length: rotate left by
    // `rotation`, one power of two at a time.
    let rotation = mac_start.wrapping_sub(first) & (ring_len - 1);
    rotate_bytes::<N, 1, 15>(&mut ring, select_mask(rotation, 0));
    rotate_bytes::<N, 2, 14>(&mut ring, select_mask(rotation, 1));
    rotate_bytes::<N, 4, 12>(&mut ring, select_mask(rotation, 2));
    rotate_bytes::<N, 8, 8>(&mut ring, select_mask(rotation, 3));
    let mut registers = 1;
    while registers < N {
        let take = select_mask(rotation, 4 + registers.trailing_zeros());
        let rotated: [__m128i; N] = core::array::from_fn(|i| ring[(i + registers) % N]);
        select(&mut ring, rotated, take);
        registers *= 2;
    }

    // Straight from the registers into `out`. Staged through one 64-byte buffer, the MAC
    // left by a `memcpy` call wherever this function serves several suites (the length
    // then not a constant), whose wide loads can straddle two of the 16-byte stores and
    // so cannot be forwarded. Only a partial last piece (SHA-1's last 4 bytes) goes
    // through a buffer of its own, read within its one store.
    for (r, piece) in ring.iter().zip(out.chunks_mut(16)) {
        if let Ok(piece) = <&mut [u8; 16]>::try_from(&mut *piece) {
            store16(piece, *r);
        } else {
            let mut whole = [0u8; 16];
            store16(&mut whole, *r);
            piece.copy_from_slice(&whole[..piece.len()]);
        }
    }
}

/// The byte mask of the next vector, from its lanes' positions relative to the MAC start
/// (`0 <= rel < limit` inside the MAC), and those positions advanced to the vector after.
#[inline]
#[target_feature(enable = "sse2")]
fn inside(rel_lo: &mut __m128i, rel_hi: &mut __m128i, limit: __m128i) -> __m128i {
    let zero = _mm_setzero_si128();
    let lo = _mm_andnot_si128(
        _mm_cmplt_epi16(*rel_lo, zero),
        _mm_cmplt_epi16(*rel_lo, limit),
    );
    let hi = _mm_andnot_si128(
        _mm_cmplt_epi16(*rel_hi, zero),
        _mm_cmplt_epi16(*rel_hi, limit),
    );
    *rel_lo = _mm_add_epi16(*rel_lo, _mm_set1_epi16(16));
    *rel_hi = _mm_add_epi16(*rel_hi, _mm_set1_epi16(16));
    // Each 16-bit lane is 0 or -1, which the signed pack keeps.
    _mm_packs_epi16(lo, hi)
}

/// The 16 bytes at the start of `bytes` (which must hold at least 16).
#[inline]
#[target_feature(enable = "sse2")]
fn load16(bytes: &[u8]) -> __m128i {
    let bytes: &[u8; 16] = bytes[..16].try_into().expect("16 bytes");
    // SAFETY: `bytes` is 16 readable bytes; unaligned load.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// Stores `v` into `dst`.
#[inline]
#[target_feature(enable = "sse2")]
fn store16(dst: &mut [u8; 16], v: __m128i) {
    // SAFETY: `dst` is 16 writable bytes; unaligned store.
    unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), v) };
}

/// All ones in every byte when bit `bit` of `rotation` is set, else zero; through the
/// barrier so that the selects stay arithmetic.
#[inline]
#[target_feature(enable = "sse2")]
fn select_mask(rotation: usize, bit: u32) -> __m128i {
    let take = ct::barrier(((rotation >> bit) & 1).wrapping_neg());
    _mm_set1_epi8(take as i8)
}

/// `ring = take ? rotated : ring`, lane by lane.
#[inline]
#[target_feature(enable = "sse2")]
fn select<const N: usize>(ring: &mut [__m128i; N], rotated: [__m128i; N], take: __m128i) {
    for (r, t) in ring.iter_mut().zip(rotated) {
        *r = _mm_or_si128(_mm_and_si128(take, t), _mm_andnot_si128(take, *r));
    }
}

/// Rotates the `16 * N`-byte ring left by `S` bytes (`S < 16`, `R = 16 - S`) where `take`
/// is all ones: byte `j` becomes byte `j + S`, taken across register boundaries.
#[inline]
#[target_feature(enable = "sse2")]
fn rotate_bytes<const N: usize, const S: i32, const R: i32>(
    ring: &mut [__m128i; N],
    take: __m128i,
) {
    let rotated: [__m128i; N] = core::array::from_fn(|i| {
        _mm_or_si128(
            _mm_srli_si128::<S>(ring[i]),
            _mm_slli_si128::<R>(ring[(i + 1) % N]),
        )
    });
    select(ring, rotated, take);
}

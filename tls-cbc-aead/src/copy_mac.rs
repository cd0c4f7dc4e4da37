//! Constant-time extraction of the record MAC from its secret position.
//!
//! Once the padding is stripped, the MAC ends at a secret offset that can only lie in the
//! last `mac_len + 256` bytes of the record. Every byte of that public window is read; the
//! ones inside the MAC are gathered, under masks, into a ring buffer of `mac_len` bytes
//! indexed by the public position. That leaves the MAC rotated by a secret amount, which
//! is undone with a barrel shifter: one conditional rotation by each power of two, chosen
//! by the bits of the amount, with `subtle` selects. That is O(n log n) selects and never
//! an address that depends on the secret.
//!
//! On x86_64, `crate::x86_64::copy_mac` does the same with the ring in vector registers
//! (the rotation through memory here stalls on store forwarding at every step); this
//! version serves the other architectures and is tested against it.

use crate::{ct, digest::MAX_OUTPUT_LEN, padding::MAX_PADDING};

/// Writes into `out` the `out.len()` bytes of `record` that end at the secret `mac_end`.
///
/// `mac_end` must satisfy `out.len() <= mac_end <= record.len()` and
/// `mac_end + MAX_PADDING >= record.len()`; the padding check guarantees both.
// Inlined into open, so that it is built with open's target features.
#[inline(always)]
pub(crate) fn copy_mac(out: &mut [u8], record: &[u8], mac_end: usize) {
    // SAFETY: SSE2, the only feature it is built with, is part of every x86_64 CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        crate::x86_64::copy_mac::copy_mac(out, record, mac_end)
    };
    #[cfg(not(target_arch = "x86_64"))]
    copy_mac_portable(out, record, mac_end);
}

/// [`copy_mac`] in plain Rust, with the ring in memory.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn copy_mac_portable(out: &mut [u8], record: &[u8], mac_end: usize) {
    let mac_len = out.len();
    debug_assert!(mac_len <= MAX_OUTPUT_LEN);
    let len = record.len();
    let window_start = len - len.min(mac_len + MAX_PADDING);
    let window = &record[window_start..];
    // Where the MAC starts inside the window: secret, at most MAX_PADDING. Window positions
    // are below 2^15, so the masks are sign bits of i16 differences: plain lane arithmetic
    // that vectorises (eight lanes per SSE2 register) and leaves no compare to branch on.
    let offset = mac_end.wrapping_sub(mac_len).wrapping_sub(window_start);
    let offset16 = offset as i16;
    let mac_len16 = mac_len as i16;

    // The window with everything outside the MAC cleared.
    let mut masked = [0u8; MAX_OUTPUT_LEN + MAX_PADDING];
    for (p, (&b, m)) in window.iter().zip(masked.iter_mut()).enumerate() {
        let rel = (p as i16).wrapping_sub(offset16);
        let inside = !(rel >> 15) & (rel.wrapping_sub(mac_len16) >> 15);
        *m = b & inside as u8;
    }
    // Fold it into a ring of mac_len bytes at public offsets: slot s gathers the positions
    // equal to s modulo mac_len, and only one of them is inside the MAC.
    let mut ring = [0u8; MAX_OUTPUT_LEN];
    for chunk in masked[..window.len()].chunks(mac_len) {
        for (r, &m) in ring.iter_mut().zip(chunk) {
            *r |= m;
        }
    }
    // The MAC starts in slot offset % mac_len. The quotient comes from a multiplication by a
    // rounded-up reciprocal instead of a division, whose latency may depend on its operands:
    // with offset < 2^10 and mac_len < 2^6 the 2^20 scale leaves the rounding error below
    // one quotient step.
    let reciprocal = (1u64 << 20).div_ceil(mac_len as u64);
    let quotient = ((offset as u64 * reciprocal) >> 20) as usize;
    let rotation = offset - mac_len * quotient;

    // ring[(rotation + k) % mac_len] holds MAC byte k: rotate left by `rotation`, one
    // conditional rotation per bit. The rotated copy is built at public offsets, and the
    // select mask is hidden behind a barrier so that it stays an AND (a known 0-or-all-ones
    // mask over an array becomes a select of the source pointer).
    let mut bit = 0;
    let mut rotated = [0u8; MAX_OUTPUT_LEN];
    while (1usize << bit) < mac_len {
        let shift = 1usize << bit;
        rotated[..mac_len - shift].copy_from_slice(&ring[shift..mac_len]);
        rotated[mac_len - shift..mac_len].copy_from_slice(&ring[..shift]);
        let take = ct::byte(ct::barrier(((rotation >> bit) & 1).wrapping_neg()));
        for (r, &t) in ring[..mac_len].iter_mut().zip(&rotated[..mac_len]) {
            *r ^= (*r ^ t) & take;
        }
        bit += 1;
    }
    out.copy_from_slice(&ring[..mac_len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{vec, vec::Vec};

    /// Both versions, at every position the MAC can have, for each MAC length; record
    /// lengths of every kind (multiples of 8 and of 16, as the ciphers make, and others).
    #[test]
    fn every_offset_matches_slicing() {
        for mac_len in [20usize, 32, 48] {
            for len in [
                mac_len,
                mac_len + 1,
                mac_len + 17,
                64,
                72,
                255,
                256 + mac_len,
                336,
                600,
            ] {
                if len < mac_len {
                    continue;
                }
                let record: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
                let lowest = mac_len.max(len.saturating_sub(MAX_PADDING));
                // Under Miri (which checks the vector version's loads and stores) every
                // 13th position and the last: still every ring register and rotation bit.
                let stride = if cfg!(miri) { 13 } else { 1 };
                for mac_end in (lowest..=len).step_by(stride).chain([len]) {
                    let want = &record[mac_end - mac_len..mac_end];
                    let mut out = vec![0u8; mac_len];
                    copy_mac(&mut out, &record, mac_end);
                    assert_eq!(out, want, "{len} {mac_end}");
                    let mut out = vec![0u8; mac_len];
                    copy_mac_portable(&mut out, &record, mac_end);
                    assert_eq!(out, want, "portable: {len} {mac_end}");
                }
            }
        }
    }
}

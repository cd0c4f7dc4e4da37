//! Constant-time extraction of the record MAC from its secret position.
//!
//! Once the padding is stripped, the MAC ends at a secret offset that can only lie in the
//! last `mac_len + 256` bytes of the record. Every byte of that public window is read; the
//! ones inside the MAC are gathered, under masks, into a ring buffer of `mac_len` bytes
//! indexed by the public position. That leaves the MAC rotated by a secret amount, which
//! is undone with a barrel shifter: one conditional rotation by each power of two, chosen
//! by the bits of the amount, with `subtle` selects. That is O(n log n) selects and never
//! an address that depends on the secret.

use subtle::ConditionallySelectable;

use crate::{ct, digest::MAX_OUTPUT_LEN, padding::MAX_PADDING};

/// Writes into `out` the `out.len()` bytes of `record` that end at the secret `mac_end`.
///
/// `mac_end` must satisfy `out.len() <= mac_end <= record.len()` and
/// `mac_end + MAX_PADDING >= record.len()`; the padding check guarantees both.
pub(crate) fn copy_mac(out: &mut [u8], record: &[u8], mac_end: usize) {
    let mac_len = out.len();
    debug_assert!(mac_len <= MAX_OUTPUT_LEN);
    let len = record.len();
    let mac_start = mac_end.wrapping_sub(mac_len);
    let window_start = len - len.min(mac_len + MAX_PADDING);

    let mut ring = [0u8; MAX_OUTPUT_LEN];
    let mut rotation = 0usize;
    let mut slot = 0usize;
    for (i, &b) in record.iter().enumerate().skip(window_start) {
        let starts = ct::eq(i, mac_start);
        // i in [mac_start, mac_end) exactly when i - mac_start, wrapping, is below mac_len.
        let inside = ct::lt(i.wrapping_sub(mac_start), mac_len);
        rotation |= starts & slot;
        ring[slot] |= b & ct::byte(inside);
        // The slot follows the public position, so this branch is public.
        slot += 1;
        if slot == mac_len {
            slot = 0;
        }
    }

    // ring[(rotation + k) % mac_len] holds MAC byte k: rotate left by `rotation`.
    let mut bit = 0;
    let mut spare = [0u8; MAX_OUTPUT_LEN];
    while (1usize << bit) < mac_len {
        let shift = 1usize << bit;
        let take = ct::choice(rotation >> bit);
        for (k, dst) in spare[..mac_len].iter_mut().enumerate() {
            // Public indices; a compare instead of `%` avoids a division per byte.
            let from = if k + shift < mac_len {
                k + shift
            } else {
                k + shift - mac_len
            };
            *dst = u8::conditional_select(&ring[k], &ring[from], take);
        }
        ring[..mac_len].copy_from_slice(&spare[..mac_len]);
        bit += 1;
    }
    out.copy_from_slice(&ring[..mac_len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{vec, vec::Vec};

    #[test]
    fn every_offset_matches_slicing() {
        for mac_len in [20usize, 32, 48] {
            for len in [mac_len, mac_len + 1, mac_len + 17, 255, 256 + mac_len, 600] {
                if len < mac_len {
                    continue;
                }
                let record: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
                let lowest = mac_len.max(len.saturating_sub(MAX_PADDING));
                for mac_end in lowest..=len {
                    let mut out = vec![0u8; mac_len];
                    copy_mac(&mut out, &record, mac_end);
                    assert_eq!(out, &record[mac_end - mac_len..mac_end], "{len} {mac_end}");
                }
            }
        }
    }
}

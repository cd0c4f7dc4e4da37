//! Constant-time check and removal of TLS CBC padding.
//!
//! TLS lets a sender add 1 to 256 bytes of padding (the length byte included), each byte
//! equal to the padding length minus one, so the padding length is secret and not bounded
//! by the block size. The check reads the same window (the last 256 bytes, or the whole
//! record if shorter) whatever the padding byte says, and reports through a mask.

use crate::ct;

/// The largest padding, length byte included.
pub(crate) const MAX_PADDING: usize = 256;

/// Checks the padding of a decrypted `record` that carries a `mac_len`-byte MAC.
///
/// Returns a mask (all ones when the padding is well formed and leaves room for the MAC)
/// and the length of the record without its padding, that is data plus MAC. On bad padding
/// nothing is removed, so where the MAC is then assumed to sit does not depend on the bad
/// padding byte.
///
/// The caller has already rejected, in public, records shorter than `mac_len + 1`.
// Inlined into open, so that it is built with open's target features.
#[inline(always)]
pub(crate) fn check(record: &[u8], mac_len: usize) -> (usize, usize) {
    let len = record.len();
    debug_assert!(len > mac_len);
    let pad = usize::from(record[len - 1]);
    // data + MAC + padding + length byte must fit.
    let mut good = ct::ge(len, mac_len + 1 + pad);

    let window = len.min(MAX_PADDING);
    // Byte-lane arithmetic (sixteen lanes per SSE2 register), with no compare the
    // optimiser could turn into a branch: for the byte `i` places from the end (i < 256),
    // `i - pad` saturates to zero exactly when the byte lies in the padding, and a nonzero
    // byte `x` has the top bit of `x | -x` set.
    let pad8 = pad as u8;
    let mut bad = 0u8;
    for (i, &b) in record[len - window..].iter().rev().enumerate() {
        let over = (i as u8).saturating_sub(pad8);
        let outside = ((over | over.wrapping_neg()) as i8 >> 7) as u8;
        bad |= !outside & (pad8 ^ b);
    }
    let bad_bits = usize::from(bad);
    good &= ct::is_zero(bad_bits & 0xff);

    let stripped = len - (good & (pad + 1));
    (good, stripped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The obvious, branching model of the same rule.
    fn naive(record: &[u8], mac_len: usize) -> Option<usize> {
        let len = record.len();
        let pad = usize::from(record[len - 1]);
        if pad + 1 + mac_len > len {
            return None;
        }
        if record[len - 1 - pad..]
            .iter()
            .any(|&b| usize::from(b) != pad)
        {
            return None;
        }
        Some(len - pad - 1)
    }

    #[test]
    fn exhaustive_pad_byte_and_length_against_model() {
        for mac_len in [20usize, 32, 48] {
            for len in (mac_len + 1)..=(mac_len + 300) {
                for pad in 0..=255u8 {
                    // A record whose last pad+1 bytes (as far as they exist) are all `pad`.
                    let mut rec: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                    let start = len.saturating_sub(usize::from(pad) + 1);
                    rec[start..].fill(pad);
                    let (good, stripped) = check(&rec, mac_len);
                    match naive(&rec, mac_len) {
                        Some(n) => {
                            assert_eq!(good, usize::MAX, "len {len} pad {pad}");
                            assert_eq!(stripped, n);
                        }
                        None => {
                            assert_eq!(good, 0, "len {len} pad {pad}");
                            assert_eq!(stripped, len);
                        }
                    }
                    // One wrong byte anywhere inside the padding must be caught.
                    if start < len - 1 && usize::from(pad) + 1 + mac_len <= len {
                        let at = start + (usize::from(pad) * 13 + len) % (len - 1 - start);
                        rec[at] ^= 0x01 << (len % 8);
                        let (good, stripped) = check(&rec, mac_len);
                        assert_eq!(naive(&rec, mac_len), None);
                        assert_eq!((good, stripped), (0, len), "flip at {at}");
                    }
                }
            }
        }
    }
}

//! Word-sized constant-time mask helpers.
//!
//! A mask is a `usize` that is either all ones (true) or all zeros (false). Every helper
//! passes its result through [`barrier`], so the optimiser cannot learn that a mask has only
//! two values and turn the arithmetic that uses it back into a branch or a select on a
//! pointer (both seen under valgrind when the barrier was missing).

use subtle::Choice;

/// Hides a value from the optimiser, so that later arithmetic on it stays arithmetic.
///
/// An empty asm statement that claims to rewrite the register costs nothing at run time,
/// whereas `black_box` sends the value through memory (a store and a reload per mask,
/// which made the MAC extraction several times slower).
///
/// Elsewhere (other architectures, Miri, which cannot run `asm!`, and MemorySanitizer,
/// which would report a secret going into the `asm!` and take what comes out as public)
/// `black_box`, which the sanitizer sees through.
#[inline(always)]
#[allow(unreachable_code)] // the fallback, after the `asm!` arm returns
pub(crate) fn barrier(#[allow(unused_mut)] mut x: usize) -> usize {
    #[cfg(all(
        not(miri),
        not(ct_msan),
        any(
            target_arch = "x86",
            target_arch = "x86_64",
            target_arch = "arm",
            target_arch = "aarch64",
            target_arch = "riscv32",
            target_arch = "riscv64"
        )
    ))]
    {
        // SAFETY: the template is empty: no instruction runs, no memory or flag is touched
        // and the stack is not used; the compiler only loses track of what the register
        // holds.
        unsafe {
            core::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        return x;
    }
    core::hint::black_box(x)
}

/// All ones when the top bit of `x` is set.
#[inline(always)]
fn top_bit_mask(x: usize) -> usize {
    barrier((x >> (usize::BITS - 1)).wrapping_neg())
}

/// All ones when `a < b` (unsigned). This is the borrow out of `a - b`: the top bit
/// borrows when `b` has it and `a` does not, or when they agree and the difference has it.
#[inline(always)]
pub(crate) fn lt(a: usize, b: usize) -> usize {
    let diff = a.wrapping_sub(b);
    top_bit_mask((!a & b) | (!(a ^ b) & diff))
}

/// All ones when `a >= b`.
#[inline(always)]
pub(crate) fn ge(a: usize, b: usize) -> usize {
    !lt(a, b)
}

/// All ones when `x == 0`.
#[inline(always)]
pub(crate) fn is_zero(x: usize) -> usize {
    top_bit_mask(!x & x.wrapping_sub(1))
}

/// All ones when `a == b`.
#[inline(always)]
pub(crate) fn eq(a: usize, b: usize) -> usize {
    is_zero(a ^ b)
}

/// The low byte of a mask (0xff or 0x00).
#[inline(always)]
pub(crate) fn byte(mask: usize) -> u8 {
    mask as u8
}

/// A `subtle::Choice` from a mask, for the selects done through `subtle`.
#[inline(always)]
pub(crate) fn choice(mask: usize) -> Choice {
    Choice::from((mask & 1) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: [usize; 12] = [
        0,
        1,
        2,
        255,
        256,
        257,
        65535,
        1 << 31,
        usize::MAX / 2,
        usize::MAX / 2 + 1,
        usize::MAX - 1,
        usize::MAX,
    ];

    fn m(b: bool) -> usize {
        if b { usize::MAX } else { 0 }
    }

    #[test]
    fn comparisons_match_the_operators() {
        for &a in &SAMPLES {
            for &b in &SAMPLES {
                assert_eq!(lt(a, b), m(a < b), "{a} < {b}");
                assert_eq!(ge(a, b), m(a >= b), "{a} >= {b}");
                assert_eq!(eq(a, b), m(a == b), "{a} == {b}");
            }
            assert_eq!(is_zero(a), m(a == 0));
        }
        for a in 0..300 {
            for b in 0..300 {
                assert_eq!(lt(a, b), m(a < b));
                assert_eq!(eq(a, b), m(a == b));
            }
        }
    }

    #[test]
    fn conversions() {
        assert_eq!(byte(usize::MAX), 0xff);
        assert_eq!(choice(usize::MAX).unwrap_u8(), 1);
        assert_eq!(choice(0).unwrap_u8(), 0);
    }
}

//! Annotations for checking constant time with valgrind memcheck (feature `ct-check`).
//!
//! Memcheck reports any branch taken on, and any address computed from, bytes it believes
//! are uninitialised. A test that marks the key (and the plaintext) "undefined" therefore
//! learns of every secret-dependent branch or memory index on the way from the key to the
//! output. The library itself calls [`declassify`] at the few points where a value derived
//! from secrets is meant to become public: today only the accept/reject bit of the tag
//! check in `GcmKey::open_inout`.
//!
//! The requests are valgrind's x86_64 "client request" sequence (four rotations of `rdi`
//! that add up to 128 bits, then `xchg rbx, rbx`), written as inline asm so that no C
//! header or build script is involved. On real hardware the sequence changes nothing and
//! the request returns its default; outside the feature, or off x86_64, every function
//! here is an empty inline function, so release builds carry no trace of it.
//!
//! This module is `#[doc(hidden)]`: it serves the workspace's constant-time checks (this
//! crate's `tests/ct_valgrind.rs` and `.ci/ct-gcm.sh`, and `tls-cbc-aead`, whose
//! `ct_check` module and `ct-check` feature are built on it), not users.

/// Marks `bytes` as secret: memcheck reports every branch or address derived from them.
#[inline]
pub fn poison(bytes: &[u8]) {
    imp::request(
        imp::MAKE_MEM_UNDEFINED,
        bytes.as_ptr() as usize,
        bytes.len(),
    );
}

/// Marks `bytes` as public again (for checking a result after the code under test ran).
#[inline]
pub fn unpoison(bytes: &[u8]) {
    imp::request(imp::MAKE_MEM_DEFINED, bytes.as_ptr() as usize, bytes.len());
}

/// Returns `value`, declared public. The value goes through a stack slot that the request
/// marks defined and that is then read back with a volatile load, so the compiler cannot
/// keep using a register copy that memcheck would still track as secret.
#[inline]
pub fn declassify<T: Copy>(value: T) -> T {
    let slot = value;
    imp::request(
        imp::MAKE_MEM_DEFINED,
        &slot as *const T as usize,
        core::mem::size_of::<T>(),
    );
    imp::reload(&slot)
}

/// True when the process runs under valgrind (and the feature is on).
#[inline]
pub fn running_on_valgrind() -> bool {
    imp::request(imp::RUNNING_ON_VALGRIND, 0, 0) != 0
}

#[cfg(all(feature = "ct-check", target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod imp {
    pub(super) const RUNNING_ON_VALGRIND: usize = 0x1001;
    // Memcheck's tool requests start at ('M' << 24) | ('C' << 16).
    pub(super) const MAKE_MEM_UNDEFINED: usize = 0x4D43_0001;
    pub(super) const MAKE_MEM_DEFINED: usize = 0x4D43_0002;

    /// Sends one client request and returns valgrind's answer (0 when not under valgrind).
    #[inline(always)]
    pub(super) fn request(req: usize, arg1: usize, arg2: usize) -> usize {
        let block: [usize; 6] = [req, arg1, arg2, 0, 0, 0];
        let mut result = 0usize;
        // SAFETY: the rotations of `rdi` by 3 + 13 + 61 + 51 = 128 bits leave it unchanged
        // and `xchg rbx, rbx` is a no-op, so on hardware the block only clobbers `rdi`
        // (declared). Under valgrind the sequence is recognised and the request reads the
        // six-word block at `rax` and writes its answer to `rdx`. The asm may read memory
        // (the block, and valgrind changes shadow state of the named range), so neither
        // `nomem` nor `readonly` is claimed; it does not touch the stack.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") block.as_ptr(),
                inout("rdx") result,
                inout("rdi") 0usize => _,
                options(nostack),
            );
        }
        result
    }

    /// Reads `*slot` again from memory, after a request changed what memcheck knows of it.
    #[inline(always)]
    pub(super) fn reload<T: Copy>(slot: &T) -> T {
        // SAFETY: `slot` is a valid, aligned reference to an initialised `T`.
        unsafe { core::ptr::read_volatile(slot) }
    }
}

#[cfg(not(all(feature = "ct-check", target_arch = "x86_64")))]
mod imp {
    pub(super) const RUNNING_ON_VALGRIND: usize = 0;
    pub(super) const MAKE_MEM_UNDEFINED: usize = 0;
    pub(super) const MAKE_MEM_DEFINED: usize = 0;

    #[inline(always)]
    pub(super) fn request(_req: usize, _arg1: usize, _arg2: usize) -> usize {
        0
    }

    #[inline(always)]
    pub(super) fn reload<T: Copy>(slot: &T) -> T {
        *slot
    }
}

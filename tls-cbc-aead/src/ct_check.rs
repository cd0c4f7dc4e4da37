//! Annotations for checking constant time under valgrind memcheck (feature `ct-check`).
//!
//! Memcheck reports a conditional jump or a memory address that depends on undefined
//! bytes. Marking secret data "undefined" therefore turns memcheck into a checker for
//! secret-dependent branches and indices; a value that may legitimately become public (the
//! accept bit, the plaintext length) is marked "defined" again at the point where it is
//! declassified. The client requests are valgrind's documented x86_64 magic sequence,
//! written here as inline asm so that no C header is needed; it does nothing when the
//! program is not running under valgrind. Without the feature, or on other targets, every
//! function is an empty inline function.

/// Tells memcheck that `bytes` hold secret data: any branch or address computed from them
/// is reported.
#[inline]
pub fn mark_secret(bytes: &[u8]) {
    imp::request(
        imp::MAKE_MEM_UNDEFINED,
        bytes.as_ptr() as usize,
        bytes.len(),
    );
}

/// Tells memcheck that `bytes` may be branched on from now on.
#[inline]
pub fn mark_public(bytes: &[u8]) {
    imp::request(imp::MAKE_MEM_DEFINED, bytes.as_ptr() as usize, bytes.len());
}

/// Declassifies one value. Taking `&mut` makes the compiler reload the value from memory
/// after the request, instead of reusing a register copy that memcheck still sees as
/// secret.
#[inline]
pub fn declassify<T: Copy>(value: &mut T) {
    imp::request(
        imp::MAKE_MEM_DEFINED,
        value as *mut T as usize,
        core::mem::size_of::<T>(),
    );
}

/// Whether the program runs under valgrind (always false without the feature).
#[inline]
pub fn running_on_valgrind() -> bool {
    imp::request(imp::RUNNING_ON_VALGRIND, 0, 0) != 0
}

#[cfg(all(feature = "ct-check", target_arch = "x86_64"))]
mod imp {
    pub(super) const RUNNING_ON_VALGRIND: usize = 0x1001;
    pub(super) const MAKE_MEM_UNDEFINED: usize = 0x4d43_0001;
    pub(super) const MAKE_MEM_DEFINED: usize = 0x4d43_0002;

    /// Issues one client request and returns valgrind's answer (0 outside valgrind).
    #[inline(never)]
    pub(super) fn request(code: usize, addr: usize, len: usize) -> usize {
        let args: [usize; 6] = [code, addr, len, 0, 0, 0];
        let mut result: usize = 0;
        // SAFETY: on real hardware the four rotations of rdi by a total of 128 bits and the
        // `xchg rbx, rbx` leave every register as it was, so the sequence is a no-op apart
        // from clobbering rdi, which is declared. Under valgrind it is the client-request
        // trap: valgrind reads the six words at rax (a live local array) and writes its
        // answer to rdx. It touches no Rust-visible memory and does not use the stack.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") args.as_ptr(),
                inout("rdi") 0usize => _,
                options(nostack),
            );
        }
        result
    }
}

#[cfg(not(all(feature = "ct-check", target_arch = "x86_64")))]
mod imp {
    pub(super) const RUNNING_ON_VALGRIND: usize = 0;
    pub(super) const MAKE_MEM_UNDEFINED: usize = 0;
    pub(super) const MAKE_MEM_DEFINED: usize = 0;

    #[inline(always)]
    pub(super) fn request(_code: usize, _addr: usize, _len: usize) -> usize {
        0
    }
}

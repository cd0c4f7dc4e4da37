//! Annotations for checking constant time: valgrind memcheck (feature `ct-check`) or
//! LLVM's MemorySanitizer (`--cfg ct_msan`, set by `.ci/ct-msan.sh` together with
//! `-Zsanitizer=memory`).
//!
//! Both checkers report any branch taken on, and any address computed from, bytes they
//! believe are uninitialised. A test that marks the key (and the plaintext) "undefined"
//! ("poisoned") therefore learns of every secret-dependent branch or memory index on the
//! way from the key to the output. The library itself calls [`declassify`] at the few
//! points where a value derived from secrets is meant to become public: the accept/reject
//! bit of the tag check in `GcmKey::open_inout`, and (in `tls-cbc-aead`) the accept bit
//! and plaintext length of a TLS CBC record. One API, whose implementation is chosen by
//! the checker the build is for:
//!
//! * under `cfg(ct_msan)`, the MemorySanitizer runtime's `__msan_poison`,
//!   `__msan_unpoison` and `__msan_test_shadow`; the build must also have
//!   `-Zsanitizer=memory`, which links that runtime;
//! * with the `ct-check` feature on x86_64, valgrind's "client request" sequence (four
//!   rotations of `rdi` that add up to 128 bits, then `xchg rbx, rbx`) in inline asm, so
//!   that no C header or build script is involved; on real hardware it changes nothing;
//! * otherwise every function here is an empty inline function, so release builds carry
//!   no trace of it.
//!
//! Under the sanitizer this module also offers `msan`, the shadow-propagating wrappers
//! for the few instructions MemorySanitizer does not model, and [`hide_cpu_features`],
//! which lets the harness run the code a CPU without some feature would run.
//!
//! This module is `#[doc(hidden)]`: it serves the workspace's constant-time checks
//! (`tests/ct_valgrind.rs` and `.ci/ct-gcm.sh`, the `ct` crate and `.ci/ct-msan.sh`, and
//! `tls-cbc-aead`, whose `ct_check` module is built on it), not users.

/// True in a build for MemorySanitizer (`--cfg ct_msan`): [`poison`] and
/// [`is_poisoned`] then talk to the sanitizer.
pub const MEMORY_SANITIZER: bool = cfg!(ct_msan);

/// Marks `bytes` as secret: the checker reports every branch or address derived from them.
#[inline]
pub fn poison(bytes: &[u8]) {
    imp::poison(bytes.as_ptr(), bytes.len());
}

/// Marks `bytes` as public again (for checking a result after the code under test ran).
#[inline]
pub fn unpoison(bytes: &[u8]) {
    imp::unpoison(bytes.as_ptr(), bytes.len());
}

/// Returns `value`, declared public. The value goes through a stack slot that is marked
/// defined and then read back with a volatile load, so the compiler cannot keep using a
/// register copy that the checker would still track as secret.
#[inline]
pub fn declassify<T: Copy>(value: T) -> T {
    let slot = value;
    imp::unpoison((&slot as *const T).cast(), core::mem::size_of::<T>());
    reload(&slot)
}

/// Whether any byte of `bytes` is poisoned. Only MemorySanitizer can answer; in other
/// builds this is always false.
#[inline]
pub fn is_poisoned(bytes: &[u8]) -> bool {
    imp::is_poisoned(bytes.as_ptr(), bytes.len())
}

/// True when the process runs under valgrind (and the `ct-check` feature is on).
#[inline]
pub fn running_on_valgrind() -> bool {
    imp::running_on_valgrind()
}

/// Hides the [`CpuFeatures`](crate::__CpuFeatures) bits in `bits` from detection, for
/// every key made from now on, so that the constant-time harness can run, one after the
/// other, the code that CPUs without them run (`Backend::detect`, the block cipher and
/// GHASH types' `KeyInit`, and `tls-cbc-aead`'s engine choices all see the reduced set).
/// Hiding can only take capabilities away, so it can never select code this CPU cannot
/// run. `0` shows everything again.
///
/// Only in a MemorySanitizer build (returns true); elsewhere it does nothing and returns
/// false, and detection is exactly CPUID.
#[inline]
pub fn hide_cpu_features(bits: u32) -> bool {
    imp::hide_cpu_features(bits)
}

/// The feature bits [`hide_cpu_features`] currently hides (always 0 outside the sanitizer).
#[inline]
pub fn hidden_cpu_features() -> u32 {
    imp::hidden_cpu_features()
}

/// Reads `*slot` again from memory, after a request changed what the checker knows of it
/// (with a volatile load, so that the compiler cannot reuse a register copy that the
/// checker still tracks as it was); a plain copy when there is no checker.
#[inline(always)]
fn reload<T>(slot: &T) -> T {
    if cfg!(any(
        ct_msan,
        all(feature = "ct-check", target_arch = "x86_64")
    )) {
        #[allow(unsafe_code)]
        // SAFETY: `slot` is a valid, aligned reference to an initialised `T`; the callers
        // either pass a `Copy` value or forget the original.
        unsafe {
            core::ptr::read_volatile(slot)
        }
    } else {
        #[allow(unsafe_code)]
        // SAFETY: as above.
        unsafe {
            core::ptr::read(slot)
        }
    }
}

/// Shadow-propagating stand-ins for instructions MemorySanitizer does not model.
///
/// The sanitizer follows secrets through the AES, carry-less multiply, shuffle and
/// arithmetic intrinsics, but treats some others strictly: `VPTERNLOG`,
/// `AESKEYGENASSIST` and `SHA1RNDS4` are reported as soon as an operand is poisoned, and
/// their result comes out clean, so everything computed from it would go unchecked. The
/// wrappers here run such an instruction on clean copies of its operands and give the
/// result the shadow it should have had. They look only at the shadow (through the
/// sanitizer's own propagation or `__msan_test_shadow`), never at the values, and exist
/// only in sanitizer builds: callers reach them through `#[cfg(ct_msan)]`.
#[cfg(ct_msan)]
pub mod msan {
    use core::mem::size_of;

    /// `value` with its shadow cleared.
    #[inline(always)]
    pub fn clean<T: Copy>(value: T) -> T {
        let slot = value;
        super::imp::unpoison((&slot as *const T).cast(), size_of::<T>());
        super::reload(&slot)
    }

    /// The result of a bitwise three-input operation (`VPTERNLOG`), each bit of which
    /// depends only on the same bit of `a`, `b` and `c`: `op` runs on clean copies, and
    /// the result is poisoned exactly where any operand is (the union of their shadows,
    /// which the sanitizer itself computes for `a ^ b ^ c`).
    #[inline(always)]
    pub fn bitwise3<T: Copy>(a: T, b: T, c: T, op: impl FnOnce(T, T, T) -> T) -> T {
        let mut taint = [a, b, c];
        let [first, rest @ ..] = &mut taint;
        for other in rest.iter() {
            xor_bytes(first, other);
        }
        let result = op(clean(a), clean(b), clean(c));
        super::imp::copy_shadow(&result, &taint[0]);
        super::reload(&result)
    }

    /// `f(input)` for code MemorySanitizer cannot follow (a third-party routine built on
    /// an unmodelled instruction): `f` runs on a clean copy of `input`, and its whole
    /// result is poisoned if any byte of `input` was. Coarser than [`bitwise3`], and
    /// right for a key schedule or a hash compression, where every output bit depends on
    /// every input bit.
    #[inline(always)]
    pub fn opaque<I: Copy, O>(input: I, f: impl FnOnce(I) -> O) -> O {
        let tainted = super::imp::is_poisoned((&input as *const I).cast(), size_of::<I>());
        let out = core::mem::ManuallyDrop::new(f(clean(input)));
        // A branch on the sanitizer's answer, which is itself clean, not on a value.
        if tainted {
            super::imp::poison((&*out as *const O).cast(), size_of::<O>());
        }
        // Moved out of memory, so that the new shadow goes with it.
        super::reload(&*out)
    }

    /// `acc ^= other` byte by byte: the sanitizer gives each result byte the union of the
    /// two shadows; the value itself is not used.
    #[inline(always)]
    fn xor_bytes<T>(acc: &mut T, other: &T) {
        #[allow(unsafe_code)]
        // SAFETY: both point to `size_of::<T>()` initialised (if poisoned) bytes, and the
        // callers use only `Copy` vector and integer types, for which any bytes are valid.
        let (acc, other) = unsafe {
            (
                core::slice::from_raw_parts_mut((acc as *mut T).cast::<u8>(), size_of::<T>()),
                core::slice::from_raw_parts((other as *const T).cast::<u8>(), size_of::<T>()),
            )
        };
        for (a, o) in acc.iter_mut().zip(other) {
            *a ^= *o;
        }
    }
}

/// MemorySanitizer: the runtime's interface functions (linked by `-Zsanitizer=memory`).
#[cfg(ct_msan)]
#[allow(unsafe_code)]
mod imp {
    use core::sync::atomic::{AtomicU32, Ordering};

    unsafe extern "C" {
        fn __msan_poison(addr: *const u8, size: usize);
        fn __msan_unpoison(addr: *const u8, size: usize);
        fn __msan_test_shadow(addr: *const u8, size: usize) -> isize;
        fn __msan_copy_shadow(dst: *const u8, src: *const u8, size: usize);
    }

    static HIDDEN: AtomicU32 = AtomicU32::new(0);

    #[inline(always)]
    pub(super) fn poison(addr: *const u8, len: usize) {
        // SAFETY: the runtime only changes the shadow of `len` bytes at `addr`, which the
        // callers own; the data itself is not touched.
        unsafe { __msan_poison(addr, len) }
    }

    #[inline(always)]
    pub(super) fn unpoison(addr: *const u8, len: usize) {
        // SAFETY: as for `poison`.
        unsafe { __msan_unpoison(addr, len) }
    }

    #[inline(always)]
    pub(super) fn is_poisoned(addr: *const u8, len: usize) -> bool {
        // SAFETY: reads only the shadow of `len` bytes at `addr`; returns the offset of
        // the first poisoned byte, or -1.
        unsafe { __msan_test_shadow(addr, len) >= 0 }
    }

    #[inline(always)]
    pub(super) fn copy_shadow<T>(dst: &T, src: &T) {
        // SAFETY: copies the shadow of `size_of::<T>()` bytes from `src` to `dst`; the
        // data is not touched (the caller reloads `dst` with a volatile read).
        unsafe {
            __msan_copy_shadow(
                (dst as *const T).cast(),
                (src as *const T).cast(),
                core::mem::size_of::<T>(),
            )
        }
    }

    pub(super) fn running_on_valgrind() -> bool {
        false
    }

    pub(super) fn hide_cpu_features(bits: u32) -> bool {
        HIDDEN.store(bits, Ordering::Relaxed);
        true
    }

    #[inline(always)]
    pub(super) fn hidden_cpu_features() -> u32 {
        HIDDEN.load(Ordering::Relaxed)
    }
}

/// valgrind memcheck: client requests.
#[cfg(all(not(ct_msan), feature = "ct-check", target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod imp {
    const RUNNING_ON_VALGRIND: usize = 0x1001;
    // Memcheck's tool requests start at ('M' << 24) | ('C' << 16).
    const MAKE_MEM_UNDEFINED: usize = 0x4D43_0001;
    const MAKE_MEM_DEFINED: usize = 0x4D43_0002;

    /// Sends one client request and returns valgrind's answer (0 when not under valgrind).
    #[inline(always)]
    fn request(req: usize, arg1: usize, arg2: usize) -> usize {
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

    #[inline(always)]
    pub(super) fn poison(addr: *const u8, len: usize) {
        request(MAKE_MEM_UNDEFINED, addr as usize, len);
    }

    #[inline(always)]
    pub(super) fn unpoison(addr: *const u8, len: usize) {
        request(MAKE_MEM_DEFINED, addr as usize, len);
    }

    #[inline(always)]
    pub(super) fn is_poisoned(_addr: *const u8, _len: usize) -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn running_on_valgrind() -> bool {
        request(RUNNING_ON_VALGRIND, 0, 0) != 0
    }

    #[inline(always)]
    pub(super) fn hide_cpu_features(_bits: u32) -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn hidden_cpu_features() -> u32 {
        0
    }
}

/// No checker: every annotation compiles to nothing.
#[cfg(not(any(ct_msan, all(feature = "ct-check", target_arch = "x86_64"))))]
mod imp {
    #[inline(always)]
    pub(super) fn poison(_addr: *const u8, _len: usize) {}

    #[inline(always)]
    pub(super) fn unpoison(_addr: *const u8, _len: usize) {}

    #[inline(always)]
    pub(super) fn is_poisoned(_addr: *const u8, _len: usize) -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn running_on_valgrind() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn hide_cpu_features(_bits: u32) -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn hidden_cpu_features() -> u32 {
        0
    }
}

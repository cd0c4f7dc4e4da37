//! Annotations for checking constant time under valgrind memcheck (feature `ct-check`).
//!
//! Memcheck reports a conditional jump or a memory address that depends on undefined
//! bytes. Marking secret data "undefined" therefore turns memcheck into a checker for
//! secret-dependent branches and indices; a value that may legitimately become public (the
//! accept bit, the plaintext length) is marked "defined" again at the point where it is
//! declassified. The client requests themselves (valgrind's x86_64 magic sequence in
//! inline asm, a no-op outside valgrind) live in one place, `gcm_core::ct`, which this
//! crate's `ct-check` feature switches on; without it, or on other targets, every function
//! here is empty.

/// Tells memcheck that `bytes` hold secret data: any branch or address computed from them
/// is reported.
#[inline]
pub fn mark_secret(bytes: &[u8]) {
    gcm_core::ct::poison(bytes);
}

/// Tells memcheck that `bytes` may be branched on from now on.
#[inline]
pub fn mark_public(bytes: &[u8]) {
    gcm_core::ct::unpoison(bytes);
}

/// Declassifies one value in place: it goes through `gcm_core::ct::declassify`, which
/// marks it defined and reloads it from memory, so no register copy that memcheck still
/// sees as secret is used afterwards.
#[inline]
pub fn declassify<T: Copy>(value: &mut T) {
    *value = gcm_core::ct::declassify(*value);
}

/// Whether the program runs under valgrind (always false without the feature).
#[inline]
pub fn running_on_valgrind() -> bool {
    gcm_core::ct::running_on_valgrind()
}

//! Which block ciphers run on `gcm_core`'s AES-GCM kernels.
//!
//! `AesGcm<C, ..>` takes any block cipher with 16-byte blocks, as `aes-gcm` does, and asks
//! nothing more of `C` than `aes-gcm` does: no `'static` bound and no marker trait, so that
//! code generic over `C` that compiles against `aes-gcm` compiles against this crate. Stable
//! Rust has no specialization, so the AES types are recognised by their `TypeId`, once,
//! when a key is made; [`typeid::of`] gives it for a type parameter without a `'static`
//! bound (lifetimes erased, and the AES types have none). The hot path never asks again: it
//! matches on what the key stored.

use core::{any::TypeId, mem::ManuallyDrop};
use gcm_core::GcmKey;

/// The `TypeId`s of the AES types whose key bytes go straight to [`GcmKey::new`]: every
/// `cipher` 0.5 AES type with an encryption direction.
fn aes_types() -> [TypeId; 9] {
    [
        TypeId::of::<aes::Aes128>(),
        TypeId::of::<aes::Aes192>(),
        TypeId::of::<aes::Aes256>(),
        TypeId::of::<aes::Aes128Enc>(),
        TypeId::of::<aes::Aes192Enc>(),
        TypeId::of::<aes::Aes256Enc>(),
        TypeId::of::<gcm_core::aes::Aes128>(),
        TypeId::of::<gcm_core::aes::Aes192>(),
        TypeId::of::<gcm_core::aes::Aes256>(),
    ]
}

/// Whether `C` is one of the `cipher` 0.5 AES types, whose keys run on the kernels.
pub(crate) fn is_aes<C: ?Sized>() -> bool {
    aes_types().contains(&typeid::of::<C>())
}

/// Whether `C` is one of the `aes` 0.8 (`cipher` 0.4) AES types with an encryption
/// direction.
#[cfg(feature = "aead05")]
pub(crate) fn is_aes08<C: ?Sized>() -> bool {
    [
        TypeId::of::<aes08::Aes128>(),
        TypeId::of::<aes08::Aes192>(),
        TypeId::of::<aes08::Aes256>(),
        TypeId::of::<aes08::Aes128Enc>(),
        TypeId::of::<aes08::Aes192Enc>(),
        TypeId::of::<aes08::Aes256Enc>(),
    ]
    .contains(&typeid::of::<C>())
}

/// A cipher value that `GcmKey` can take over as it is, without the raw key: this crate's
/// AES types (their schedule and back end move over) and the `aes` crate's `Aes128`,
/// `Aes192`, `Aes256` (kept whole on the portable back end, their round keys being
/// private). Anything else comes back unchanged.
pub(crate) fn into_gcm_key<C>(cipher: C) -> Result<GcmKey, C> {
    let cipher = match take::<C, gcm_core::aes::Aes128>(cipher) {
        Ok(c) => return Ok(c.into()),
        Err(c) => c,
    };
    let cipher = match take::<C, gcm_core::aes::Aes192>(cipher) {
        Ok(c) => return Ok(c.into()),
        Err(c) => c,
    };
    let cipher = match take::<C, gcm_core::aes::Aes256>(cipher) {
        Ok(c) => return Ok(c.into()),
        Err(c) => c,
    };
    let cipher = match take::<C, aes::Aes128>(cipher) {
        Ok(c) => return Ok(c.into()),
        Err(c) => c,
    };
    let cipher = match take::<C, aes::Aes192>(cipher) {
        Ok(c) => return Ok(c.into()),
        Err(c) => c,
    };
    take::<C, aes::Aes256>(cipher).map(GcmKey::from)
}

/// Types [`take`] may move a value into.
///
/// # Safety
///
/// Implementors have no lifetime parameters, so that a type whose [`typeid::of`] (which
/// erases lifetimes) equals theirs is exactly them.
unsafe trait LifetimeFree: 'static {}

// SAFETY: plain structs without lifetime parameters.
unsafe impl LifetimeFree for gcm_core::aes::Aes128 {}
// SAFETY: as above.
unsafe impl LifetimeFree for gcm_core::aes::Aes192 {}
// SAFETY: as above.
unsafe impl LifetimeFree for gcm_core::aes::Aes256 {}
// SAFETY: as above.
unsafe impl LifetimeFree for aes::Aes128 {}
// SAFETY: as above.
unsafe impl LifetimeFree for aes::Aes192 {}
// SAFETY: as above.
unsafe impl LifetimeFree for aes::Aes256 {}

/// `value` as a `T` if `C` is `T`, else `value` back.
fn take<C, T: LifetimeFree>(value: C) -> Result<T, C> {
    if typeid::of::<C>() != TypeId::of::<T>() {
        return Err(value);
    }
    let value = ManuallyDrop::new(value);
    // SAFETY: `C` and `T` have the same type id up to lifetimes, and `T` has no lifetimes
    // (`LifetimeFree`), so `C` is `T`: the read yields a valid `T`. `value` is never
    // dropped, so the one owned value moves exactly once.
    Ok(unsafe { core::ptr::read((&*value as *const C).cast::<T>()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_exactly_the_aes_types() {
        assert!(is_aes::<aes::Aes128>() && is_aes::<aes::Aes256Enc>());
        assert!(is_aes::<gcm_core::aes::Aes192>());
        assert!(!is_aes::<aes::Aes128Dec>());
        assert!(!is_aes::<u8>() && !is_aes::<&'static aes::Aes128>());
    }

    #[test]
    fn take_moves_only_the_same_type() {
        assert!(take::<u32, aes::Aes128>(7).is_err_and(|v| v == 7));
        let key = [3u8; 16].into();
        let ours = gcm_core::aes::Aes128::new_with_backend(&key, gcm_core::Backend::Portable);
        let ours = ours.unwrap();
        let moved: gcm_core::aes::Aes128 = take(ours).unwrap_or_else(|_| panic!("same type"));
        assert_eq!(moved.backend(), gcm_core::Backend::Portable);
        assert!(into_gcm_key(5u64).is_err());
        let from_aes = into_gcm_key(<aes::Aes256 as cipher::KeyInit>::new(&[1; 32].into()));
        assert_eq!(from_aes.unwrap().key_len(), 32);
    }
}

//! With the `zeroize` feature every type that holds key material wipes it when dropped:
//! GCM keys, AES block ciphers and GHASH on every back end, the `aes-gcm-vaes` AEADs and
//! the `tls-cbc-aead` suites (AES/3DES schedules, HMAC states, implicit-IV chaining).
//!
//! Run with `cargo test -p tests --features zeroize --test zeroize`. Each value is built
//! inside a zeroed `MaybeUninit` slot on the heap that stays allocated after the value
//! is dropped in place with `ptr::drop_in_place`; the slot's bytes are read before and
//! after the drop. Reading memory after a drop is only sound because the memory is still
//! ours; it is never freed memory. The bytes are read by `rep movsb` in inline asm rather
//! than through a `&[u8]`, because a slot may contain padding, which Rust does not
//! consider initialised; the asm copy takes whatever bytes are there into an initialised
//! buffer.
//!
//! What is checked, per value: before the drop it holds a substantial amount of non-zero
//! data (so the check is not vacuous) and, for the hardware back ends, the raw AES key
//! (the first round key is the key itself); after the drop, no 8-byte window of the key
//! appears anywhere in the slot, and at most a few bytes that were non-zero are unchanged
//! (enum tags, round counts, key lengths: public). The types are also checked to
//! implement `ZeroizeOnDrop`.
#![cfg(all(feature = "zeroize", target_arch = "x86_64"))]

use aes_gcm_vaes::aead::{KeyInit, array::Array};
use gcm_core::{Backend, GcmKey};
use std::mem::{MaybeUninit, size_of};
use zeroize::ZeroizeOnDrop;

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The bytes of `slot`, whatever they are, copied into an initialised buffer.
fn snapshot<T>(slot: &MaybeUninit<T>) -> Vec<u8> {
    let n = size_of::<T>();
    let mut out = vec![0u8; n];
    // SAFETY: `rep movsb` copies `rcx` bytes from `rsi` to `rdi`: the source is the
    // `size_of::<T>()` bytes of a live, allocated slot and the destination a buffer of the
    // same length. The direction flag is clear on entry to asm (ABI), so it copies
    // upwards. The asm reads raw machine memory, so padding bytes are taken as they are.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rsi") slot.as_ptr().cast::<u8>() => _,
            inout("rdi") out.as_mut_ptr() => _,
            inout("rcx") n => _,
            options(nostack, preserves_flags),
        );
    }
    out
}

/// Zeroes the stack below this frame. A value's padding bytes are copied along with it
/// from wherever it was built, and stale stack there may hold anything, including copies
/// of a key from an earlier construction; starting each construction from a zeroed stack
/// means that what padding holds afterwards was put there by the construction itself.
#[inline(never)]
fn scrub_stack() {
    let mut buf = [0u8; 1 << 16];
    std::hint::black_box(&mut buf);
}

/// Builds `make(key)` into `staging` from a frame below `check`'s, so that every
/// temporary of the construction lies in stack that `scrub_stack` zeroed, then moves it
/// bitwise, padding included, into a zeroed heap slot of its own and zeroes `staging`.
/// (Built in `check`'s own frame, a value's padding could be copied from a temporary there
/// that still holds bytes of an earlier check's value of another type. Both values of a
/// check go through the one `staging` slot, so that a stale pointer to it left in padding
/// is the same in both and is not mistaken for key-dependent data.)
#[inline(never)]
fn build<T>(
    make: &impl Fn(&[u8]) -> T,
    key: &[u8],
    staging: &mut MaybeUninit<T>,
) -> Box<MaybeUninit<T>> {
    staging.write(make(key));
    let mut slot = Box::new(MaybeUninit::<T>::zeroed());
    // SAFETY: `staging` holds an initialised `T`, which is moved (a bitwise copy, padding
    // included) into `slot`, a distinct allocation of the same type; `staging` is then
    // overwritten with zeros and never read or dropped as a `T`.
    unsafe {
        std::ptr::copy_nonoverlapping(staging.as_ptr(), slot.as_mut_ptr(), 1);
        std::ptr::write_bytes(staging.as_mut_ptr(), 0, 1);
    }
    slot
}

/// Drops the value in `slot` in place; the slot stays allocated.
fn drop_in_slot<T>(slot: &mut MaybeUninit<T>) {
    // SAFETY: the slot holds an initialised `T` (`build` writes one),
    // which is dropped exactly once here and never used as a `T` again.
    unsafe { std::ptr::drop_in_place(slot.as_mut_ptr()) };
}

/// Builds the same type from two different keys, drops both in place, and checks that
/// every byte that depends on the key (differs between the two) is zero afterwards and
/// that no 8 bytes of either key are left. Bytes equal in both (enum tags, round counts,
/// key lengths, back-end tokens) are public and may stay. `key_in_clear`: the value is
/// known to hold the raw key (hardware round keys start with it), checked before the drop.
fn check<T: ZeroizeOnDrop>(
    what: &str,
    key_len: usize,
    key_in_clear: bool,
    make: impl Fn(&[u8]) -> T,
) -> Result<String, String> {
    let (k1, k2) = (key(key_len, 0x5b), key(key_len, 0xc4));
    // Both keys pass through one buffer, so that a stale pointer to it left in padding is
    // the same in both values and is not mistaken for key-dependent data.
    let mut kbuf = k1.clone();
    let mut staging = Box::new(MaybeUninit::<T>::zeroed());
    scrub_stack();
    let mut a = build(&make, &kbuf, &mut staging);
    kbuf.copy_from_slice(&k2);
    scrub_stack();
    let mut b = build(&make, &kbuf, &mut staging);
    kbuf.fill(0);
    let (a0, b0) = (snapshot(&a), snapshot(&b));
    let secret: Vec<usize> = (0..a0.len()).filter(|&i| a0[i] != b0[i]).collect();
    assert!(
        secret.len() >= 64,
        "{what}: only {} key-dependent bytes before the drop",
        secret.len()
    );
    if key_in_clear {
        assert!(
            contains(&a0, &k1[..16]),
            "{what}: key not found before the drop"
        );
    }
    drop_in_slot(&mut a);
    drop_in_slot(&mut b);
    let (a1, b1) = (snapshot(&a), snapshot(&b));
    let left: Vec<usize> = secret
        .iter()
        .copied()
        .filter(|&i| a1[i] != 0 || b1[i] != 0)
        .collect();
    for (w, after) in k1
        .chunks(8)
        .map(|w| (w, &a1))
        .chain(k2.chunks(8).map(|w| (w, &b1)))
    {
        if let Some(at) = after.windows(w.len()).position(|x| x == w) {
            return Err(format!("{what}: key bytes left after drop at offset {at}"));
        }
    }
    if !left.is_empty() {
        return Err(format!(
            "{what}: {} of {} key-dependent bytes not wiped, at offsets {left:?}",
            left.len(),
            secret.len()
        ));
    }
    Ok(format!(
        "{what}: {} bytes, {} key-dependent, all zero after drop",
        a0.len(),
        secret.len()
    ))
}

fn key(n: usize, seed: u8) -> Vec<u8> {
    (0..n as u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(seed))
        .collect()
}

fn arr<N: aes_gcm_vaes::aead::array::ArraySize>(k: &[u8]) -> Array<u8, N> {
    Array::try_from(k).expect("key length")
}

#[test]
fn key_holding_types_wipe_on_drop() {
    let mut lines = Vec::new();
    for b in Backend::available() {
        let hw = b != Backend::Portable;
        for n in [16, 24, 32] {
            lines.push(check(&format!("GcmKey {b} AES-{}", n * 8), n, hw, |k| {
                GcmKey::new_with_backend(k, b).unwrap()
            }));
        }
        lines.push(check(&format!("gcm_core::aes::Aes128 {b}"), 16, hw, |k| {
            gcm_core::aes::Aes128::new_with_backend(&arr(k), b).unwrap()
        }));
        lines.push(check(&format!("gcm_core::aes::Aes192 {b}"), 24, hw, |k| {
            gcm_core::aes::Aes192::new_with_backend(&arr(k), b).unwrap()
        }));
        lines.push(check(&format!("gcm_core::aes::Aes256 {b}"), 32, hw, |k| {
            gcm_core::aes::Aes256::new_with_backend(&arr(k), b).unwrap()
        }));
        lines.push(check(
            &format!("gcm_core::ghash::GHash {b}"),
            16,
            false,
            |h| gcm_core::ghash::GHash::new_with_backend(&arr(h), b).unwrap(),
        ));
        lines.push(check(
            &format!("aes_gcm_vaes::Aes128Gcm {b}"),
            16,
            hw,
            |k| aes_gcm_vaes::Aes128Gcm::new_with_backend(&arr(k), b).unwrap(),
        ));
        lines.push(check(
            &format!("aes_gcm_vaes::Aes256Gcm {b}"),
            32,
            hw,
            |k| aes_gcm_vaes::Aes256Gcm::new_with_backend(&arr(k), b).unwrap(),
        ));
        lines.push(check(&format!("clone of GcmKey {b}"), 16, hw, |k| {
            let original = GcmKey::new_with_backend(k, b).unwrap();
            original.clone()
        }));
    }
    // A GCM key built from a RustCrypto cipher keeps that cipher (portable back end), and
    // the typed AES-GCM over the RustCrypto cipher type.
    lines.push(check("GcmKey from aes::Aes128", 16, false, |k| {
        GcmKey::from(aes_gcm_vaes::aes::Aes128::new(&arr(k)))
    }));
    lines.push(check("AesGcm<aes::Aes128, U12>", 16, false, |k| {
        aes_gcm_vaes::AesGcm::<aes_gcm_vaes::aes::Aes128, aes_gcm_vaes::aead::consts::U12>::new(
            &arr(k),
        )
    }));
    // The generic path: SM4's round keys (SM4 wipes them) and our GHASH key; and AES
    // keys reached through `Aes128Enc` (the kernels).
    lines.push(check("AesGcm<sm4::Sm4, U12>", 16, false, |k| {
        aes_gcm_vaes::AesGcm::<sm4::Sm4, aes_gcm_vaes::aead::consts::U12>::new(&arr(k))
    }));
    lines.push(check("AesGcm<aes::Aes128Enc, U12>", 16, false, |k| {
        aes_gcm_vaes::AesGcm::<aes_gcm_vaes::aes::Aes128Enc, aes_gcm_vaes::aead::consts::U12>::new(
            &arr(k),
        )
    }));
    // TLS CBC suites: AES (or 3DES) schedules plus the HMAC inner and outer states (and,
    // for implicit IV, the chaining block).
    macro_rules! tls {
        ($($ty:ident: $len:expr),*) => {$(
            lines.push(check(concat!("tls_cbc_aead::", stringify!($ty)), $len, false, |k| {
                <tls_cbc_aead::$ty as KeyInit>::new_from_slice(k).unwrap()
            }));
        )*};
    }
    tls!(
        Aes128CbcSha1: 36, Aes256CbcSha1: 52, Aes128CbcSha256: 48, Aes256CbcSha256: 64,
        Aes256CbcSha384: 80, DesEde3CbcSha1: 44, Aes128CbcSha1ImplicitIv: 52,
        Aes256CbcSha1ImplicitIv: 68, DesEde3CbcSha1ImplicitIv: 52
    );
    let (ok, bad): (Vec<_>, Vec<_>) = lines.into_iter().partition(Result::is_ok);
    let ok: Vec<String> = ok.into_iter().map(Result::unwrap).collect();
    let bad: Vec<String> = bad.into_iter().map(Result::unwrap_err).collect();
    println!("{}", ok.join("\n"));
    assert!(bad.is_empty(), "not wiped:\n{}", bad.join("\n"));
}

#[test]
fn a_clone_outlives_the_wiped_original() {
    // Each clone owns its key material: wiping one leaves the other working.
    for b in Backend::available() {
        let k = key(16, 1);
        let original = GcmKey::new_with_backend(&k, b).unwrap();
        let copy = original.clone();
        let mut slot = MaybeUninit::new(original);
        drop_in_slot(&mut slot);
        let mut buf = [0u8; 20];
        let tag = copy.seal_in_place(&[1; 12], b"", &mut buf).unwrap();
        copy.open_in_place(&[1; 12], b"", &mut buf, &tag).unwrap();
        assert_eq!(buf, [0u8; 20]);
    }
}

//! A counting global allocator shows that sealing and opening allocate nothing, on every
//! back end, through both `gcm_core` and the `aead` traits of `aes-gcm-vaes`.

use aes_gcm_vaes::{
    Aes128Gcm, Aes256Gcm, Nonce,
    aead::{AeadInOut, KeyInit},
};
use gcm_core::{Backend, GcmKey};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the count is thread-local bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(|c| c.get());
    f();
    ALLOCS.with(|c| c.get()) - before
}

#[test]
fn seal_and_open_do_not_allocate() {
    let mut buf = vec![0x5a_u8; 70_000];
    let mut out = vec![0u8; 70_000];
    let aad = [1u8; 300];
    for backend in Backend::available() {
        for key_len in [16, 24, 32] {
            let key = GcmKey::new_with_backend(&[9; 32][..key_len], backend).unwrap();
            for len in [0, 1, 15, 16, 17, 255, 256, 1350, 4096, 16_384 + 7, 70_000] {
                let msg = &mut buf[..len];
                let n = allocations_in(|| {
                    let tag = key.seal_in_place(&[3; 12], &aad, msg).unwrap();
                    key.open_in_place(&[3; 12], &aad, msg, &tag).unwrap();
                    // A failed open (restores the ciphertext) and a long nonce (GHASH J0).
                    assert!(key.open_in_place(&[3; 12], &aad, msg, &[0; 16]).is_err());
                    let tag = key.seal_in_place(&[4; 60], &aad, msg).unwrap();
                    key.open_inout(
                        &[4; 60],
                        &aad,
                        gcm_core::InOutBuf::new(msg, &mut out[..len]).unwrap(),
                        &tag,
                    )
                    .unwrap();
                });
                assert_eq!(n, 0, "{backend} key {key_len} len {len}: {n} allocations");
            }
        }
    }
}

#[test]
fn aead_trait_paths_do_not_allocate() {
    let a128 = Aes128Gcm::new(&[1; 16].into());
    let a256 = Aes256Gcm::new(&[2; 32].into());
    let nonce = Nonce::from([5; 12]);
    let mut buf = [0u8; 2000];
    let n = allocations_in(|| {
        for len in [0, 16, 1000, 2000] {
            let t = a128
                .encrypt_inout_detached(&nonce, b"ad", (&mut buf[..len]).into())
                .unwrap();
            a128.decrypt_inout_detached(&nonce, b"ad", (&mut buf[..len]).into(), &t)
                .unwrap();
            let t = a256
                .encrypt_inout_detached(&nonce, b"ad", (&mut buf[..len]).into())
                .unwrap();
            a256.decrypt_inout_detached(&nonce, b"ad", (&mut buf[..len]).into(), &t)
                .unwrap();
        }
    });
    assert_eq!(n, 0);
    // Key set-up allocates nothing either.
    assert_eq!(allocations_in(|| drop(Aes256Gcm::new(&[3; 32].into()))), 0);
}

/// The generic path (a block cipher other than AES: SM4) allocates nothing either, in key
/// set-up, sealing, opening, a failed open or a long nonce.
#[test]
fn generic_cipher_path_does_not_allocate() {
    use aes_gcm_vaes::{AesGcm, aead::consts::U60};
    let mut buf = [0u8; 3000];
    let n = allocations_in(|| {
        let sm4 = AesGcm::<sm4::Sm4, aes_gcm_vaes::aead::consts::U12>::new(&[7; 16].into());
        let long = AesGcm::<sm4::Sm4, U60>::new(&[8; 16].into());
        for len in [0, 16, 1000, 3000] {
            let t = sm4
                .encrypt_inout_detached(&Nonce::from([5; 12]), b"ad", (&mut buf[..len]).into())
                .unwrap();
            sm4.decrypt_inout_detached(&Nonce::from([5; 12]), b"ad", (&mut buf[..len]).into(), &t)
                .unwrap();
            let bad = Default::default();
            let r = sm4.decrypt_inout_detached(
                &Nonce::from([5; 12]),
                b"ad",
                (&mut buf[..len]).into(),
                &bad,
            );
            assert!(r.is_err());
            let t = long
                .encrypt_inout_detached(&Default::default(), b"", (&mut buf[..len]).into())
                .unwrap();
            long.decrypt_inout_detached(&Default::default(), b"", (&mut buf[..len]).into(), &t)
                .unwrap();
        }
    });
    assert_eq!(n, 0);
}

//! Our record layer allocates no more than rustls's ring provider does: one buffer per
//! sealed record (the owned payload rustls's `MessageEncrypter` API returns) and
//! nothing at all to open a record, which happens in the received buffer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use aes_gcm_vaes::rustls as ours;
use rustls::crypto::cipher::{AeadKey, InboundOpaqueMessage, Iv, OutboundPlainMessage};
use rustls::crypto::ring::cipher_suite as ring;
use rustls::{ContentType, ProtocolVersion, SupportedCipherSuite};

/// Counts allocations made by the current thread only, so tests running in parallel
/// do not disturb each other's counts.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is
// a const-initialised thread-local `Cell`, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

const RECORDS: usize = 64;

/// Allocations to seal and then to open `RECORDS` full-size records.
fn count(suite: SupportedCipherSuite) -> (usize, usize) {
    let key = || AeadKey::from([0x11u8; 32]);
    let iv = || Iv::from([0x22u8; 12]);
    let plain = vec![0x33u8; 16 * 1024];
    let (mut enc, mut dec) = match suite {
        SupportedCipherSuite::Tls13(s) => (
            s.aead_alg.encrypter(key(), iv()),
            s.aead_alg.decrypter(key(), iv()),
        ),
        SupportedCipherSuite::Tls12(s) => (
            s.aead_alg.encrypter(key(), &[1, 2, 3, 4], &[5; 8]),
            s.aead_alg.decrypter(key(), &[1, 2, 3, 4]),
        ),
    };
    let mut sealed = Vec::with_capacity(RECORDS);
    let seal = allocations_in(|| {
        for seq in 0..RECORDS as u64 {
            let msg = OutboundPlainMessage {
                typ: ContentType::ApplicationData,
                version: ProtocolVersion::TLSv1_2,
                payload: plain.as_slice().into(),
            };
            sealed.push(enc.encrypt(msg, seq).unwrap());
        }
    });
    let mut wire: Vec<Vec<u8>> = sealed.iter().map(|m| m.payload.as_ref().to_vec()).collect();
    let open = allocations_in(|| {
        for (seq, record) in wire.iter_mut().enumerate() {
            let msg = InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                record,
            );
            let plain_len = dec.decrypt(msg, seq as u64).unwrap().payload.len();
            assert_eq!(plain_len, plain.len());
        }
    });
    (seal, open)
}

#[test]
fn tls13_record_layer_allocates_like_ring() {
    let (ring_seal, ring_open) = count(ring::TLS13_AES_256_GCM_SHA384);
    let (seal, open) = count(ours::TLS13_AES_256_GCM_SHA384);
    assert_eq!(open, 0, "opening a record must not allocate");
    assert_eq!(
        seal, RECORDS,
        "exactly one payload buffer per sealed record"
    );
    assert!(seal <= ring_seal && open <= ring_open);
}

#[test]
fn tls12_record_layer_allocates_like_ring() {
    let (ring_seal, ring_open) = count(ring::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384);
    let (seal, open) = count(ours::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384);
    assert_eq!(open, 0, "opening a record must not allocate");
    assert_eq!(
        seal, RECORDS,
        "exactly one payload buffer per sealed record"
    );
    assert!(seal <= ring_seal && open <= ring_open);
}

//! Our record layer allocates no more than rustls's ring provider does: one buffer per
//! sealed record (the owned payload rustls's `MessageEncrypter` API returns) and
//! nothing at all to open a record, which happens in the received buffer. QUIC packet
//! and header protection allocate nothing at all, tampered packets included.

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

/// Seals and masks, then unmasks and opens, `RECORDS` 1350-byte QUIC packets (and as many
/// tampered ones) with the keys of `suite`; returns the allocations made meanwhile.
fn count_quic(suite: SupportedCipherSuite) -> usize {
    use rustls::Side;
    use rustls::quic::Version;

    let quic = suite.tls13().unwrap().quic_suite().unwrap();
    let tx = quic.keys(&[7; 8], Side::Client, Version::V1).local;
    let rx = quic.keys(&[7; 8], Side::Server, Version::V1).remote;
    const HEADER: usize = 12;
    let mut packets: Vec<Vec<u8>> = (0..2 * RECORDS).map(|_| vec![0x44u8; 1350]).collect();
    allocations_in(|| {
        for (pn, packet) in packets.iter_mut().enumerate() {
            let pn = pn as u64;
            packet[0] = 0x41; // short header, 2-byte packet number
            let (header, rest) = packet.split_at_mut(HEADER);
            let (body, tag) = rest.split_at_mut(rest.len() - 16);
            let t = tx.packet.encrypt_in_place(pn, header, body).unwrap();
            tag.copy_from_slice(t.as_ref());
            let (header, sample) = packet.split_at_mut(HEADER - 2 + 4);
            let (first, pn_bytes) = header.split_at_mut(1);
            tx.header
                .encrypt_in_place(&sample[..16], &mut first[0], &mut pn_bytes[HEADER - 3..])
                .unwrap();
        }
        for (pn, packet) in packets.iter_mut().enumerate() {
            if pn % 2 == 1 {
                packet[100] ^= 1;
            }
            let (header, sample) = packet.split_at_mut(HEADER - 2 + 4);
            let (first, pn_bytes) = header.split_at_mut(1);
            rx.header
                .decrypt_in_place(&sample[..16], &mut first[0], &mut pn_bytes[HEADER - 3..])
                .unwrap();
            let (header, body) = packet.split_at_mut(HEADER);
            let r = rx.packet.decrypt_in_place(pn as u64, header, body);
            assert_eq!(r.is_ok(), pn % 2 == 0);
        }
    })
}

#[test]
fn quic_packet_protection_allocates_nothing() {
    for (ours, ring) in [
        (
            ours::TLS13_AES_128_GCM_SHA256,
            ring::TLS13_AES_128_GCM_SHA256,
        ),
        (
            ours::TLS13_AES_256_GCM_SHA384,
            ring::TLS13_AES_256_GCM_SHA384,
        ),
    ] {
        assert_eq!(count_quic(ours), 0, "{:?}", ours.suite());
        assert_eq!(count_quic(ring), 0, "ring, {:?}", ours.suite());
    }
}

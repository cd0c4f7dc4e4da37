//! Known answers for QUIC packet protection through the public rustls API on our
//! suites: the sample Initial packets of RFC 9001 Appendix A (and of RFC 9369, QUIC
//! version 2), step by step. The keys come from `quic_suite().keys(..)` of
//! `aes_gcm_vaes::rustls::TLS13_AES_128_GCM_SHA256`, which is rustls's (ring's) HKDF
//! feeding this crate's `quic::Algorithm`. The published key, IV and header-protection
//! key are checked against the published packet with RustCrypto's AES and this crate's
//! AES-GCM `aead` API, and the derived keys against them on other packets and samples.

use aes_gcm_vaes::aead::{AeadInOut, KeyInit};
use aes_gcm_vaes::aes::cipher::BlockCipherEncrypt;
use aes_gcm_vaes::rustls::{TLS13_AES_128_GCM_SHA256, quic};
use hex_literal::hex;
use rustls::Side;
use rustls::quic::{DirectionalKeys, Keys, Version};

include!("data/quic_initial_vectors.rs");

fn keys(v: &InitialVectors, version: Version, side: Side) -> Keys {
    let suite = TLS13_AES_128_GCM_SHA256
        .tls13()
        .unwrap()
        .quic_suite()
        .unwrap();
    assert!(std::ptr::addr_eq(suite.quic, quic::AES_128_GCM));
    suite.keys(&v.dcid, side, version)
}

/// Where the packet number starts: the header ends with it.
fn pn_offset(p: &InitialPacket) -> usize {
    p.header.len() - (usize::from(p.header[0] & 3) + 1)
}

/// AES-GCM under the published key and IV (this crate's `aead` API, not the QUIC code):
/// `payload` sealed in place as packet `pn` under `header`; returns the tag.
fn seal_with_published_key(
    p: &InitialPacket,
    pn: u64,
    header: &[u8],
    payload: &mut [u8],
) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(p.iv);
    for (n, b) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
        *n ^= b;
    }
    let gcm = aes_gcm_vaes::Aes128Gcm::new_from_slice(p.key).unwrap();
    let tag = gcm
        .encrypt_inout_detached(&nonce.into(), header, payload.into())
        .unwrap();
    tag.to_vec()
}

/// AES-ECB under the published `hp` key (RustCrypto's `aes`).
fn mask_with_published_hp(p: &InitialPacket, sample: &[u8]) -> [u8; 16] {
    let aes = aes_gcm_vaes::aes::Aes128::new_from_slice(p.hp).unwrap();
    let mut block = <[u8; 16]>::try_from(sample).unwrap().into();
    aes.encrypt_block(&mut block);
    block.into()
}

/// The RFC's own arithmetic, with nothing of the QUIC code: the published key and IV
/// seal the published packet, and the published `hp` key turns the sample into the mask.
fn published_values_agree_with_each_other(p: &InitialPacket) {
    let mut payload = p.payload();
    let tag = seal_with_published_key(p, p.packet_number, p.header, &mut payload);
    let body = &p.packet[p.header.len()..];
    assert_eq!(&payload[..], &body[..payload.len()]);
    assert_eq!(&tag[..], &body[payload.len()..]);
    let sample_at = 4 - (p.header.len() - pn_offset(p));
    assert_eq!(&payload[sample_at..][..16], p.sample);
    assert_eq!(&mask_with_published_hp(p, p.sample)[..5], p.mask);
}

/// The keys rustls derived through our algorithm are the published ones: other packets
/// (other numbers, headers, lengths) seal as the published key and IV seal them, and
/// other samples mask as the published `hp` key masks them.
fn derived_keys_are_the_published_ones(p: &InitialPacket, tx: &DirectionalKeys, what: &str) {
    for (pn, len) in [
        (0u64, 0usize),
        (7, 1),
        (1 << 40, 100),
        (u64::MAX >> 2, 1500),
    ] {
        let header = [0x40, 1, 2, 3, (pn & 0xff) as u8];
        let plain: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
        let (mut theirs, mut ours) = (plain.clone(), plain);
        let tag = seal_with_published_key(p, pn, &header, &mut theirs);
        let t = tx.packet.encrypt_in_place(pn, &header, &mut ours).unwrap();
        assert_eq!(ours, theirs, "{what}: key and IV, pn {pn}");
        assert_eq!(t.as_ref(), &tag[..], "{what}: key and IV, pn {pn}");
    }
    for seed in 0..8u8 {
        let sample: [u8; 16] = core::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ seed);
        let mask = mask_with_published_hp(p, &sample);
        // A short header with a 4-byte packet number: 5 bits of the first byte and all
        // 4 bytes of the number take the mask.
        let (mut first, mut pn) = (0x43u8, [0u8; 4]);
        tx.header
            .encrypt_in_place(&sample, &mut first, &mut pn)
            .unwrap();
        assert_eq!(first, 0x43 ^ (mask[0] & 0x1f), "{what}: hp key");
        assert_eq!(pn, mask[1..5], "{what}: hp key");
    }
}

/// Seals and masks `p` with `tx` one step at a time, checking each against the RFC, then
/// opens the RFC's packet with `rx`.
fn check_packet(p: &InitialPacket, tx: &DirectionalKeys, rx: &DirectionalKeys, what: &str) {
    published_values_agree_with_each_other(p);
    derived_keys_are_the_published_ones(p, tx, what);
    let pn_offset = pn_offset(p);

    // Packet protection (RFC 9001 §5.3).
    let mut packet = [p.header, &p.payload(), &[0; 16]].concat();
    let (header, rest) = packet.split_at_mut(p.header.len());
    let (payload, tag) = rest.split_at_mut(p.payload_len);
    let t = tx
        .packet
        .encrypt_in_place(p.packet_number, header, payload)
        .unwrap();
    tag.copy_from_slice(t.as_ref());
    assert_eq!(
        packet[p.header.len()..],
        p.packet[p.header.len()..],
        "{what}: payload"
    );

    // The sample starts 4 bytes after the packet number starts (§5.4.2).
    let sample = &packet[pn_offset + 4..pn_offset + 20];
    assert_eq!(sample, p.sample, "{what}: sample");
    assert_eq!(tx.header.sample_len(), 16);

    // Header protection (§5.4.1): mask[0] on the first byte, the rest on the packet
    // number; the slice passed is 4 bytes long, as quinn passes it, but the first byte
    // says how much of it is packet number.
    let (header, sample) = packet.split_at_mut(pn_offset + 4);
    let (first, rest) = header.split_at_mut(1);
    tx.header
        .encrypt_in_place(&sample[..16], &mut first[0], &mut rest[pn_offset - 1..])
        .unwrap();
    assert_eq!(
        &packet[..p.header.len()],
        p.protected_header,
        "{what}: header"
    );
    let low_bits = if p.header[0] & 0x80 != 0 { 0x0f } else { 0x1f };
    assert_eq!(
        packet[0],
        p.header[0] ^ (p.mask[0] & low_bits),
        "{what}: mask[0]"
    );
    assert_eq!(packet, p.packet, "{what}: protected packet");

    // And back, from the RFC's bytes, with the receiver's keys.
    let mut packet = p.packet.to_vec();
    let (header, sample) = packet.split_at_mut(pn_offset + 4);
    let (first, rest) = header.split_at_mut(1);
    rx.header
        .decrypt_in_place(&sample[..16], &mut first[0], &mut rest[pn_offset - 1..])
        .unwrap();
    let (header, payload) = packet.split_at_mut(p.header.len());
    assert_eq!(header, p.header, "{what}: unprotected header");
    let plain = rx
        .packet
        .decrypt_in_place(p.packet_number, header, payload)
        .unwrap();
    assert_eq!(plain, &p.payload()[..], "{what}: payload");
}

fn check(v: &InitialVectors, version: Version) {
    let client = keys(v, version, Side::Client);
    let server = keys(v, version, Side::Server);
    let name = |who| format!("{} {who} Initial", v.rfc);
    check_packet(&v.client, &client.local, &server.remote, &name("client"));
    check_packet(&v.server, &server.local, &client.remote, &name("server"));
}

#[test]
fn rfc9001_appendix_a_initial_packets() {
    check(&RFC9001, Version::V1);
}

#[test]
fn rfc9369_appendix_a_initial_packets() {
    check(&RFC9369, Version::V2);
}

#[test]
fn rfc9001_packets_from_the_wrong_side_or_version_do_not_open() {
    let v = &RFC9001;
    for (version, side) in [(Version::V2, Side::Server), (Version::V1, Side::Client)] {
        // Client keys cannot open the client's packet; V2 keys cannot open a V1 packet.
        let k = keys(v, version, side);
        let p = &v.client;
        let mut packet = p.packet.to_vec();
        let pn_offset = pn_offset(p);
        let (header, sample) = packet.split_at_mut(pn_offset + 4);
        let (first, rest) = header.split_at_mut(1);
        k.remote
            .header
            .decrypt_in_place(&sample[..16], &mut first[0], &mut rest[pn_offset - 1..])
            .unwrap();
        let pn_len = usize::from(packet[0] & 3) + 1;
        let (header, payload) = packet.split_at_mut(pn_offset + pn_len);
        let before = payload.to_vec();
        let r = k.remote.packet.decrypt_in_place(2, header, payload);
        assert!(matches!(r, Err(rustls::Error::DecryptError)), "{r:?}");
        assert_eq!(payload, &before[..], "a failed open leaves the ciphertext");
    }
}

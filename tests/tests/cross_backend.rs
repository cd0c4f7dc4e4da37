//! Every back end this CPU has, against every other and against RustCrypto `aes-gcm`.

use gcm_core::{Backend, GcmKey};
use tests::{Rng, reference_seal};

const KEY_SIZES: [usize; 3] = [16, 24, 32];

fn keys(key: &[u8]) -> Vec<GcmKey> {
    Backend::available()
        .map(|b| {
            let k = GcmKey::new_with_backend(key, b).expect("available back end");
            assert_eq!(k.backend(), b);
            k
        })
        .collect()
}

/// Seals and opens one message with every key, in place and with separate buffers, and
/// checks each result against the reference; then tampers with the tag and ciphertext.
fn check_one(rng: &mut Rng, key_len: usize, msg_len: usize, aad_len: usize) {
    let key = rng.bytes(key_len);
    let nonce: [u8; 12] = rng.bytes(12).try_into().unwrap();
    let aad = rng.bytes(aad_len);
    let msg = rng.bytes(msg_len);
    let (want_ct, want_tag) = reference_seal(&key, &nonce, &aad, &msg);
    for k in keys(&key) {
        let ctx = format!(
            "{:?} key={key_len} msg={msg_len} aad={aad_len}",
            k.backend()
        );
        // In place.
        let mut buf = msg.clone();
        let tag = k.seal_in_place(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(buf, want_ct, "{ctx}: ciphertext");
        assert_eq!(tag, want_tag, "{ctx}: tag");
        k.open_in_place(&nonce, &aad, &mut buf, &tag).unwrap();
        assert_eq!(buf, msg, "{ctx}: in-place open");
        // Separate buffers.
        let mut out = vec![0xAA; msg_len];
        let tag2 = k
            .seal_inout(
                &nonce,
                &aad,
                gcm_core::InOutBuf::new(&msg, &mut out).unwrap(),
            )
            .unwrap();
        assert_eq!(
            (out.as_slice(), tag2),
            (want_ct.as_slice(), want_tag),
            "{ctx}: separate seal"
        );
        let mut pt = vec![0x55; msg_len];
        k.open_inout(
            &nonce,
            &aad,
            gcm_core::InOutBuf::new(&want_ct, &mut pt).unwrap(),
            &tag,
        )
        .unwrap();
        assert_eq!(pt, msg, "{ctx}: separate open");
        // A flipped tag bit: rejected, in-place buffer back to the ciphertext, separate output zeroed.
        let mut bad_tag = tag;
        bad_tag[rng.below(16)] ^= 1 << rng.below(8);
        let mut buf = want_ct.clone();
        assert!(
            k.open_in_place(&nonce, &aad, &mut buf, &bad_tag).is_err(),
            "{ctx}: bad tag accepted"
        );
        assert_eq!(buf, want_ct, "{ctx}: buffer not restored after failure");
        let mut pt = vec![0x55; msg_len];
        assert!(
            k.open_inout(
                &nonce,
                &aad,
                gcm_core::InOutBuf::new(&want_ct, &mut pt).unwrap(),
                &bad_tag
            )
            .is_err()
        );
        assert!(
            pt.iter().all(|&b| b == 0),
            "{ctx}: separate output not zeroed"
        );
        // A flipped ciphertext or AAD bit.
        if msg_len > 0 {
            let mut buf = want_ct.clone();
            buf[rng.below(msg_len)] ^= 1 << rng.below(8);
            let tampered = buf.clone();
            assert!(
                k.open_in_place(&nonce, &aad, &mut buf, &tag).is_err(),
                "{ctx}: bad ct accepted"
            );
            assert_eq!(buf, tampered, "{ctx}: tampered buffer not restored");
        }
        if aad_len > 0 {
            let mut bad_aad = aad.clone();
            bad_aad[rng.below(aad_len)] ^= 1 << rng.below(8);
            let mut buf = want_ct.clone();
            assert!(
                k.open_in_place(&nonce, &bad_aad, &mut buf, &tag).is_err(),
                "{ctx}: bad aad accepted"
            );
        }
    }
}

#[test]
fn every_message_length_up_to_1024() {
    let mut rng = Rng::new(1);
    for msg_len in 0..=1024 {
        let key_len = KEY_SIZES[msg_len % 3];
        let aad_len = rng.below(301);
        check_one(&mut rng, key_len, msg_len, aad_len);
    }
}

#[test]
fn short_messages_with_short_aad() {
    // Every message length up to 45 blocks, with associated data around the bounds of the
    // kernels' one-pass paths for short messages (up to 4 blocks of it; one group to 14
    // blocks, two to 29, seals in more groups to 42): every partial block in place, with
    // and without the associated data's own partial block.
    let mut rng = Rng::new(4);
    for msg_len in 0..=720 {
        for aad_len in [0, 1, 13, 16, 17, 31, 32, 48, 63, 64, 65] {
            check_one(
                &mut rng,
                KEY_SIZES[(msg_len + aad_len) % 3],
                msg_len,
                aad_len,
            );
        }
    }
}

#[test]
fn every_aad_length_up_to_300() {
    let mut rng = Rng::new(2);
    for aad_len in 0..=300 {
        let key_len = KEY_SIZES[aad_len % 3];
        let msg_len = rng.below(600);
        check_one(&mut rng, key_len, msg_len, aad_len);
    }
}

#[test]
fn long_messages_sampled_up_to_64k() {
    let mut rng = Rng::new(3);
    // Every tail length below a 16-block (256-byte) chunk, at sizes across the range.
    for i in 0..48 {
        let msg_len = 1025 + rng.below(64 * 1024 - 1025) / 256 * 256 + i * 16 / 3 % 256;
        let aad_len = rng.below(64);
        check_one(&mut rng, KEY_SIZES[i % 3], msg_len.min(64 * 1024), aad_len);
    }
    check_one(&mut rng, 16, 64 * 1024, 13);
    check_one(&mut rng, 32, 64 * 1024 - 1, 0);
}

/// The bulk loops step their counters by other means than adding (the VAES-512 kernel
/// XORs precomputed deltas, whose choice depends on where in a 16-block iteration the low
/// nibble wraps and on how far a carry runs); every way a counter can carry must still
/// match the portable CTR. Each residue mod 16 puts the wrap point in a different lane;
/// the bases make carries run through 4, 8, 12, 16, 28 and all 32 bits mid-message.
#[test]
fn counter_carries_and_32_bit_wrap() {
    let mut rng = Rng::new(4);
    let bases: [u32; 7] = [
        0,
        0xc0,
        0xff00,
        0x00ff_f000,
        0x0fff_ff00,
        0x7fff_ffd0,
        0xffff_ff00,
    ];
    let starts = bases
        .iter()
        .flat_map(|&b| (0..16).map(move |r| b.wrapping_add(r)))
        // `2 mod 8` starts, like a 96-bit nonce's first counter (2): a wrap inside an
        // 8-block batch of the AES-NI kernel and at a batch boundary.
        .chain([
            0xdf,
            0xe1,
            0xfa,
            0xffff_ff82,
            0xffff_fff0,
            0xffff_fffa,
            0xffff_fffe,
        ])
        .chain([0xffff_ffe7])
        .collect::<Vec<u32>>();
    for key_len in KEY_SIZES {
        let key = rng.bytes(key_len);
        let all = keys(&key);
        let reference = GcmKey::new_with_backend(&key, Backend::Portable).unwrap();
        for &start in &starts {
            for len in [1, 255, 256, 257, 511, 4096 + 33, 9000] {
                let mut block = [0u8; 16];
                rng.fill(&mut block[..12]);
                block[12..].copy_from_slice(&start.to_be_bytes());
                let data = rng.bytes(len);
                let mut want = data.clone();
                reference.ctr32_apply_keystream(&block, &mut want);
                for k in &all {
                    let mut got = data.clone();
                    k.ctr32_apply_keystream(&block, &mut got);
                    assert!(got == want, "{:?} start {start:#x} len {len}", k.backend());
                }
            }
        }
    }
}

/// Nonces of other lengths than 96 bits make `J0` a GHASH under the secret hash key, so
/// the kernels step their counters without looking at them (the fast schemes are chosen
/// by the nonce length): those paths, over several bulk iterations and tails, with the
/// counter landing anywhere, must agree with the portable back end, and a failed open in
/// place must leave the ciphertext as it was.
#[test]
fn other_nonce_lengths_every_back_end() {
    let mut rng = Rng::new(5);
    for key_len in KEY_SIZES {
        let key = rng.bytes(key_len);
        let all = keys(&key);
        let reference = GcmKey::new_with_backend(&key, Backend::Portable).unwrap();
        for nonce_len in [1, 8, 13, 16, 60] {
            for msg_len in [0, 15, 16, 255, 256, 257, 600, 1024 + 17, 4096, 5000] {
                let nonce = rng.bytes(nonce_len);
                let aad = rng.bytes(13);
                let msg = rng.bytes(msg_len);
                let mut want = msg.clone();
                let want_tag = reference.seal_in_place(&nonce, &aad, &mut want).unwrap();
                for k in &all {
                    let what = format!("{:?} nonce {nonce_len} len {msg_len}", k.backend());
                    let mut buf = msg.clone();
                    let tag = k.seal_in_place(&nonce, &aad, &mut buf).unwrap();
                    assert!(buf == want && tag == want_tag, "seal: {what}");
                    let mut bad = tag;
                    bad[0] ^= 1;
                    assert!(k.open_in_place(&nonce, &aad, &mut buf, &bad).is_err());
                    assert!(buf == want, "failed open must restore: {what}");
                    k.open_in_place(&nonce, &aad, &mut buf, &tag).unwrap();
                    assert!(buf == msg, "open: {what}");
                }
            }
        }
    }
}

//! Seals and opens one message on every back end this CPU has, with `GcmKey` directly:
//! the API that `aes-gcm-vaes` and `tls-cbc-aead` build on, and the kernels' callers that
//! `benches/mca.sh` compiles to find the `Vaes256` loop (the library alone instantiates
//! no kernel: its entry points are `#[inline]`, instantiated in the crates that call them).
//!
//! Run with `cargo run --release -p gcm-core --example seal_open`.

use gcm_core::{Backend, GcmKey};

fn main() {
    let key = [0x42u8; 32];
    let nonce = [7u8; 12];
    let aad = b"header";
    let message = b"a message of more than one block, to run the bulk loop";
    for backend in Backend::ALL {
        let Ok(gcm) = GcmKey::new_with_backend(&key, backend) else {
            println!("{backend:?}: not available on this CPU");
            continue;
        };
        let mut buf = *message;
        let tag = gcm
            .seal_in_place(&nonce, aad, &mut buf)
            .expect("lengths are valid");
        gcm.open_in_place(&nonce, aad, &mut buf, &tag)
            .expect("the tag just made authenticates");
        assert_eq!(&buf, message);
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        println!(
            "{backend:?}: sealed and opened {} bytes, tag {hex}",
            buf.len()
        );
    }
}

//! The `aead` 0.5 traits (`KeyInit`, `AeadCore`, `AeadInPlace`), for programs still on
//! `aes-gcm` 0.10: the same key object answers both trait generations.

use crate::{AesGcm, AesKeySize, TagSize};
use aead05::{AeadCore, AeadInPlace, consts::U0};
use crypto_common01::{KeyInit, KeySizeUser};
use generic_array014::{ArrayLength, GenericArray};

impl<Aes, NonceSize, Tag> KeySizeUser for AesGcm<Aes, NonceSize, Tag>
where
    Aes: AesKeySize,
    Aes::KeySize: ArrayLength<u8>,
    Tag: TagSize,
{
    type KeySize = Aes::KeySize;
}

impl<Aes, NonceSize, Tag> KeyInit for AesGcm<Aes, NonceSize, Tag>
where
    Aes: AesKeySize,
    Aes::KeySize: ArrayLength<u8>,
    Tag: TagSize,
{
    fn new(key: &GenericArray<u8, Self::KeySize>) -> Self {
        Self::wrap(gcm_core::GcmKey::new(key).expect("AES key sizes are 16, 24 or 32 bytes"))
    }
}

impl<Aes, NonceSize, Tag> AeadCore for AesGcm<Aes, NonceSize, Tag>
where
    NonceSize: ArrayLength<u8>,
    Tag: TagSize + ArrayLength<u8>,
{
    type NonceSize = NonceSize;
    type TagSize = Tag;
    type CiphertextOverhead = U0;
}

impl<Aes, NonceSize, Tag> AeadInPlace for AesGcm<Aes, NonceSize, Tag>
where
    NonceSize: ArrayLength<u8>,
    Tag: TagSize + ArrayLength<u8>,
{
    fn encrypt_in_place_detached(
        &self,
        nonce: &GenericArray<u8, NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
    ) -> aead05::Result<GenericArray<u8, Tag>> {
        let full = self
            .key
            .seal_in_place(nonce, associated_data, buffer)
            .map_err(|_| aead05::Error)?;
        Ok(GenericArray::clone_from_slice(&full[..Tag::USIZE]))
    }

    fn decrypt_in_place_detached(
        &self,
        nonce: &GenericArray<u8, NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
        tag: &GenericArray<u8, Tag>,
    ) -> aead05::Result<()> {
        self.key
            .open_in_place(nonce, associated_data, buffer, tag)
            .map_err(|_| aead05::Error)
    }
}

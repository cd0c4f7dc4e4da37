//! The `aead` 0.5 generation, for programs still on `aes-gcm` 0.10: its traits
//! (`KeyInit`, `AeadCore`, `AeadInPlace`) on the same key object as the 0.6 ones, and
//! [`Cipher04`], through which `cipher` 0.4 block ciphers (the `aes` 0.8 types among them)
//! become `AesGcm`'s cipher, as `aes-gcm` 0.10 takes them.

use crate::{AesGcm, AesKeySize, TagSize, dispatch};
use aead05::{AeadCore, AeadInPlace, consts::U0};
use cipher::{
    Block, BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, InOut,
    InOutBuf, ParBlocks, ParBlocksSizeUser,
    consts::{U8, U16},
};
use cipher04::{BlockEncrypt as BlockEncrypt04, BlockSizeUser as BlockSizeUser04};
use core::fmt;
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
        Self::aes_from_key_bytes(key)
    }
}

impl<C, NonceSize, Tag> KeySizeUser for AesGcm<Cipher04<C>, NonceSize, Tag>
where
    C: KeySizeUser,
    Tag: TagSize,
{
    type KeySize = C::KeySize;
}

/// The `aes` 0.8 AES types run on the kernels; any other `cipher` 0.4 block cipher takes
/// the generic path.
impl<C, NonceSize, Tag> KeyInit for AesGcm<Cipher04<C>, NonceSize, Tag>
where
    C: BlockSizeUser04<BlockSize = U16> + BlockEncrypt04 + KeyInit,
    Tag: TagSize,
{
    fn new(key: &GenericArray<u8, Self::KeySize>) -> Self {
        if dispatch::is_aes08::<C>() {
            Self::aes_from_key_bytes(key)
        } else {
            Cipher04(C::new(key)).into()
        }
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
    Aes: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
    NonceSize: ArrayLength<u8>,
    Tag: TagSize + ArrayLength<u8>,
{
    fn encrypt_in_place_detached(
        &self,
        nonce: &GenericArray<u8, NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
    ) -> aead05::Result<GenericArray<u8, Tag>> {
        let tag = self
            .seal(nonce, associated_data, buffer.into())
            .map_err(|_| aead05::Error)?;
        Ok(GenericArray::clone_from_slice(&tag))
    }

    fn decrypt_in_place_detached(
        &self,
        nonce: &GenericArray<u8, NonceSize>,
        associated_data: &[u8],
        buffer: &mut [u8],
        tag: &GenericArray<u8, Tag>,
    ) -> aead05::Result<()> {
        self.open(nonce, associated_data, buffer.into(), tag)
            .map_err(|_| aead05::Error)
    }
}

/// A `cipher` 0.4 block cipher with 16-byte blocks seen through the `cipher` 0.5 traits
/// `AesGcm` asks of its cipher, as `aes-gcm` 0.10 took them: `AesGcm<Cipher04<C>, ..>`
/// has the `aead` 0.5 traits, with `crypto-common` 0.1's `KeyInit`. With an `aes` 0.8
/// AES type and a key, it runs on the AES kernels; with another cipher, or made from a
/// cipher value, on the generic path with `C`'s own block function.
#[derive(Clone)]
pub struct Cipher04<C>(pub C);

impl<C> fmt::Debug for Cipher04<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cipher04").finish_non_exhaustive()
    }
}

impl<C: BlockSizeUser04<BlockSize = U16>> BlockSizeUser for Cipher04<C> {
    type BlockSize = U16;
}

impl<C> BlockCipherEncrypt for Cipher04<C>
where
    C: BlockSizeUser04<BlockSize = U16> + BlockEncrypt04,
{
    fn encrypt_with_backend(&self, f: impl BlockCipherEncClosure<BlockSize = U16>) {
        f.call(&Backend04(&self.0));
    }
}

#[cfg(feature = "zeroize")]
impl<C: zeroize::ZeroizeOnDrop> zeroize::ZeroizeOnDrop for Cipher04<C> {}

/// Hands blocks to the `cipher` 0.4 cipher, eight at a time so that its own parallel
/// back end runs.
struct Backend04<'a, C>(&'a C);

/// Blocks per call to the `cipher` 0.4 cipher (`aes` 0.8 runs 8 in parallel).
type Par04 = U8;

impl<C> BlockSizeUser for Backend04<'_, C> {
    type BlockSize = U16;
}

impl<C> ParBlocksSizeUser for Backend04<'_, C> {
    type ParBlocksSize = Par04;
}

impl<C> Backend04<'_, C>
where
    C: BlockSizeUser04<BlockSize = U16> + BlockEncrypt04,
{
    fn encrypt_buf(&self, mut blocks: InOutBuf<'_, '_, Block<Self>>) {
        let mut batch = [GenericArray::<u8, U16>::default(); 8];
        while !blocks.is_empty() {
            let n = blocks.len().min(batch.len());
            let (mut head, tail) = blocks.split_at(n);
            for (b, input) in batch.iter_mut().zip(head.get_in()) {
                b.copy_from_slice(input);
            }
            self.0.encrypt_blocks(&mut batch[..n]);
            for (out, b) in head.get_out().iter_mut().zip(&batch) {
                out.copy_from_slice(b);
            }
            blocks = tail;
        }
    }
}

impl<C> BlockCipherEncBackend for Backend04<'_, C>
where
    C: BlockSizeUser04<BlockSize = U16> + BlockEncrypt04,
{
    fn encrypt_block(&self, block: InOut<'_, '_, Block<Self>>) {
        let out = block.into_out_with_copied_in();
        self.0
            .encrypt_block(GenericArray::from_mut_slice(out.as_mut_slice()));
    }

    fn encrypt_par_blocks(&self, blocks: InOut<'_, '_, ParBlocks<Self>>) {
        self.encrypt_buf(blocks.into_buf());
    }

    fn encrypt_tail_blocks(&self, blocks: InOutBuf<'_, '_, Block<Self>>) {
        self.encrypt_buf(blocks);
    }
}

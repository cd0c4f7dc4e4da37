//! GCM over a block cipher that is not one of the AES types the kernels take (SM4, ARIA,
//! Camellia, or an AES whose round keys are out of reach): counter mode through the
//! cipher's own block function, GHASH on `gcm_core`'s engine. Two passes, as in
//! RustCrypto `aes-gcm`, whose behaviour it follows (NIST SP 800-38D), with this crate's
//! rules on top: an empty nonce is an error, and a failed open leaves no plaintext (the
//! tag is checked before anything is decrypted; a separate output buffer is zeroed).

use aead::{Error, array::Array, consts::U16, inout::InOutBuf};
use cipher::{BlockCipherEncrypt, BlockSizeUser};
use gcm_core::{Backend, ghash::GHash};
use subtle::ConstantTimeEq;
use universal_hash::{KeyInit, UniversalHash};

type Block = Array<u8, U16>;

/// Counter blocks encrypted per call to the cipher: enough for any parallel back end of
/// the RustCrypto ciphers to run full width, small enough for the stack.
const CTR_BLOCKS: usize = 32;

/// The cipher and the GHASH keyed with `H = E_K(0^128)`, whose accumulator stays at zero:
/// each message hashes on a copy.
#[derive(Clone)]
pub(crate) struct GenericGcm<C> {
    cipher: C,
    ghash: GHash,
}

impl<C> GenericGcm<C> {
    /// The back end GHASH runs on.
    pub(crate) fn ghash_backend(&self) -> Backend {
        self.ghash.backend()
    }
}

impl<C> GenericGcm<C>
where
    C: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
{
    pub(crate) fn new(cipher: C) -> Self {
        let mut h = Block::default();
        cipher.encrypt_block(&mut h);
        let ghash = GHash::new(&h);
        #[cfg(feature = "zeroize")]
        zeroize::Zeroize::zeroize(h.as_mut_slice());
        Self { cipher, ghash }
    }

    /// Encrypts from the input of `buf` to its output and returns the full 16-byte tag.
    #[inline(never)]
    pub(crate) fn seal(
        &self,
        nonce: &[u8],
        aad: &[u8],
        mut buf: InOutBuf<'_, '_, u8>,
    ) -> Result<[u8; 16], Error> {
        check_lengths(nonce, aad.len(), buf.len())?;
        let j0 = self.pre_counter_block(nonce);
        self.apply_keystream(inc32(j0), buf.reborrow());
        Ok(self.tag(&j0, aad, buf.get_out()))
    }

    /// Checks `tag` (a prefix of the full tag, 4 to 16 bytes) over the input of `buf`, in
    /// constant time, and only then decrypts it to the output. On failure an in-place
    /// buffer is untouched and a separate output buffer is zeroed.
    #[inline(never)]
    pub(crate) fn open(
        &self,
        nonce: &[u8],
        aad: &[u8],
        mut buf: InOutBuf<'_, '_, u8>,
        tag: &[u8],
    ) -> Result<(), Error> {
        check_lengths(nonce, aad.len(), buf.len())?;
        if !(4..=16).contains(&tag.len()) {
            return Err(Error);
        }
        let j0 = self.pre_counter_block(nonce);
        let expected = self.tag(&j0, aad, buf.get_in());
        if bool::from(expected[..tag.len()].ct_eq(tag)) {
            self.apply_keystream(inc32(j0), buf);
            return Ok(());
        }
        if !core::ptr::eq(buf.get_in().as_ptr(), buf.get_out().as_ptr()) {
            buf.get_out().fill(0);
        }
        Err(Error)
    }

    /// `J0`: the nonce followed by a 32-bit 1 for 96-bit nonces, otherwise
    /// GHASH(nonce zero-padded || 0^64 || bit length of the nonce) (SP 800-38D §7.1).
    fn pre_counter_block(&self, nonce: &[u8]) -> Block {
        let mut j0 = Block::default();
        if nonce.len() == 12 {
            j0[..12].copy_from_slice(nonce);
            j0[15] = 1;
            return j0;
        }
        let mut ghash = self.ghash.clone();
        ghash.update_padded(nonce);
        j0[8..].copy_from_slice(&(nonce.len() as u64 * 8).to_be_bytes());
        ghash.update(&[j0]);
        ghash.finalize()
    }

    /// GHASH over the associated data and the ciphertext, masked with `E_K(J0)`.
    fn tag(&self, j0: &Block, aad: &[u8], ciphertext: &[u8]) -> [u8; 16] {
        let mut ghash = self.ghash.clone();
        ghash.update_padded(aad);
        ghash.update_padded(ciphertext);
        let mut lengths = Block::default();
        lengths[..8].copy_from_slice(&(aad.len() as u64 * 8).to_be_bytes());
        lengths[8..].copy_from_slice(&(ciphertext.len() as u64 * 8).to_be_bytes());
        ghash.update(&[lengths]);
        let mut mask = *j0;
        self.cipher.encrypt_block(&mut mask);
        let hash = ghash.finalize();
        core::array::from_fn(|i| hash[i] ^ mask[i])
    }

    /// XORs the keystream from counter block `counter` (32-bit big-endian increment, as
    /// GCM's `inc32`) from the input of `buf` into its output.
    fn apply_keystream(&self, mut counter: Block, mut buf: InOutBuf<'_, '_, u8>) {
        let mut keystream = [Block::default(); CTR_BLOCKS];
        while !buf.is_empty() {
            let n = buf.len().min(CTR_BLOCKS * 16);
            let blocks = &mut keystream[..n.div_ceil(16)];
            for block in blocks.iter_mut() {
                *block = counter;
                counter = inc32(counter);
            }
            self.cipher.encrypt_blocks(blocks);
            let (mut head, tail) = buf.split_at(n);
            head.xor_in2out(&Array::slice_as_flattened(blocks)[..n]);
            buf = tail;
        }
    }
}

fn check_lengths(nonce: &[u8], aad_len: usize, msg_len: usize) -> Result<(), Error> {
    let too_long = aad_len as u64 > gcm_core::A_MAX || msg_len as u64 > gcm_core::P_MAX;
    if nonce.is_empty() || too_long {
        return Err(Error);
    }
    Ok(())
}

/// The next counter block: the last 32 bits incremented modulo 2^32.
fn inc32(mut block: Block) -> Block {
    let c = u32::from_be_bytes([block[12], block[13], block[14], block[15]]).wrapping_add(1);
    block[12..].copy_from_slice(&c.to_be_bytes());
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With AES as the block function, the generic path gives what the kernels give, on
    /// every back end this CPU has, for 96-bit and other nonces, across the batch size.
    #[test]
    fn matches_the_kernels_with_aes() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8 * 3);
        let generic = GenericGcm::new(<aes::Aes128 as cipher::KeyInit>::new(&key.into()));
        let data: [u8; 1100] = core::array::from_fn(|i| (i * 7 % 253) as u8);
        for backend in Backend::available() {
            let kernels = gcm_core::GcmKey::new_with_backend(&key, backend).unwrap();
            for nonce in [&[9u8; 12][..], &[4u8; 1][..], &[5u8; 60][..]] {
                for len in [0, 1, 15, 16, 17, 511, 512, 513, 1100] {
                    let (mut a, mut b) = (data, data);
                    let ta = generic.seal(nonce, b"ad", (&mut a[..len]).into());
                    let ta = ta.unwrap_or_else(|_| panic!("seal"));
                    let tb = kernels.seal_in_place(nonce, b"ad", &mut b[..len]).unwrap();
                    assert_eq!((ta, &a[..len]), (tb, &b[..len]), "{backend:?} {len}");
                    let opened = generic.open(nonce, b"ad", (&mut a[..len]).into(), &ta[..13]);
                    assert!(opened.is_ok() && a[..len] == data[..len]);
                }
            }
        }
    }

    #[test]
    fn counter_wraps_modulo_2_32() {
        let b = inc32(Block::from([0xff; 16]));
        assert_eq!((&b[..12], &b[12..]), (&[0xff; 12][..], &[0u8; 4][..]));
    }
}

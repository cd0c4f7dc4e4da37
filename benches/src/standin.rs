//! Temporary stand-ins for `gcm_core` and `aes_gcm_vaes` with the API the lead's contract
//! promises, built on RustCrypto `aes-gcm` and `aes`, so the tool can be written and tested
//! before those crates land. Only [`crate::ours`] names this module; it goes once they land.

pub mod gcm_core {
    use aes_gcm::aes::cipher::{BlockCipherEncrypt, KeyInit};
    use aes_gcm::aes::{Aes128, Aes256};

    /// Mirrors `gcm_core::Backend`; the stand-in only has the portable one.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Backend {
        Vaes512,
        Vaes256,
        AesNi,
        Portable,
    }

    impl Backend {
        pub const ALL: [Backend; 4] = [
            Backend::Vaes512,
            Backend::Vaes256,
            Backend::AesNi,
            Backend::Portable,
        ];

        pub fn detect() -> Backend {
            Backend::Portable
        }

        pub fn is_available(self) -> bool {
            self == Backend::Portable
        }

        pub fn available() -> impl Iterator<Item = Backend> {
            Self::ALL.into_iter().filter(|b| b.is_available())
        }

        pub fn name(self) -> &'static str {
            match self {
                Backend::Vaes512 => "vaes512",
                Backend::Vaes256 => "vaes256",
                Backend::AesNi => "aesni",
                Backend::Portable => "portable",
            }
        }
    }

    impl core::str::FromStr for Backend {
        type Err = Error;
        fn from_str(s: &str) -> Result<Self, Error> {
            Self::ALL.into_iter().find(|b| b.name() == s).ok_or(Error)
        }
    }

    #[derive(Debug)]
    pub struct Error;

    impl core::fmt::Display for Error {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("stand-in gcm_core error")
        }
    }

    impl core::error::Error for Error {}

    enum Aes {
        A128(Aes128),
        A256(Aes256),
    }

    impl core::fmt::Debug for GcmKey {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("GcmKey { .. }")
        }
    }

    /// Only what the tool calls: construction and the AES-CTR roofline loop.
    pub struct GcmKey {
        aes: Aes,
        backend: Backend,
    }

    impl GcmKey {
        pub fn new(key: &[u8]) -> Result<GcmKey, Error> {
            Self::new_with_backend(key, Backend::detect())
        }

        pub fn new_with_backend(key: &[u8], backend: Backend) -> Result<GcmKey, Error> {
            if !backend.is_available() {
                return Err(Error);
            }
            let aes = match key.len() {
                16 => Aes::A128(Aes128::new_from_slice(key).map_err(|_| Error)?),
                32 => Aes::A256(Aes256::new_from_slice(key).map_err(|_| Error)?),
                _ => return Err(Error),
            };
            Ok(GcmKey { aes, backend })
        }

        pub fn backend(&self) -> Backend {
            self.backend
        }

        pub fn ctr32_apply_keystream(&self, counter_block: &[u8; 16], buf: &mut [u8]) {
            let mut ctr = *counter_block;
            for chunk in buf.chunks_mut(16) {
                let mut block = ctr.into();
                match &self.aes {
                    Aes::A128(a) => a.encrypt_block(&mut block),
                    Aes::A256(a) => a.encrypt_block(&mut block),
                }
                for (b, k) in chunk.iter_mut().zip(block.iter()) {
                    *b ^= k;
                }
                let n = u32::from_be_bytes([ctr[12], ctr[13], ctr[14], ctr[15]]).wrapping_add(1);
                ctr[12..].copy_from_slice(&n.to_be_bytes());
            }
        }
    }
}

pub mod aes_gcm_vaes {
    use aead::consts::U12;
    use aead::inout::InOutBuf;
    use aead::{AeadCore, AeadInOut, Key, KeyInit, KeySizeUser, Nonce, Tag, TagPosition};
    use aes_gcm::aes::cipher::{BlockCipherEncrypt, BlockSizeUser, consts::U16};
    use aes_gcm::aes::{Aes128, Aes256};

    use super::gcm_core::Backend;

    /// Mirrors `aes_gcm_vaes::AesGcm` over RustCrypto's implementation.
    #[derive(Clone)]
    pub struct AesGcm<A>(aes_gcm::AesGcm<A, U12>);

    pub type Aes128Gcm = AesGcm<Aes128>;
    pub type Aes256Gcm = AesGcm<Aes256>;

    impl<A> core::fmt::Debug for AesGcm<A> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("AesGcm { .. }")
        }
    }

    impl<A: KeySizeUser> KeySizeUser for AesGcm<A> {
        type KeySize = A::KeySize;
    }

    impl<A> KeyInit for AesGcm<A>
    where
        A: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt + KeyInit,
    {
        fn new(key: &Key<Self>) -> Self {
            AesGcm(aes_gcm::AesGcm::new(key))
        }
    }

    impl<A> AesGcm<A>
    where
        A: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt + KeyInit,
    {
        pub fn new_with_backend(key: &Key<Self>, backend: Backend) -> Result<Self, aead::Error> {
            if backend.is_available() {
                Ok(Self::new(key))
            } else {
                Err(aead::Error)
            }
        }

        pub fn backend(&self) -> Backend {
            Backend::Portable
        }
    }

    impl<A> AeadCore for AesGcm<A> {
        type NonceSize = U12;
        type TagSize = U16;
        const TAG_POSITION: TagPosition = TagPosition::Postfix;
    }

    impl<A> AeadInOut for AesGcm<A>
    where
        A: BlockSizeUser<BlockSize = U16> + BlockCipherEncrypt,
    {
        fn encrypt_inout_detached(
            &self,
            nonce: &Nonce<Self>,
            aad: &[u8],
            buf: InOutBuf<'_, '_, u8>,
        ) -> aead::Result<Tag<Self>> {
            self.0.encrypt_inout_detached(nonce, aad, buf)
        }

        fn decrypt_inout_detached(
            &self,
            nonce: &Nonce<Self>,
            aad: &[u8],
            buf: InOutBuf<'_, '_, u8>,
            tag: &Tag<Self>,
        ) -> aead::Result<()> {
            self.0.decrypt_inout_detached(nonce, aad, buf, tag)
        }
    }
}

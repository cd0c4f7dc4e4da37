//! The GCM key and the seal/open driver: limits, the pre-counter block `J0`, dispatch to
//! the back end stored in the key, the tag check and what happens to the buffer when it
//! fails.

use crate::{Backend, Error, portable};
use core::mem::ManuallyDrop;
use inout::InOutBuf;
use subtle::ConstantTimeEq;

#[cfg(target_arch = "x86_64")]
use crate::x86_64::{
    AesNiAvxToken, AesNiToken, HwKey, InOut, Vaes256Token, Vaes512Token, aesni_gcm, vaes256_gcm,
    vaes512_gcm,
};

/// Length of a full GCM tag.
pub const TAG_LEN: usize = 16;

/// Longest associated data, in bytes: 2^61 - 1 (NIST SP 800-38D, 2^64 - 1 bits).
pub const A_MAX: u64 = (1 << 61) - 1;

/// Longest message, in bytes: 2^36 - 32 (SP 800-38D: 2^39 - 256 bits, so that the 32-bit
/// block counter never wraps back onto the block that masks the tag).
pub const P_MAX: u64 = (1 << 36) - 32;

/// An AES-GCM key: AES round keys, hash-key powers and the back end that uses them.
///
/// Made once; sealing and opening borrow it immutably and allocate nothing, so one key can
/// serve many threads at once.
#[derive(Clone)]
pub struct GcmKey {
    /// Dropped by hand in `Drop`, so that the whole key can be wiped after its parts.
    engine: ManuallyDrop<Engine>,
    key_len: u8,
}

/// The back end with its key material. Each hardware variant carries the token that
/// proves its CPU features were checked when the key was made.
///
/// `repr(u8)`, whose layout the language defines (a union of `repr(C)` structs, each
/// starting with the `u8` tag), so that [`GcmKey::new_with_backend`] can make a
/// hardware variant with a zero key in the key's own memory (see `zero_hw_engine`).
#[derive(Clone)]
#[repr(u8)]
pub(crate) enum Engine {
    #[cfg(target_arch = "x86_64")]
    Vaes512(HwKey, Vaes512Token) = HW_VAES512,
    #[cfg(target_arch = "x86_64")]
    Vaes256(HwKey, Vaes256Token) = HW_VAES256,
    #[cfg(target_arch = "x86_64")]
    AesNi(HwKey, AesNiToken) = HW_AESNI,
    /// `Backend::AesNi` on a CPU with AVX: the same kernel, its bulk loop VEX-encoded.
    #[cfg(target_arch = "x86_64")]
    AesNiVex(HwKey, AesNiAvxToken) = HW_AESNI_VEX,
    Portable(portable::Key) = 4,
}

// The tags of the hardware variants, for `zero_hw_engine`.
#[cfg(target_arch = "x86_64")]
const HW_VAES512: u8 = 0;
#[cfg(target_arch = "x86_64")]
const HW_VAES256: u8 = 1;
#[cfg(target_arch = "x86_64")]
const HW_AESNI: u8 = 2;
#[cfg(target_arch = "x86_64")]
const HW_AESNI_VEX: u8 = 3;

/// Makes `*engine` the hardware variant with tag `tag` and an all-zero `HwKey`, written in
/// place: a `memset` and the tag.
///
/// Built as a value (`Engine::Vaes512(HwKey::ZERO, t)`) and then moved into the key, the
/// 1.5 KB engine was zeroed in a temporary on the stack and copied with `memcpy`, whose
/// loads waited on the `memset`'s stores. Written in place, on an AMD EPYC Zen 4 (family
/// 25 model 17), `GcmKey::new` went from 139 to 125 ns (AES-128) and from 120 to 107 ns
/// (AES-256), and the other back ends' key set-up by 10 to 12 ns (the `speed` tool's key
/// set-up figures, three alternated runs).
///
/// # Safety
/// `engine` is valid for writes of an `Engine`, and `tag` is one of the `HW_*` tags, of a
/// variant whose token the caller has obtained (its features checked): the tokens are
/// zero-sized, so the variant's only bytes are the tag and its `HwKey`.
#[cfg(target_arch = "x86_64")]
unsafe fn zero_hw_engine(engine: *mut Engine, tag: u8) {
    const {
        use core::mem::size_of;
        assert!(size_of::<Vaes512Token>() == 0 && size_of::<Vaes256Token>() == 0);
        assert!(size_of::<AesNiToken>() == 0 && size_of::<AesNiAvxToken>() == 0);
    };
    // SAFETY: the caller gives a writable `Engine`. `Engine` is `repr(u8)`, so each
    // variant is laid out as a `repr(C)` struct whose first field is the `u8` tag: all
    // zero bytes but the tag is a hardware variant whose `HwKey` is all zero (a valid
    // `HwKey`: plain data) and whose token is zero-sized.
    unsafe {
        engine
            .cast::<u8>()
            .write_bytes(0, core::mem::size_of::<Engine>());
        engine.cast::<u8>().write(tag);
    }
}

/// The `Engine` tag for a hardware `backend`, if this CPU can run it (its token made).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hw_tag(backend: Backend) -> Option<u8> {
    match backend {
        Backend::Vaes512 => Vaes512Token::new().map(|_| HW_VAES512),
        Backend::Vaes256 => Vaes256Token::new().map(|_| HW_VAES256),
        Backend::AesNi => AesNiToken::new().map(|_| match AesNiAvxToken::new() {
            Some(_) => HW_AESNI_VEX,
            None => HW_AESNI,
        }),
        _ => None,
    }
}

impl core::fmt::Debug for GcmKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GcmKey")
            .field("key_bits", &(usize::from(self.key_len) * 8))
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}

impl GcmKey {
    /// A key for the best back end this CPU supports. `key` is 16, 24 or 32 bytes.
    pub fn new(key: &[u8]) -> Result<Self, Error> {
        Self::new_with_backend(key, Backend::detect())
    }

    /// A key that uses `backend`, or [`Error::BackendUnavailable`] if this CPU lacks it.
    pub fn new_with_backend(key: &[u8], backend: Backend) -> Result<Self, Error> {
        if !matches!(key.len(), 16 | 24 | 32) {
            return Err(Error::InvalidKeyLength);
        }
        if !backend.is_available() {
            return Err(Error::BackendUnavailable);
        }
        Ok(Self::new_or_portable(key, backend))
    }

    /// [`Self::new_with_backend`] without its `Result`, for a caller that wraps the key
    /// (`aes-gcm-vaes`): where this CPU lacks `backend`, a key on the portable back end
    /// (the caller checks [`Backend::is_available`] first); a key not of 16, 24 or 32
    /// bytes panics. Returned as is, the key reaches a wrapper's memory uncopied, which
    /// through the `Result` it did not (two `memcpy`s of 1.6 KB in `aes-gcm-vaes`).
    ///
    /// A hardware key is built where it will be returned: [`Self::fill_hw`] (not
    /// inlined) writes every byte of a slot that is only ever handed to it and then
    /// moved out, which lets LLVM's call-slot optimisation give it the caller's return
    /// slot instead (with the slot filled here, a `memcpy` to the return slot remained:
    /// on Zen 4 `GcmKey::new` took 125 ns, now 111). The portable key is returned as
    /// built: through a slot it took longer.
    #[doc(hidden)]
    pub fn new_or_portable(key: &[u8], backend: Backend) -> Self {
        assert!(matches!(key.len(), 16 | 24 | 32), "AES key length");
        #[cfg(target_arch = "x86_64")]
        if let Some(tag) = hw_tag(backend) {
            let mut slot = core::mem::MaybeUninit::<Self>::uninit();
            // SAFETY: `tag` is the tag of a variant whose token `hw_tag` obtained.
            unsafe { Self::fill_hw(&mut slot, key, tag) };
            // SAFETY: `fill_hw` initialised it.
            return unsafe { slot.assume_init() };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = backend; // only the portable back end exists here
        Self {
            engine: ManuallyDrop::new(Engine::Portable(portable::Key::new(key))),
            key_len: key.len() as u8,
        }
    }

    /// Makes `slot` a key on the hardware variant `tag`: its engine zeroed with the tag
    /// written (see `zero_hw_engine`), the key length, then the round keys and powers
    /// derived in place (`HwKey::init` says why).
    ///
    /// # Safety
    /// `tag` is one of the `HW_*` tags, of a variant whose token this CPU can make.
    #[cfg(target_arch = "x86_64")]
    #[inline(never)]
    unsafe fn fill_hw(slot: &mut core::mem::MaybeUninit<Self>, key: &[u8], tag: u8) {
        let raw = slot.as_mut_ptr();
        // `ManuallyDrop<Engine>` has the layout of `Engine` (`repr(transparent)`).
        // SAFETY: a field of `slot`, in bounds and aligned; nothing is read from it.
        let engine = unsafe { core::ptr::addr_of_mut!((*raw).engine) }.cast::<Engine>();
        // SAFETY: `engine` and the key length are fields of `slot`, writable; `tag` is a
        // hardware tag (the caller's promise). With both written, `slot` holds a `Self`.
        let this = unsafe {
            zero_hw_engine(engine, tag);
            core::ptr::addr_of_mut!((*raw).key_len).write(key.len() as u8);
            slot.assume_init_mut()
        };
        match &mut *this.engine {
            Engine::Vaes512(k, t) => k.init(key, *t),
            Engine::Vaes256(k, t) => k.init(key, *t),
            Engine::AesNi(k, t) => k.init(key, *t),
            Engine::AesNiVex(k, t) => k.init(key, t.aesni()),
            // Not reached: a hardware tag was written.
            Engine::Portable(_) => {}
        }
    }

    /// The back end this key runs on.
    pub fn backend(&self) -> Backend {
        match *self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes512(..) => Backend::Vaes512,
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes256(..) => Backend::Vaes256,
            #[cfg(target_arch = "x86_64")]
            Engine::AesNi(..) | Engine::AesNiVex(..) => Backend::AesNi,
            Engine::Portable(_) => Backend::Portable,
        }
    }

    /// The AES key length in bytes (16, 24 or 32).
    pub fn key_len(&self) -> usize {
        self.key_len.into()
    }

    /// Encrypts `buf` in place and returns the 16-byte tag.
    #[inline]
    pub fn seal_in_place(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        self.seal_inout(nonce, aad, buf.into())
    }

    /// Decrypts `buf` in place if `tag` (4 to 16 bytes, a prefix of the full tag)
    /// authenticates it. On failure `buf` holds the ciphertext again, as before the call.
    #[inline]
    pub fn open_in_place(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8],
    ) -> Result<(), Error> {
        self.open_inout(nonce, aad, buf.into(), tag)
    }

    /// Encrypts from the input of `buf` to its output (which may be the same memory) and
    /// returns the 16-byte tag.
    // This and the other three entry points are inlined into their callers, so that the
    // buffer's pointers and length reach the kernel from registers: called, the function
    // received the `InOutBuf` in memory and copied its two pointers with one 16-byte load,
    // which waited on the caller's two 8-byte stores.
    #[inline]
    pub fn seal_inout(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: InOutBuf<'_, '_, u8>,
    ) -> Result<[u8; TAG_LEN], Error> {
        check_lengths(nonce, aad.len(), buf.len())?;
        let j0 = self.pre_counter_block(nonce);
        Ok(self.seal_or_open::<true>(j0, nonce.len() == 12, aad, buf))
    }

    /// Decrypts from the input of `buf` to its output if `tag` authenticates the message.
    ///
    /// `tag` may be truncated (4 to 16 bytes); it is compared in constant time. On failure
    /// no plaintext is left: an in-place buffer holds the ciphertext again, a separate
    /// output buffer is zeroed.
    #[inline]
    pub fn open_inout(
        &self,
        nonce: &[u8],
        aad: &[u8],
        mut buf: InOutBuf<'_, '_, u8>,
        tag: &[u8],
    ) -> Result<(), Error> {
        check_lengths(nonce, aad.len(), buf.len())?;
        if !(4..=TAG_LEN).contains(&tag.len()) {
            return Err(Error::InvalidTagLength);
        }
        let j0 = self.pre_counter_block(nonce);
        let expected = self.seal_or_open::<false>(j0, nonce.len() == 12, aad, buf.reborrow());
        // The accept bit is the one secret-derived value that becomes public here; the
        // `ct` annotation tells valgrind so under `ct-check` and is a no-op otherwise.
        let accept = crate::ct::declassify(tags_equal(&expected[..tag.len()], tag));
        if accept == 1 {
            return Ok(());
        }
        // The kernels decrypt while they hash, so the plaintext is already out. Undo it.
        let in_place = core::ptr::eq(buf.get_in().as_ptr(), buf.get_out().as_ptr());
        if in_place {
            // J0 is secret unless the nonce is 96 bits.
            self.apply_keystream(&inc32(&j0.to_le_bytes()), nonce.len() == 12, buf.get_out());
        } else {
            buf.get_out().fill(0);
        }
        Err(Error::AuthenticationFailed)
    }

    /// AES-CTR with a 32-bit big-endian block counter starting at `counter_block`, in
    /// place: the bulk loop of the back end without GHASH, with the counter code a GCM
    /// seal with a 96-bit nonce runs. For benchmarks (the roofline a GCM kernel is
    /// measured against). The counter block is treated as public, as a CTR IV is: the
    /// kernels may branch on it.
    #[doc(hidden)]
    pub fn ctr32_apply_keystream(&self, counter_block: &[u8; 16], buf: &mut [u8]) {
        self.apply_keystream(counter_block, true, buf)
    }

    /// CTR from `counter_block`; `public` says whether the kernel may let the counter's
    /// value steer it (see `kernel_entry_points!`).
    fn apply_keystream(&self, counter_block: &[u8; 16], public: bool, buf: &mut [u8]) {
        // Only the x86_64 kernels look at it.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = public;
        match &*self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes512(k, t) => {
                let io = raw(buf.into());
                // SAFETY: `io` is the in-place view of `buf`; the token proves the features.
                unsafe { vaes512_gcm::ctr(k, *t, counter_block, public, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes256(k, t) => {
                let io = raw(buf.into());
                // SAFETY: as above.
                unsafe { vaes256_gcm::ctr(k, *t, counter_block, public, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::AesNi(k, t) => {
                let io = raw(buf.into());
                // SAFETY: as above.
                unsafe { aesni_gcm::ctr(k, *t, counter_block, public, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::AesNiVex(k, t) => {
                let io = raw(buf.into());
                // SAFETY: as above.
                unsafe { aesni_gcm::vex::ctr(k, *t, counter_block, public, io) }
            }
            Engine::Portable(k) => k.apply_ctr(counter_block, buf.into()),
        }
    }

    /// The back end's seal (`ENC`) or open from the pre-counter block `j0` (`nonce96`:
    /// made from a 96-bit nonce, so its counter is public): the tag, or on open the
    /// expected tag. Always inlined into the four entry points, so that the buffer's
    /// pointers and length reach the kernel from registers (see [`Self::seal_inout`]).
    #[inline(always)]
    fn seal_or_open<const ENC: bool>(
        &self,
        j0: u128,
        nonce96: bool,
        aad: &[u8],
        buf: InOutBuf<'_, '_, u8>,
    ) -> [u8; TAG_LEN] {
        // Only the kernels step their counters by the nonce's kind.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = nonce96;
        match &*self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes512(k, t) => {
                let io = raw(buf);
                // SAFETY: `io` comes from an `InOutBuf` (valid, in place or disjoint); the
                // token proves the CPU features.
                unsafe { vaes512_gcm::seal_or_open_routed::<ENC>(k, *t, j0, nonce96, aad, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes256(k, t) => {
                let io = raw(buf);
                // SAFETY: as above.
                unsafe { vaes256_gcm::seal_or_open::<ENC>(k, *t, j0, nonce96, aad, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::AesNi(k, t) => {
                let io = raw(buf);
                // SAFETY: as above.
                unsafe { aesni_gcm::seal_or_open::<ENC>(k, *t, j0, nonce96, aad, io) }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::AesNiVex(k, t) => {
                let io = raw(buf);
                // SAFETY: as above.
                unsafe { aesni_gcm::vex::seal_or_open::<ENC>(k, *t, j0, nonce96, aad, io) }
            }
            Engine::Portable(k) if ENC => k.seal(&j0.to_le_bytes(), aad, buf),
            Engine::Portable(k) => k.open(&j0.to_le_bytes(), aad, buf),
        }
    }

    /// `J0`: the nonce followed by a 32-bit 1 for 96-bit nonces, otherwise
    /// GHASH(nonce zero-padded || 0^64 || bit length of the nonce) (SP 800-38D §7.1).
    ///
    /// As the little-endian `u128` of its bytes: built in two registers, it reaches the
    /// kernels in registers too (`x86_64::load_j0`). Copying the nonce into a zeroed array
    /// compiled to byte and word stores followed by a wider load of the same bytes, which
    /// waits for the stores to reach the cache instead of being forwarded.
    fn pre_counter_block(&self, nonce: &[u8]) -> u128 {
        if let Ok(n) = <&[u8; 12]>::try_from(nonce) {
            let lo = u64::from_le_bytes([n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]);
            let hi = u64::from(u32::from_le_bytes([n[8], n[9], n[10], n[11]])) | 1 << 56;
            return u128::from(hi) << 64 | u128::from(lo);
        }
        let mut lens = [0u8; 16];
        lens[8..].copy_from_slice(&((nonce.len() as u64).wrapping_mul(8)).to_be_bytes());
        u128::from_le_bytes(match &*self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes512(k, t) => crate::x86_64::ghash_parts(&k.h, t.aesni(), &[nonce, &lens]),
            #[cfg(target_arch = "x86_64")]
            Engine::Vaes256(k, t) => crate::x86_64::ghash_parts(&k.h, t.aesni(), &[nonce, &lens]),
            #[cfg(target_arch = "x86_64")]
            Engine::AesNi(k, t) => crate::x86_64::ghash_parts(&k.h, *t, &[nonce, &lens]),
            #[cfg(target_arch = "x86_64")]
            Engine::AesNiVex(k, t) => crate::x86_64::ghash_parts(&k.h, t.aesni(), &[nonce, &lens]),
            Engine::Portable(k) => k.ghash(&[nonce, &lens]),
        })
    }
}

/// With `zeroize`, dropping a key wipes its round keys and hash-key powers: `HwKey` and
/// the RustCrypto `aes`/`ghash` types (portable back end) each do so in their `Drop`, and
/// then the key's own `Drop` wipes all of it, including the bytes of the enum that the
/// back end in use does not cover: the variants differ in size, and the unused tail of a
/// smaller one holds whatever the construction left there (seen: raw key bytes after the
/// tail of a portable key built from `aes::Aes128`, once the hardware key grew past it).
#[cfg(feature = "zeroize")]
impl zeroize::ZeroizeOnDrop for GcmKey {}

impl Drop for GcmKey {
    fn drop(&mut self) {
        // SAFETY: `engine` is dropped once, here, and not used again.
        unsafe { ManuallyDrop::drop(&mut self.engine) };
        #[cfg(feature = "zeroize")]
        // SAFETY: what is left is dead bytes of a value that is not used again (the
        // engine was dropped above and `ManuallyDrop` keeps the compiler from dropping
        // it twice); writing zeros over them is all this does.
        unsafe {
            zeroize::zeroize_flat_type(self)
        };
    }
}

macro_rules! from_ciphers {
    ($($ours:ident, $theirs:ident, $variant:ident, $len:literal;)*) => {$(
        /// Takes over the key schedule of this crate's AES type: same back end, no second
        /// expansion (the decryption schedule is dropped).
        impl From<crate::aes::$ours> for GcmKey {
            fn from(cipher: crate::aes::$ours) -> Self {
                Self { engine: ManuallyDrop::new(cipher.into_gcm_engine()), key_len: $len }
            }
        }

        /// Keeps the RustCrypto cipher as it is. Its round keys are private, so this key
        /// runs on the portable back end; build from the raw key for the fast kernels.
        impl From<aes::$theirs> for GcmKey {
            fn from(cipher: aes::$theirs) -> Self {
                Self {
                    engine: ManuallyDrop::new(Engine::Portable(portable::Key::from_cipher(portable::AnyAes::$variant(cipher)))),
                    key_len: $len,
                }
            }
        }
    )*};
}

from_ciphers! {
    Aes128, Aes128, A128, 16;
    Aes192, Aes192, A192, 24;
    Aes256, Aes256, A256, 32;
}

impl Engine {
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn vaes512(aes: crate::x86_64::RoundKeys, t: Vaes512Token) -> Self {
        Engine::Vaes512(HwKey::from_round_keys(aes, t), t)
    }
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn vaes256(aes: crate::x86_64::RoundKeys, t: Vaes256Token) -> Self {
        Engine::Vaes256(HwKey::from_round_keys(aes, t), t)
    }
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn aesni(aes: crate::x86_64::RoundKeys, t: AesNiToken) -> Self {
        Self::aesni_with(HwKey::from_round_keys(aes, t), t)
    }
    /// `Backend::AesNi`'s engine for `key`: its VEX-encoded loop where the CPU has AVX.
    #[cfg(target_arch = "x86_64")]
    fn aesni_with(key: HwKey, t: AesNiToken) -> Self {
        match AesNiAvxToken::new() {
            Some(v) => Engine::AesNiVex(key, v),
            None => Engine::AesNi(key, t),
        }
    }
    pub(crate) fn portable(aes: portable::AnyAes) -> Self {
        Engine::Portable(portable::Key::from_cipher(aes))
    }
}

#[cfg(target_arch = "x86_64")]
fn raw(buf: InOutBuf<'_, '_, u8>) -> InOut {
    let len = buf.len();
    let (src, dst) = buf.into_raw();
    // SAFETY: an `InOutBuf` is either one exclusive buffer or a shared and an exclusive
    // buffer of equal length, which cannot overlap; both are valid for `len` bytes (the
    // exclusive one for reads and writes) for as long as the borrow that produced it,
    // which outlives the kernel call.
    unsafe { InOut::new(src, dst, len) }
}

/// 1 if the two tags (of equal length) are equal, else 0, in constant time.
///
/// The byte differences are ORed together in a plain loop and only the result goes
/// through `subtle`: its comparison of slices passes every byte through its optimisation
/// barrier, a call each, which took a fifth of a 16-byte open.
#[inline]
fn tags_equal(expected: &[u8], received: &[u8]) -> u8 {
    debug_assert_eq!(expected.len(), received.len());
    let diff = expected
        .iter()
        .zip(received)
        .fold(0u8, |acc, (e, r)| acc | (e ^ r));
    diff.ct_eq(&0).unwrap_u8()
}

fn check_lengths(nonce: &[u8], aad_len: usize, msg_len: usize) -> Result<(), Error> {
    if nonce.is_empty() {
        return Err(Error::EmptyNonce);
    }
    if aad_len as u64 > A_MAX {
        return Err(Error::AadTooLong);
    }
    if msg_len as u64 > P_MAX {
        return Err(Error::MessageTooLong);
    }
    Ok(())
}

/// The next counter block: the last 32 bits incremented modulo 2^32.
pub(crate) fn inc32(block: &[u8; 16]) -> [u8; 16] {
    let mut b = *block;
    let c = u32::from_be_bytes([b[12], b[13], b[14], b[15]]).wrapping_add(1);
    b[12..].copy_from_slice(&c.to_be_bytes());
    b
}

/// The final GHASH block: the bit lengths of the associated data and the message.
pub(crate) fn lengths_block(aad_len: usize, msg_len: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(aad_len as u64 * 8).to_be_bytes());
    b[8..].copy_from_slice(&(msg_len as u64 * 8).to_be_bytes());
    b
}

pub(crate) fn xor16(a: [u8; 16], b: [u8; 16]) -> [u8; 16] {
    core::array::from_fn(|i| a[i] ^ b[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_limits_are_errors() {
        let n = [0u8; 12];
        assert_eq!(check_lengths(&n, 0, P_MAX as usize), Ok(()));
        assert_eq!(
            check_lengths(&n, 0, P_MAX as usize + 1),
            Err(Error::MessageTooLong)
        );
        assert_eq!(check_lengths(&n, 0, usize::MAX), Err(Error::MessageTooLong));
        assert_eq!(check_lengths(&n, A_MAX as usize, 0), Ok(()));
        assert_eq!(
            check_lengths(&n, A_MAX as usize + 1, 0),
            Err(Error::AadTooLong)
        );
        assert_eq!(check_lengths(&n, usize::MAX, 0), Err(Error::AadTooLong));
        assert_eq!(check_lengths(&[], 0, 0), Err(Error::EmptyNonce));
        assert_eq!(check_lengths(&[0], 0, 0), Ok(()));
    }

    #[test]
    fn bad_tag_lengths_are_errors() {
        let key = GcmKey::new(&[0; 16]).unwrap();
        let mut buf = [0u8; 4];
        for len in [0, 1, 3, 17, 32] {
            let tag = [0u8; 32];
            assert_eq!(
                key.open_in_place(&[0; 12], b"", &mut buf, &tag[..len]),
                Err(Error::InvalidTagLength)
            );
        }
        assert_eq!(buf, [0; 4]);
    }

    /// Every back end this build can run, through every kind of buffer: in place and
    /// separate, each length class of the kernels (tails, one batch, the encryption
    /// lag of two batches and the steps after it that hash what it left: on the 256-bit
    /// kernel opens of 481, 589 and 657 bytes, and seals of 673 and 913; its short
    /// paths, up to 14 blocks in one group, 255 to 464 bytes in two, and seals of 481 to
    /// 672 in more), 96-bit and other nonces, and a rejected tag. Small enough to run
    /// under Miri, where it checks the kernels' raw-pointer loads and stores (see
    /// `.ci/miri.sh`); natively, the cross-back-end tests go much further.
    #[test]
    fn every_buffer_shape_against_the_portable_back_end() {
        let key: [u8; 32] = core::array::from_fn(|i| (i * 7 + 1) as u8);
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 31 % 251) as u8);
        let aad: [u8; 40] = core::array::from_fn(|i| i as u8);
        let lens = [
            0, 1, 16, 17, 127, 128, 129, 200, 255, 256, 257, 385, 464, 481, 589, 657, 672, 673, 913,
        ];
        for backend in Backend::available() {
            for (key_len, nonce, aad_len) in [(16, &[9u8; 12][..], 13), (32, &[5u8; 8][..], 40)] {
                let ours = GcmKey::new_with_backend(&key[..key_len], backend).unwrap();
                let reference = GcmKey::new_with_backend(&key[..key_len], Backend::Portable);
                let reference = reference.unwrap();
                let aad = &aad[..aad_len];
                for len in lens {
                    let what = label(backend, key_len, len);
                    let mut expected = [0u8; 1000];
                    expected[..len].copy_from_slice(&data[..len]);
                    let tag = reference.seal_in_place(nonce, aad, &mut expected[..len]);
                    let tag = tag.unwrap();

                    let mut in_place = data;
                    let t = ours
                        .seal_in_place(nonce, aad, &mut in_place[..len])
                        .unwrap();
                    assert_eq!((t, &in_place[..len]), (tag, &expected[..len]), "{what}");
                    let mut out = [0xAAu8; 1000];
                    let buf = InOutBuf::new(&data[..len], &mut out[..len]).unwrap();
                    let t = ours.seal_inout(nonce, aad, buf).unwrap();
                    assert_eq!((t, &out[..len]), (tag, &expected[..len]), "{what}");
                    assert!(out[len..].iter().all(|&b| b == 0xAA), "{what}: wrote past");

                    ours.open_in_place(nonce, aad, &mut in_place[..len], &tag)
                        .unwrap();
                    assert_eq!(&in_place[..len], &data[..len], "{what}");
                    let mut plain = [0u8; 1000];
                    let buf = InOutBuf::new(&expected[..len], &mut plain[..len]).unwrap();
                    ours.open_inout(nonce, aad, buf, &tag).unwrap();
                    assert_eq!(&plain[..len], &data[..len], "{what}");

                    let mut bad = tag;
                    bad[len % 16] ^= 1;
                    let mut ct = expected;
                    let r = ours.open_in_place(nonce, aad, &mut ct[..len], &bad);
                    assert_eq!(r, Err(Error::AuthenticationFailed), "{what}");
                    assert_eq!(&ct[..len], &expected[..len], "{what}: ciphertext restored");
                    let mut out = [0xAAu8; 1000];
                    let buf = InOutBuf::new(&expected[..len], &mut out[..len]).unwrap();
                    let r = ours.open_inout(nonce, aad, buf, &bad);
                    assert_eq!(r, Err(Error::AuthenticationFailed), "{what}");
                    assert!(out[..len].iter().all(|&b| b == 0), "{what}: output zeroed");
                }
            }
        }
    }

    /// A pre-counter block whose 32-bit counter wraps inside the message (as it can from
    /// a nonce of other than 96 bits, which the public API cannot aim): every back end's
    /// every path (the short ones in one pass and in groups, the bulk loops and their
    /// tails) seals and opens as the portable back end does, the counter wrapping modulo
    /// 2^32 and the nonce's bytes left alone.
    #[test]
    fn counter_wraps_inside_every_kernel_path() {
        let key: [u8; 32] = core::array::from_fn(|i| (i * 11 + 3) as u8);
        let data: [u8; 2100] = core::array::from_fn(|i| (i * 37 % 241) as u8);
        let aad: [u8; 40] = core::array::from_fn(|i| (i * 5) as u8);
        let (starts, lens): (&[u32], &[usize]) = if cfg!(miri) {
            (&[0xffff_fff8], &[17, 600])
        } else {
            (
                &[
                    0xffff_ffd0,
                    0xffff_ffe5,
                    0xffff_fff0,
                    0xffff_fffe,
                    0xffff_ffff,
                ],
                &[
                    1, 16, 31, 100, 128, 224, 240, 255, 300, 464, 480, 600, 672, 673, 1000, 2100,
                ],
            )
        };
        for backend in Backend::available() {
            for (key_len, aad_len) in [(16, 13), (32, 40), (24, 0)] {
                let ours = GcmKey::new_with_backend(&key[..key_len], backend).unwrap();
                let reference = GcmKey::new_with_backend(&key[..key_len], Backend::Portable);
                let reference = reference.unwrap();
                let aad = &aad[..aad_len];
                for (&start, &len) in starts.iter().flat_map(|s| lens.iter().map(move |l| (s, l))) {
                    let what = label(backend, key_len, len);
                    let mut block = [0xa5u8; 16];
                    block[12..].copy_from_slice(&start.to_be_bytes());
                    let j0 = u128::from_le_bytes(block);
                    let mut expected = data;
                    let buf = InOutBuf::from(&mut expected[..len]);
                    let tag = reference.seal_or_open::<true>(j0, false, aad, buf);
                    let mut sealed = data;
                    let buf = InOutBuf::from(&mut sealed[..len]);
                    let t = ours.seal_or_open::<true>(j0, false, aad, buf);
                    assert_eq!((t, &sealed[..len]), (tag, &expected[..len]), "{what}");
                    let buf = InOutBuf::from(&mut sealed[..len]);
                    let t = ours.seal_or_open::<false>(j0, false, aad, buf);
                    assert_eq!((t, &sealed[..len]), (tag, &data[..len]), "{what}: open");
                }
            }
        }
    }

    /// `new_or_portable` (the constructor `aes-gcm-vaes` builds its keys with) makes the
    /// key `new_with_backend` makes, on every back end and key size, and falls back to
    /// the portable back end only where the CPU lacks the one asked for.
    #[test]
    fn new_or_portable_is_new_with_backend() {
        let key: [u8; 32] = core::array::from_fn(|i| (i * 13 + 5) as u8);
        let data: [u8; 300] = core::array::from_fn(|i| (i * 17 % 253) as u8);
        for backend in Backend::ALL {
            for key_len in [16, 24, 32] {
                let what = label(backend, key_len, data.len());
                let made = GcmKey::new_or_portable(&key[..key_len], backend);
                assert_eq!(made.key_len(), key_len, "{what}");
                let Ok(reference) = GcmKey::new_with_backend(&key[..key_len], backend) else {
                    assert_eq!(made.backend(), Backend::Portable, "{what}");
                    continue;
                };
                assert_eq!(made.backend(), backend, "{what}");
                let (mut a, mut b) = (data, data);
                let ta = made.seal_in_place(&[3; 12], b"ad", &mut a).unwrap();
                let tb = reference.seal_in_place(&[3; 12], b"ad", &mut b).unwrap();
                assert_eq!((ta, a), (tb, b), "{what}");
            }
        }
    }

    /// A test label without `format!` (no `alloc` in this crate's tests).
    fn label(backend: Backend, key_len: usize, len: usize) -> impl core::fmt::Display {
        struct Label(Backend, usize, usize);
        impl core::fmt::Display for Label {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{:?}, {}-byte key, {} bytes", self.0, self.1, self.2)
            }
        }
        Label(backend, key_len, len)
    }

    #[test]
    fn counter_wraps_modulo_2_32() {
        let b = inc32(&[0xff; 16]);
        assert_eq!(&b[..12], &[0xff; 12]);
        assert_eq!(&b[12..], &[0, 0, 0, 0]);
    }
}

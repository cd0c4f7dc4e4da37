//! placeholder: forwards to the AES-NI kernel until the VAES kernel lands.
use super::{HwKey, InOut, Vaes512Token, aesni_gcm};
pub(crate) unsafe fn seal(
    key: &HwKey,
    t: Vaes512Token,
    j0: &[u8; 16],
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    unsafe { aesni_gcm::seal(key, t.aesni(), j0, aad, io) }
}
pub(crate) unsafe fn open(
    key: &HwKey,
    t: Vaes512Token,
    j0: &[u8; 16],
    aad: &[u8],
    io: InOut,
) -> [u8; 16] {
    unsafe { aesni_gcm::open(key, t.aesni(), j0, aad, io) }
}
pub(crate) unsafe fn ctr(key: &HwKey, t: Vaes512Token, c: &[u8; 16], io: InOut) {
    unsafe { aesni_gcm::ctr(key, t.aesni(), c, io) }
}

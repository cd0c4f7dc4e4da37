//! The error type shared by every fallible call in the crate.

use core::fmt;

/// Why a key could not be made or a message could not be sealed or opened.
///
/// Authentication failure is a single variant: it says nothing about where or why the
/// tag did not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// The AES key is not 16, 24 or 32 bytes long.
    InvalidKeyLength,
    /// The requested back end cannot run on this CPU (or this target).
    BackendUnavailable,
    /// The nonce is empty; GCM needs at least one byte.
    EmptyNonce,
    /// The associated data is longer than [`A_MAX`](crate::A_MAX) bytes.
    AadTooLong,
    /// The message is longer than [`P_MAX`](crate::P_MAX) bytes.
    MessageTooLong,
    /// The tag is shorter than 4 or longer than 16 bytes.
    InvalidTagLength,
    /// The tag does not authenticate the message. No plaintext was released.
    AuthenticationFailed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::InvalidKeyLength => "AES key must be 16, 24 or 32 bytes",
            Error::BackendUnavailable => "requested AES-GCM back end is not supported by this CPU",
            Error::EmptyNonce => "GCM nonce must not be empty",
            Error::AadTooLong => "associated data longer than 2^61 - 1 bytes",
            Error::MessageTooLong => "message longer than 2^36 - 32 bytes",
            Error::InvalidTagLength => "GCM tag must be 4 to 16 bytes",
            Error::AuthenticationFailed => "authentication tag mismatch",
        })
    }
}

impl core::error::Error for Error {}

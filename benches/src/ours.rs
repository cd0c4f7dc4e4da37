//! "Ours" as the tool sees it: `aes_gcm_vaes::{Aes128Gcm, Aes256Gcm}` through the same
//! `aead` trait calls as RustCrypto's `aes-gcm` (the drop-in an application would use), a
//! back end forced through `new_with_backend`, `gcm_core::GcmKey` directly (to see what the
//! trait layer costs), and the AES-CTR-only loop of `GcmKey` as the roofline. Everything
//! else in the crate reaches our code through this module only.

use std::hint::black_box;
use std::mem::size_of;

use aes_gcm_vaes::{Aes128Gcm, Aes256Gcm, Key, KeyInit};
use gcm_core::GcmKey;

use crate::clock::{Runner, Sample, run_for};
use crate::gcm::{Gcm, GcmSubject, RustCryptoApi, Subject};
use crate::{Alg, message};

pub use gcm_core::Backend;

/// The back ends this CPU can run, best first.
pub fn available_backends() -> Vec<Backend> {
    Backend::available().collect()
}

/// The back end `new` picks on this CPU.
pub fn default_backend() -> Backend {
    Backend::detect()
}

/// Parses a back end name (`vaes512`, `vaes256`, `aesni`, `portable`).
pub fn parse_backend(name: &str) -> Result<Backend, String> {
    let names: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
    name.parse::<Backend>()
        .map_err(|_| format!("unknown back end {name:?}; one of {}", names.join(", ")))
}

/// Our `gcm_core` key, built with the back end `new` picks or with a forced one.
pub struct OursGcm(GcmKey);

impl std::fmt::Debug for OursGcm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl OursGcm {
    pub fn new(key: &[u8], backend: Option<Backend>) -> Self {
        OursGcm(gcm_key(key, backend))
    }
}

impl Gcm for OursGcm {
    #[inline]
    fn seal(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        self.0.seal_in_place(nonce, aad, buf).expect("seal")
    }

    #[inline]
    fn open(&mut self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        self.0.open_in_place(nonce, aad, buf, tag).is_ok()
    }
}

fn gcm_key(key: &[u8], backend: Option<Backend>) -> GcmKey {
    match backend {
        None => GcmKey::new(key),
        Some(b) => GcmKey::new_with_backend(key, b),
    }
    .expect("key length and back end checked")
}

fn subject_name(prefix: &str, backend: Option<Backend>) -> String {
    match backend {
        None => prefix.to_string(),
        Some(b) => {
            assert!(b.is_available(), "back end {} not available here", b.name());
            format!("{prefix}-{}", b.name())
        }
    }
}

/// `new_with_backend` is inherent on each AES-GCM type; this lets [`aead_new`] be generic.
trait WithBackend: KeyInit {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self;
}

impl WithBackend for Aes128Gcm {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self {
        Self::new_with_backend(key, backend).expect("back end checked as available")
    }
}

impl WithBackend for Aes256Gcm {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self {
        Self::new_with_backend(key, backend).expect("back end checked as available")
    }
}

fn aead_new<A: WithBackend>(key: &[u8], backend: Option<Backend>) -> RustCryptoApi<A> {
    let key = Key::<A>::try_from(key).expect("key length");
    RustCryptoApi(match backend {
        None => A::new(&key),
        Some(b) => A::with_backend(&key, b),
    })
}

/// Our AES-GCM for `alg` through the `aead` traits: with `None` the back end `new` picks
/// (named `ours`), otherwise the one forced (named `ours-<backend>`).
pub fn subject(alg: Alg, backend: Option<Backend>) -> Box<dyn Subject> {
    let name = subject_name("ours", backend);
    match alg {
        Alg::Aes128Gcm => GcmSubject::boxed(name, true, alg.key(), move |k| {
            aead_new::<Aes128Gcm>(k, backend)
        }),
        Alg::Aes256Gcm => GcmSubject::boxed(name, true, alg.key(), move |k| {
            aead_new::<Aes256Gcm>(k, backend)
        }),
    }
}

/// Our `gcm_core::GcmKey` called directly (named `ours-core`, or `ours-core-<backend>`).
pub fn core_subject(alg: Alg, backend: Option<Backend>) -> Box<dyn Subject> {
    let name = subject_name("ours-core", backend);
    GcmSubject::boxed(name, true, alg.key(), move |k| OursGcm::new(k, backend))
}

/// Times the AES-CTR-only loop (the same AES code as our GCM, no GHASH) on `len` bytes: the
/// most any GCM built on that AES code could reach.
pub fn ctr_roofline(alg: Alg, backend: Option<Backend>, len: usize, runner: impl Runner) -> Sample {
    let key = gcm_key(alg.key(), backend);
    let mut buf = message(len);
    let counter = crate::roofline_counter();
    runner.run(|| {
        key.ctr32_apply_keystream(black_box(&counter), black_box(&mut buf[..]));
    })
}

/// Cost of `GcmKey::new` (key schedule and H powers) and the key's size.
pub fn gcm_key_setup(alg: Alg, backend: Option<Backend>, budget_ns: u64) -> (Sample, usize) {
    let s = run_for(budget_ns, || {
        black_box(gcm_key(black_box(alg.key()), backend));
    });
    (s, size_of::<GcmKey>())
}

/// Which back end a default-constructed key of ours ends up with.
pub fn backend_in_use(alg: Alg) -> Backend {
    gcm_key(alg.key(), None).backend()
}

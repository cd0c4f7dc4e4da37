//! "Ours" as the tool sees it: our AES-GCM through its public RustCrypto-style API
//! (`aes_gcm_vaes`), a back end forced through `new_with_backend`, and the AES-CTR-only loop
//! of `gcm_core` used as the roofline. Everything else in the crate reaches our code through
//! this module only, so pointing the tool at other code is the one `use` line below.

use crate::standin::{aes_gcm_vaes, gcm_core};

use std::hint::black_box;
use std::mem::size_of;

use aead::{Key, KeyInit};

use crate::clock::{Sample, run_for};
use crate::gcm::{GcmSubject, RustCryptoApi, Subject};
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

fn make<A: NewWithBackend>(key: &[u8], backend: Option<Backend>) -> RustCryptoApi<A> {
    let key = Key::<A>::try_from(key).expect("key length");
    RustCryptoApi(match backend {
        None => A::new(&key),
        Some(b) => A::with_backend(&key, b),
    })
}

/// `new_with_backend` is inherent on each AES-GCM type; this lets [`make`] be generic.
trait NewWithBackend: KeyInit {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self;
}

impl NewWithBackend for aes_gcm_vaes::Aes128Gcm {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self {
        Self::new_with_backend(key, backend).expect("back end checked as available")
    }
}

impl NewWithBackend for aes_gcm_vaes::Aes256Gcm {
    fn with_backend(key: &Key<Self>, backend: Backend) -> Self {
        Self::new_with_backend(key, backend).expect("back end checked as available")
    }
}

/// Our AES-GCM for `alg` as a measurable subject: with `None` the back end `new` picks
/// (named `ours`), otherwise the one forced (named `ours-<backend>`).
pub fn subject(alg: Alg, backend: Option<Backend>) -> Box<dyn Subject> {
    let name = match backend {
        None => "ours".to_string(),
        Some(b) => format!("ours-{}", b.name()),
    };
    if let Some(b) = backend {
        assert!(b.is_available(), "back end {} not available here", b.name());
    }
    match alg {
        Alg::Aes128Gcm => GcmSubject::boxed(name, true, alg.key(), move |k| {
            make::<aes_gcm_vaes::Aes128Gcm>(k, backend)
        }),
        Alg::Aes256Gcm => GcmSubject::boxed(name, true, alg.key(), move |k| {
            make::<aes_gcm_vaes::Aes256Gcm>(k, backend)
        }),
    }
}

fn gcm_key(alg: Alg, backend: Option<Backend>) -> gcm_core::GcmKey {
    match backend {
        None => gcm_core::GcmKey::new(alg.key()),
        Some(b) => gcm_core::GcmKey::new_with_backend(alg.key(), b),
    }
    .expect("key length and back end checked")
}

/// Times the AES-CTR-only loop (the same AES code as our GCM, no GHASH) on `len` bytes: the
/// most any GCM using that AES code could reach.
pub fn ctr_roofline(alg: Alg, backend: Option<Backend>, len: usize, budget_ns: u64) -> Sample {
    let key = gcm_key(alg, backend);
    let mut buf = message(len);
    let mut counter = [0u8; 16];
    counter[..12].copy_from_slice(&crate::NONCE);
    counter[15] = 2;
    run_for(budget_ns, || {
        key.ctr32_apply_keystream(black_box(&counter), black_box(&mut buf[..]));
    })
}

/// Cost of `GcmKey::new` (key schedule and H powers, no AEAD wrapper) and its size.
pub fn gcm_key_setup(alg: Alg, backend: Option<Backend>, budget_ns: u64) -> (Sample, usize) {
    let s = run_for(budget_ns, || {
        black_box(gcm_key(black_box(alg), backend));
    });
    (s, size_of::<gcm_core::GcmKey>())
}

/// Which back end a default-constructed key of ours ends up with.
pub fn backend_in_use(alg: Alg) -> Backend {
    gcm_key(alg, None).backend()
}

//! The back end chosen is the one expected for the CPU this runs on.
//!
//! Two checks. First, gcm-core's own CPUID probe is compared with the standard library's
//! `is_x86_feature_detected!`, an independent reading of the same bits: each back end must
//! be available exactly when the features its kernels are compiled with are present.
//! Second, `.ci/qemu.sh` runs this binary under QEMU CPU models and sets
//! `EXPECT_BACKEND` (what `Backend::detect()` must return) and `EXPECT_AVAILABLE` (the
//! exact list `Backend::available()` must yield, comma-separated, best first); without
//! them (a plain `cargo test`) only the first check runs. Then every back end is exercised
//! once: the available ones must work, the others must be refused.

use gcm_core::{Backend, Error, GcmKey};

#[cfg(target_arch = "x86_64")]
fn std_view() -> Vec<(&'static str, bool)> {
    vec![
        ("aes", std::arch::is_x86_feature_detected!("aes")),
        (
            "pclmulqdq",
            std::arch::is_x86_feature_detected!("pclmulqdq"),
        ),
        ("ssse3", std::arch::is_x86_feature_detected!("ssse3")),
        ("sse4.1", std::arch::is_x86_feature_detected!("sse4.1")),
        ("avx", std::arch::is_x86_feature_detected!("avx")),
        ("avx2", std::arch::is_x86_feature_detected!("avx2")),
        ("vaes", std::arch::is_x86_feature_detected!("vaes")),
        (
            "vpclmulqdq",
            std::arch::is_x86_feature_detected!("vpclmulqdq"),
        ),
        ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
        ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
        ("avx512vl", std::arch::is_x86_feature_detected!("avx512vl")),
    ]
}

#[cfg(not(target_arch = "x86_64"))]
fn std_view() -> Vec<(&'static str, bool)> {
    Vec::new()
}

#[test]
fn detection_matches_the_cpu() {
    let view = std_view();
    let has = |name: &str| view.iter().any(|&(n, v)| n == name && v);
    let all = |names: &[&str]| names.iter().all(|n| has(n));
    let detected = Backend::detect();
    let available: Vec<Backend> = Backend::available().collect();
    let names: Vec<&str> = available.iter().map(|b| b.name()).collect();
    let present: Vec<&str> = view.iter().filter(|f| f.1).map(|f| f.0).collect();
    println!(
        "dispatch: std sees [{}]; detect() = {detected}; available() = [{}]",
        present.join(" "),
        names.join(", ")
    );

    // The same bits through std: AES-NI needs exactly these four.
    let ni = all(&["aes", "pclmulqdq", "ssse3", "sse4.1"]);
    assert_eq!(Backend::AesNi.is_available(), ni, "AES-NI availability");
    // std may gate VAES/VPCLMULQDQ on more OS state than gcm-core needs, so for the wide
    // back ends check both directions on what each side must imply.
    let v256_bits = ni && all(&["avx", "avx2", "vaes", "vpclmulqdq"]);
    if v256_bits {
        assert!(
            Backend::Vaes256.is_available(),
            "std sees VAES-256 features"
        );
    }
    if Backend::Vaes256.is_available() {
        assert!(ni && all(&["avx", "avx2"]), "Vaes256 without AVX2");
    }
    if v256_bits && all(&["avx512f", "avx512bw", "avx512vl"]) {
        assert!(
            Backend::Vaes512.is_available(),
            "std sees VAES-512 features"
        );
    }
    if Backend::Vaes512.is_available() {
        assert!(
            all(&["avx512f", "avx512bw", "avx512vl"]),
            "Vaes512 without AVX-512"
        );
        assert!(Backend::Vaes256.is_available());
    }
    assert_eq!(available.first(), Some(&detected));
    assert_eq!(available.last(), Some(&Backend::Portable));

    if let Ok(want) = std::env::var("EXPECT_BACKEND") {
        let want: Backend = want.parse().expect("EXPECT_BACKEND names a back end");
        assert_eq!(detected, want, "detect() under this CPU model");
        println!("dispatch: EXPECT_BACKEND={want} matches");
    }
    if let Ok(want) = std::env::var("EXPECT_AVAILABLE") {
        assert_eq!(names.join(","), want, "available() under this CPU model");
        println!("dispatch: EXPECT_AVAILABLE={want} matches");
    }

    // A default key runs on the detected back end; each back end either works or is refused.
    assert_eq!(GcmKey::new(&[1; 16]).unwrap().backend(), detected);
    for b in Backend::ALL {
        match GcmKey::new_with_backend(&[1; 16], b) {
            Ok(k) => {
                assert!(available.contains(&b), "{b} made but not available");
                let mut buf = *b"sixteen  bytes!!";
                let tag = k.seal_in_place(&[2; 12], b"ad", &mut buf).unwrap();
                k.open_in_place(&[2; 12], b"ad", &mut buf, &tag).unwrap();
                assert_eq!(&buf, b"sixteen  bytes!!");
            }
            Err(e) => {
                assert_eq!(e, Error::BackendUnavailable);
                assert!(!available.contains(&b), "{b} available but refused");
            }
        }
    }
}

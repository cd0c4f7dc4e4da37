//! What the CPU can do, read once per process.
//!
//! The probe is CPUID plus XGETBV, written here rather than taken from `std` or
//! `cpufeatures` for two reasons: `gcm-core` is `no_std`, and `cpufeatures` 0.3 reports
//! VAES and VPCLMULQDQ only when the OS saves the AVX-512 register state, which would hide
//! the 256-bit VAES back end on exactly the CPUs it exists for (Zen 3, Alder Lake). Here
//! each instruction-set bit comes straight from CPUID and the OS register-state bits are
//! kept separately, so that the choice of back end can require precisely what each kernel
//! uses (see `backend::select_for_features`).

/// A set of CPU capabilities relevant to the kernels, as bit flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures(pub u32);

#[allow(missing_docs)]
impl CpuFeatures {
    pub const AES: u32 = 1 << 0;
    pub const PCLMULQDQ: u32 = 1 << 1;
    pub const SSSE3: u32 = 1 << 2;
    pub const SSE41: u32 = 1 << 3;
    pub const AVX: u32 = 1 << 4;
    pub const AVX2: u32 = 1 << 5;
    pub const VAES: u32 = 1 << 6;
    pub const VPCLMULQDQ: u32 = 1 << 7;
    pub const AVX512F: u32 = 1 << 8;
    pub const AVX512BW: u32 = 1 << 9;
    pub const AVX512VL: u32 = 1 << 10;
    /// The OS saves XMM and YMM state (XCR0 bits 1 and 2).
    pub const OS_YMM: u32 = 1 << 11;
    /// The OS saves opmask and ZMM state as well (XCR0 bits 5, 6 and 7).
    pub const OS_ZMM: u32 = 1 << 12;

    /// True when every bit of `mask` is present.
    pub const fn has(self, mask: u32) -> bool {
        self.0 & mask == mask
    }
}

/// The features of the CPU this process runs on, less any that the constant-time harness
/// hides (only possible in a MemorySanitizer build; see `ct::hide_cpu_features`).
#[cfg(target_arch = "x86_64")]
pub(crate) fn features() -> CpuFeatures {
    CpuFeatures(probed().0 & !crate::ct::hidden_cpu_features())
}

/// The features of the CPU this process runs on, probed on first use and cached.
#[cfg(target_arch = "x86_64")]
fn probed() -> CpuFeatures {
    use core::sync::atomic::{AtomicU32, Ordering};
    // Bit 31 marks the cache as filled; no feature uses it.
    const FILLED: u32 = 1 << 31;
    static CACHE: AtomicU32 = AtomicU32::new(0);

    let cached = CACHE.load(Ordering::Relaxed);
    if cached & FILLED != 0 {
        return CpuFeatures(cached & !FILLED);
    }
    let probed = probe_x86_64();
    CACHE.store(probed.0 | FILLED, Ordering::Relaxed);
    probed
}

/// Other architectures have no kernels here: only the portable back end.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn features() -> CpuFeatures {
    CpuFeatures(0)
}

/// Under Miri, which cannot execute CPUID or XGETBV, the features are those the build
/// enables (`-C target-feature`), so that a Miri run with, say, `+aes,+pclmulqdq` checks
/// the AES-NI kernel's memory accesses and one without checks the portable back end.
#[cfg(all(target_arch = "x86_64", miri))]
fn probe_x86_64() -> CpuFeatures {
    let mut f = 0u32;
    let mut add = |on: bool, bit: u32| {
        if on {
            f |= bit;
        }
    };
    add(cfg!(target_feature = "aes"), CpuFeatures::AES);
    add(cfg!(target_feature = "pclmulqdq"), CpuFeatures::PCLMULQDQ);
    add(cfg!(target_feature = "ssse3"), CpuFeatures::SSSE3);
    add(cfg!(target_feature = "sse4.1"), CpuFeatures::SSE41);
    add(
        cfg!(target_feature = "avx"),
        CpuFeatures::AVX | CpuFeatures::OS_YMM,
    );
    add(cfg!(target_feature = "avx2"), CpuFeatures::AVX2);
    add(cfg!(target_feature = "vaes"), CpuFeatures::VAES);
    add(cfg!(target_feature = "vpclmulqdq"), CpuFeatures::VPCLMULQDQ);
    add(
        cfg!(target_feature = "avx512f"),
        CpuFeatures::AVX512F | CpuFeatures::OS_ZMM,
    );
    add(cfg!(target_feature = "avx512bw"), CpuFeatures::AVX512BW);
    add(cfg!(target_feature = "avx512vl"), CpuFeatures::AVX512VL);
    CpuFeatures(f)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code, unused_unsafe)]
fn probe_x86_64() -> CpuFeatures {
    use core::arch::x86_64::{__cpuid, __cpuid_count};

    let mut f = 0u32;
    // SAFETY: CPUID exists on every x86_64 CPU.
    let max_leaf = unsafe { __cpuid(0) }.eax;
    // SAFETY: as above.
    let leaf1 = unsafe { __cpuid(1) };
    let bit = |reg: u32, n: u32| reg & (1 << n) != 0;
    if bit(leaf1.ecx, 25) {
        f |= CpuFeatures::AES;
    }
    if bit(leaf1.ecx, 1) {
        f |= CpuFeatures::PCLMULQDQ;
    }
    if bit(leaf1.ecx, 9) {
        f |= CpuFeatures::SSSE3;
    }
    if bit(leaf1.ecx, 19) {
        f |= CpuFeatures::SSE41;
    }
    if bit(leaf1.ecx, 28) {
        f |= CpuFeatures::AVX;
    }
    // XGETBV may only run when the OS has set CR4.OSXSAVE, which CPUID mirrors in bit 27.
    if bit(leaf1.ecx, 27) {
        // SAFETY: OSXSAVE is set, so XGETBV with ECX = 0 is defined.
        let xcr0 = unsafe { xgetbv0() };
        if xcr0 & 0b110 == 0b110 {
            f |= CpuFeatures::OS_YMM;
            if xcr0 & 0b1110_0000 == 0b1110_0000 {
                f |= CpuFeatures::OS_ZMM;
            }
        }
    }
    // Leaf 7 must not be read on CPUs whose highest leaf is lower: they answer with
    // the data of their highest leaf instead.
    if max_leaf >= 7 {
        // SAFETY: leaf 7 exists (checked above).
        let leaf7 = unsafe { __cpuid_count(7, 0) };
        if bit(leaf7.ebx, 5) {
            f |= CpuFeatures::AVX2;
        }
        if bit(leaf7.ebx, 16) {
            f |= CpuFeatures::AVX512F;
        }
        if bit(leaf7.ebx, 30) {
            f |= CpuFeatures::AVX512BW;
        }
        if bit(leaf7.ebx, 31) {
            f |= CpuFeatures::AVX512VL;
        }
        if bit(leaf7.ecx, 9) {
            f |= CpuFeatures::VAES;
        }
        if bit(leaf7.ecx, 10) {
            f |= CpuFeatures::VPCLMULQDQ;
        }
    }
    CpuFeatures(f)
}

/// XCR0, read with the `xsave` target feature enabled for just this instruction.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code)]
#[target_feature(enable = "xsave")]
unsafe fn xgetbv0() -> u64 {
    // SAFETY: the caller checked OSXSAVE.
    unsafe { core::arch::x86_64::_xgetbv(0) }
}

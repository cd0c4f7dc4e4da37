//! What the CPU is and can do, read once per process.
//!
//! The probe is CPUID plus XGETBV, written here rather than taken from `std` or
//! `cpufeatures` for two reasons: `gcm-core` is `no_std`, and `cpufeatures` 0.3 reports
//! VAES and VPCLMULQDQ only when the OS saves the AVX-512 register state, which would hide
//! the 256-bit VAES back end on exactly the CPUs it exists for (Zen 3, Alder Lake). Here
//! each instruction-set bit comes straight from CPUID and the OS register-state bits are
//! kept separately, so that the choice of back end can require precisely what each kernel
//! uses (see `backend::select_for_cpu`). The vendor, family and model are read too: a few
//! CPUs run 512-bit vectors at a lower clock, and get the 256-bit kernel although they
//! can run the 512-bit one.

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
    /// The SHA extensions (SHA-NI). No kernel here uses them: the bit is for
    /// `tls-cbc-aead`'s hash engines, which the constant-time harness hides with it.
    pub const SHA: u32 = 1 << 13;
    /// AVX512-FP16 (CPUID leaf 7 EDX bit 23). No kernel here uses it: Intel has it on the
    /// Golden Cove and later cores of its Xeons (Sapphire Rapids on), so it tells
    /// `tls-cbc-aead` such a core when a hypervisor reports another model number.
    pub const AVX512FP16: u32 = 1 << 14;

    /// True when every bit of `mask` is present.
    pub const fn has(self, mask: u32) -> bool {
        self.0 & mask == mask
    }
}

/// Who made the CPU, from CPUID leaf 0's vendor string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD` (and Hygon's `HygonGenuine`, the same cores).
    Amd,
    /// Anything else, or not probed (other architectures, Miri).
    #[default]
    Other,
}

/// The CPU's identity and features: what the choice of back end depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    /// The instruction sets and OS register state.
    pub features: CpuFeatures,
    /// The vendor.
    pub vendor: Vendor,
    /// The display family (base family, plus the extended family when the base is 15).
    pub family: u8,
    /// The display model (base model, plus the extended model in bits 4..8 for families
    /// 6 and 15 and above).
    pub model: u8,
}

// The cache that uses these exists on x86_64 only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Cpu {
    /// Packs into 64 bits (features, vendor, family, model), for the process-wide cache.
    const fn pack(self) -> u64 {
        let vendor = match self.vendor {
            Vendor::Intel => 1,
            Vendor::Amd => 2,
            Vendor::Other => 0,
        };
        self.features.0 as u64
            | (vendor as u64) << 32
            | (self.family as u64) << 40
            | (self.model as u64) << 48
    }

    const fn unpack(v: u64) -> Self {
        Self {
            features: CpuFeatures(v as u32),
            vendor: match (v >> 32) as u8 {
                1 => Vendor::Intel,
                2 => Vendor::Amd,
                _ => Vendor::Other,
            },
            family: (v >> 40) as u8,
            model: (v >> 48) as u8,
        }
    }
}

/// The CPU this process runs on, less any features that the constant-time harness hides
/// (only possible in a MemorySanitizer build; see `ct::hide_cpu_features`).
#[cfg(target_arch = "x86_64")]
pub(crate) fn cpu() -> Cpu {
    let mut cpu = probed();
    cpu.features.0 &= !crate::ct::hidden_cpu_features();
    cpu
}

/// The CPU this process runs on, probed on first use and cached.
#[cfg(target_arch = "x86_64")]
fn probed() -> Cpu {
    use core::sync::atomic::{AtomicU64, Ordering};
    // Bit 63 marks the cache as filled; `pack` never sets it.
    const FILLED: u64 = 1 << 63;
    static CACHE: AtomicU64 = AtomicU64::new(0);

    let cached = CACHE.load(Ordering::Relaxed);
    if cached & FILLED != 0 {
        return Cpu::unpack(cached & !FILLED);
    }
    let probed = probe_x86_64();
    CACHE.store(probed.pack() | FILLED, Ordering::Relaxed);
    probed
}

/// Other architectures have no kernels here: only the portable back end.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn cpu() -> Cpu {
    Cpu::default()
}

/// The features of the CPU this process runs on.
pub(crate) fn features() -> CpuFeatures {
    cpu().features
}

/// Under Miri, which cannot execute CPUID or XGETBV, the features are those the build
/// enables (`-C target-feature`), so that a Miri run with, say, `+aes,+pclmulqdq` checks
/// the AES-NI kernel's memory accesses and one without checks the portable back end.
#[cfg(all(target_arch = "x86_64", miri))]
fn probe_x86_64() -> Cpu {
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
    add(cfg!(target_feature = "sha"), CpuFeatures::SHA);
    Cpu {
        features: CpuFeatures(f),
        ..Cpu::default()
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code, unused_unsafe)]
fn probe_x86_64() -> Cpu {
    use core::arch::x86_64::{__cpuid, __cpuid_count};

    let mut f = 0u32;
    // SAFETY: CPUID exists on every x86_64 CPU.
    let leaf0 = unsafe { __cpuid(0) };
    let max_leaf = leaf0.eax;
    // The vendor string is EBX, EDX, ECX, four ASCII bytes each.
    let vendor = match (leaf0.ebx, leaf0.edx, leaf0.ecx) {
        (0x756e_6547, 0x4965_6e69, 0x6c65_746e) => Vendor::Intel, // GenuineIntel
        (0x6874_7541, 0x6974_6e65, 0x444d_4163) => Vendor::Amd,   // AuthenticAMD
        (0x6f67_7948, 0x6e65_476e, 0x656e_6975) => Vendor::Amd,   // HygonGenuine
        _ => Vendor::Other,
    };
    // SAFETY: as above.
    let leaf1 = unsafe { __cpuid(1) };
    let (family, model) = display_family_model(leaf1.eax);
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
        if bit(leaf7.ebx, 29) {
            f |= CpuFeatures::SHA;
        }
        if bit(leaf7.ecx, 9) {
            f |= CpuFeatures::VAES;
        }
        if bit(leaf7.edx, 23) {
            f |= CpuFeatures::AVX512FP16;
        }
        if bit(leaf7.ecx, 10) {
            f |= CpuFeatures::VPCLMULQDQ;
        }
    }
    Cpu {
        features: CpuFeatures(f),
        vendor,
        family,
        model,
    }
}

/// The display family and model from CPUID leaf 1's EAX, as Intel's and AMD's manuals
/// define them: the extended family is added when the base family is 15, and the extended
/// model prepended for families 6 and 15 and above.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const fn display_family_model(eax: u32) -> (u8, u8) {
    let base_family = (eax >> 8) & 0xf;
    let base_model = (eax >> 4) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((eax >> 20) & 0xff)
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xf {
        ((eax >> 12) & 0xf0) | base_model
    } else {
        base_model
    };
    (family as u8, model as u8)
}

/// XCR0, read with the `xsave` target feature enabled for just this instruction.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[allow(unsafe_code)]
#[target_feature(enable = "xsave")]
unsafe fn xgetbv0() -> u64 {
    // SAFETY: the caller checked OSXSAVE.
    unsafe { core::arch::x86_64::_xgetbv(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_and_model_of_real_signatures() {
        // CPUID.1.EAX of real parts.
        assert_eq!(display_family_model(0x0003_06c3), (6, 0x3c), "Haswell");
        assert_eq!(display_family_model(0x0005_0654), (6, 0x55), "Skylake-SP");
        assert_eq!(display_family_model(0x0006_06a6), (6, 0x6a), "Ice Lake-SP");
        assert_eq!(
            display_family_model(0x0008_06f8),
            (6, 0x8f),
            "Sapphire Rapids"
        );
        assert_eq!(
            display_family_model(0x00a2_0f10),
            (0x19, 0x21),
            "Zen 3 (Vermeer)"
        );
        assert_eq!(
            display_family_model(0x00a0_0f11),
            (0x19, 0x01),
            "Zen 3 (Milan)"
        );
        assert_eq!(
            display_family_model(0x00a1_0f11),
            (0x19, 0x11),
            "Zen 4 (Genoa)"
        );
        assert_eq!(display_family_model(0x0000_0f4a), (0xf, 0x4), "Pentium 4");
    }

    #[test]
    fn the_cache_packing_round_trips() {
        for cpu in [
            Cpu::default(),
            Cpu {
                features: CpuFeatures((1 << 14) - 1),
                vendor: Vendor::Amd,
                family: 0x19,
                model: 0x11,
            },
            Cpu {
                features: CpuFeatures(CpuFeatures::AES),
                vendor: Vendor::Intel,
                family: 6,
                model: 0xff,
            },
        ] {
            assert_eq!(Cpu::unpack(cpu.pack()), cpu);
            assert_eq!(cpu.pack() >> 63, 0);
        }
    }
}

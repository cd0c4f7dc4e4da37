//! The back ends, and which one a CPU gets.
//!
//! The mapping from a CPU to a back end is a pure function ([`select_for_cpu`]) so that
//! it can be tested against the identities and feature sets of real CPUs without running
//! on them. Each back end requires every instruction-set extension its kernels are
//! compiled with, plus the OS register state they touch: a VAES CPU whose OS does not save
//! ZMM state still gets `Vaes256`, and one without VPCLMULQDQ (QEMU's `max` model) gets
//! `AesNi`.
//!
//! Among the back ends a CPU can run, the widest is preferred, except on the Intel cores
//! that lower their clock for as long as 512-bit vectors are in use (and for a while
//! after), which slows everything else on the core: Skylake-SP and its Cascade Lake and
//! Cooper Lake steppings (family 6 model 0x55), Ice Lake server, client and NNPI (0x6a,
//! 0x6c, 0x7d, 0x7e, 0x9d) and Tiger Lake (0x8c, 0x8d). These get `Vaes256` where they
//! can run it (Ice Lake and Tiger Lake; Skylake-SP has no VAES and gets `AesNi` either
//! way). It is the list the Linux kernel keeps as `zmm_exclusion_list` (now the
//! `X86_FEATURE_PREFER_YMM` flag) and BoringSSL as `CRYPTO_cpu_avoid_zmm_registers`:
//! Rocket Lake, Sapphire Rapids and later Intel parts, and AMD from Zen 4 (the first with
//! AVX-512, whose 512-bit instructions run at full clock), keep `Vaes512`.

use crate::cpu::{self, Cpu, CpuFeatures, Vendor};
use core::{fmt, str::FromStr};

/// An implementation of AES-GCM for a class of CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Backend {
    /// VAES + VPCLMULQDQ on 512-bit vectors (AVX-512 F/BW/VL): 16 blocks per iteration.
    Vaes512,
    /// VAES + VPCLMULQDQ on 256-bit vectors (AVX2), for CPUs without AVX-512.
    Vaes256,
    /// AES-NI + PCLMULQDQ on 128-bit vectors.
    AesNi,
    /// The RustCrypto `aes` and `ghash` crates; runs anywhere.
    Portable,
}

const VAES256_NEEDS: u32 = AESNI_NEEDS
    | CpuFeatures::AVX
    | CpuFeatures::AVX2
    | CpuFeatures::VAES
    | CpuFeatures::VPCLMULQDQ
    | CpuFeatures::OS_YMM;
const VAES512_NEEDS: u32 = VAES256_NEEDS
    | CpuFeatures::AVX512F
    | CpuFeatures::AVX512BW
    | CpuFeatures::AVX512VL
    | CpuFeatures::OS_ZMM;
const AESNI_NEEDS: u32 =
    CpuFeatures::AES | CpuFeatures::PCLMULQDQ | CpuFeatures::SSSE3 | CpuFeatures::SSE41;

/// The best back end for a CPU with features `f` on this target, whoever made it.
pub fn select_for_features(f: CpuFeatures) -> Backend {
    select_for_cpu(Cpu {
        features: f,
        ..Cpu::default()
    })
}

/// The best back end for `cpu` on this target: the first of `preference(cpu)` it can run.
pub fn select_for_cpu(cpu: Cpu) -> Backend {
    preference(cpu)
        .into_iter()
        .find(|b| b.runs_with(cpu.features))
        .unwrap_or(Backend::Portable)
}

/// Every back end, in the order `cpu` prefers them (see the module documentation).
pub fn preference(cpu: Cpu) -> [Backend; 4] {
    use Backend::*;
    if avoids_zmm(cpu) {
        [Vaes256, Vaes512, AesNi, Portable]
    } else {
        Backend::ALL
    }
}

/// How the kernels should run on `cpu`, where the best way differs between CPUs that run
/// the same instructions (each choice is explained where the kernel makes it).
#[cfg(target_arch = "x86_64")]
pub(crate) fn tuning_for_cpu(cpu: Cpu) -> crate::x86_64::Tuning {
    use crate::x86_64::ShortIn256Bits;
    // Measured on Zen 4: AMD's 512-bit multiplies share issue slots with AES, and its
    // 512-bit instructions issue as two halves, which a one-block message pays for.
    // Measured on Zen 5 (family 0x1a): a 512-bit VPCLMULQDQ issues every other cycle, and
    // the AES-128 loop waits on its running hash; the reduction per 32 blocks pays there,
    // and on Zen 4 too (see `vaes512_gcm::PAIR_MIN_LEN`). Zen 5's 512-bit instructions
    // issue whole, and short messages stay in this kernel.
    // `save_multiplies` also puts the 128-bit kernel's products in Karatsuba form, measured
    // on Zen 5 with that kernel forced; the AMD cores that run it by default (Zen 1 and 2,
    // no VAES) were not measured.
    let amd = cpu.vendor == Vendor::Amd;
    let zen5_or_later = amd && cpu.family >= 0x1a;
    // Intel's cores that run the 512-bit kernel by default (AVX-512 without the clock
    // penalty), measured on a 2-vCPU KVM guest of a Xeon with AMX and AVX512-FP16
    // (Sapphire Rapids or later; the hypervisor reports family 6 model 0xa7), TSC ticks per
    // call (20th percentile of 40 runs of 50000 calls in place, AD 13 B, best of three
    // alternated processes), AES-128 / AES-256:
    // - the 512-bit kernel's short path against the 256-bit kernel's one-pass paths, seal
    //   16 B 72 / 75 against 46 / 46, 64 B 72 / 76 against 53 / 58, 224 B 126 / 139
    //   against 94 / 96; open 16 B 68 / 75 against 46 / 45, 128 B 78 / 85 against 63 /
    //   68, 224 B 119 / 123 against 84 / 90. The 256-bit kernel's groups gained nothing
    //   there (seal 256 B 110 / 123 against 124 / 145, 464 B 169 / 187 against 179 /
    //   204, 672 B 209 / 228 against 255 / 297; opens mixed, 320 B 135 / 140 against
    //   119 / 132 but 256 B AES-256 106 against 118), so only the one-pass sizes move;
    // - fewer multiplies in the bulk loop (`save_multiplies`), against four products a
    //   block and the carry multiplied, medians of 7 alternated processes at 16 KiB: seal
    //   2541 / 3012 -> 2499 / 2905, open 2573 / 2970 -> 2477 / 2950; at 1350 B (5) seal
    //   326 / 358 -> 303 / 354, open 311 / 341 -> 304 / 340; at 4 KiB seal 695 / 795 ->
    //   689 / 777, open 734 / 807 -> 692 / 799. The 128-bit kernel forced, whose bulk loop
    //   the flag also changes, stayed within 1% (16 KiB and 1350 B). The price is at 15
    //   to 20 blocks, 1-5% (240 B, medians of 5, seal 119 / 142 -> 123 / 145, open 117 /
    //   127 -> 121 / 133), where the message is one step and a tail;
    // - one reduction per 32 blocks (`pair_reduction`), AES-128, medians of 7 alternated
    //   processes: seal 2 KiB 352 -> 342, 4 KiB 631 -> 598, 8 KiB 1187 -> 1126, 16 KiB
    //   2303 -> 2160 (3-6% faster). The pairs' open, hashing the ciphertext it decrypts
    //   (as on AMD), was slower (the same method, 7 processes: 16 KiB 2378-2468 ->
    //   2560-2752, 4 KiB 639-700 -> 665-764; with its input kept in registers rather than
    //   reloaded for the last round, 2501-2621 at 16 KiB); hashing each step's ciphertext
    //   in the next step instead (`open_hashes_late`, AES-128 only), it is faster than
    //   one reduction per step (see `vaes512_gcm::bulk_with`). The price is AES-128 key
    //   set-up, which derives `H^32..H^17`: the speed tool, one run, 77.8 ns against
    //   AES-256's 71.5 (the session before, 62.4 against 71.7).
    // Rocket Lake itself (Cypress Cove cores), which the same rule covers, was not measured.
    let intel_avx512 =
        cpu.vendor == Vendor::Intel && Backend::Vaes512.runs_with(cpu.features) && !avoids_zmm(cpu);
    crate::x86_64::Tuning {
        save_multiplies: amd || intel_avx512,
        short_in_256_bits: if amd && !zen5_or_later {
            ShortIn256Bits::Groups
        } else if intel_avx512 {
            ShortIn256Bits::OnePass
        } else {
            ShortIn256Bits::None
        },
        pair_reduction: amd || intel_avx512,
        open_hashes_late: intel_avx512,
    }
}

/// Whether `cpu` is one of the Intel cores that slow down under 512-bit vectors.
pub fn avoids_zmm(cpu: Cpu) -> bool {
    const MODELS: [u8; 8] = [0x55, 0x6a, 0x6c, 0x7d, 0x7e, 0x9d, 0x8c, 0x8d];
    cpu.vendor == Vendor::Intel && cpu.family == 6 && MODELS.contains(&cpu.model)
}

impl Backend {
    /// Every back end, widest first.
    pub const ALL: [Backend; 4] = [
        Backend::Vaes512,
        Backend::Vaes256,
        Backend::AesNi,
        Backend::Portable,
    ];

    /// The best back end for this CPU.
    pub fn detect() -> Backend {
        select_for_cpu(cpu::cpu())
    }

    /// True when this CPU can run the back end.
    pub fn is_available(self) -> bool {
        self.runs_with(cpu::features())
    }

    /// The back ends this CPU supports, best first ([`Backend::detect`]'s choice first,
    /// `Portable` always last).
    pub fn available() -> impl Iterator<Item = Backend> {
        let cpu = cpu::cpu();
        preference(cpu)
            .into_iter()
            .filter(move |b| b.runs_with(cpu.features))
    }

    /// A short lowercase name: `vaes512`, `vaes256`, `aesni` or `portable`.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Vaes512 => "vaes512",
            Backend::Vaes256 => "vaes256",
            Backend::AesNi => "aesni",
            Backend::Portable => "portable",
        }
    }

    fn runs_with(self, f: CpuFeatures) -> bool {
        let needs = match self {
            Backend::Portable => return true,
            Backend::AesNi => AESNI_NEEDS,
            Backend::Vaes256 => VAES256_NEEDS,
            Backend::Vaes512 => VAES512_NEEDS,
        };
        cfg!(target_arch = "x86_64") && f.has(needs)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`Backend`] name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownBackend;

impl fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown back end (expected vaes512, vaes256, aesni or portable)")
    }
}

impl FromStr for Backend {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s))
            .ok_or(UnknownBackend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuFeatures as F;

    const WESTMERE: u32 = F::AES | F::PCLMULQDQ | F::SSSE3 | F::SSE41;
    const HASWELL: u32 = WESTMERE | F::AVX | F::AVX2 | F::OS_YMM;
    // Zen 3 and Alder Lake: VAES and VPCLMULQDQ on 256-bit vectors, no AVX-512.
    const ZEN3: u32 = HASWELL | F::VAES | F::VPCLMULQDQ;
    const ICELAKE: u32 = ZEN3 | F::AVX512F | F::AVX512BW | F::AVX512VL | F::OS_ZMM;

    fn pick(bits: u32) -> Backend {
        if cfg!(target_arch = "x86_64") {
            select_for_features(F(bits))
        } else {
            Backend::Portable
        }
    }

    #[test]
    fn real_cpus_get_their_backend() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        assert_eq!(pick(0), Backend::Portable, "qemu64: no AES-NI");
        assert_eq!(pick(WESTMERE), Backend::AesNi);
        assert_eq!(pick(HASWELL), Backend::AesNi);
        assert_eq!(pick(ZEN3), Backend::Vaes256);
        assert_eq!(pick(ICELAKE), Backend::Vaes512);
    }

    #[test]
    fn missing_pieces_fall_back() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        // AVX-512 hardware whose OS does not save ZMM state: the 256-bit kernels still run.
        assert_eq!(pick(ICELAKE & !F::OS_ZMM), Backend::Vaes256);
        // QEMU's `max` model: VAES without VPCLMULQDQ or AVX-512.
        assert_eq!(pick(HASWELL | F::VAES), Backend::AesNi);
        // VAES bits but an OS that saves no YMM state: no VEX code at all.
        assert_eq!(pick(ZEN3 & !F::OS_YMM), Backend::AesNi);
        // AVX-512 without BW or VL (Knights Landing style) is not enough for Vaes512.
        assert_eq!(pick(ICELAKE & !F::AVX512BW), Backend::Vaes256);
        assert_eq!(pick(ICELAKE & !F::AVX512VL), Backend::Vaes256);
        // AES-NI without carry-less multiply, or without SSSE3's byte shuffle.
        assert_eq!(pick(WESTMERE & !F::PCLMULQDQ), Backend::Portable);
        assert_eq!(pick(WESTMERE & !F::SSSE3), Backend::Portable);
        // VAES without AES-NI is not a real CPU, but must not select a kernel that needs it.
        assert_eq!(pick(ICELAKE & !F::AES), Backend::Portable);
    }

    fn intel(model: u8, bits: u32) -> Backend {
        select_for_cpu(Cpu {
            features: F(bits),
            vendor: Vendor::Intel,
            family: 6,
            model,
        })
    }

    #[test]
    fn cpus_that_slow_down_under_zmm_get_256_bit_vectors() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        // Ice Lake server (0x6a, 0x6c), client (0x7d, 0x7e) and Tiger Lake (0x8c, 0x8d):
        // VAES and AVX-512, and the 256-bit kernel.
        for model in [0x6a, 0x6c, 0x7d, 0x7e, 0x9d, 0x8c, 0x8d] {
            assert_eq!(intel(model, ICELAKE), Backend::Vaes256, "model {model:#x}");
        }
        // Skylake-SP has AVX-512 but no VAES: AES-NI, as without the list.
        assert_eq!(
            intel(
                0x55,
                HASWELL | F::AVX512F | F::AVX512BW | F::AVX512VL | F::OS_ZMM
            ),
            Backend::AesNi
        );
        // Rocket Lake (0xa7), Sapphire Rapids (0x8f), Emerald Rapids (0xcf), Granite
        // Rapids (0xad) keep the 512-bit kernel.
        for model in [0xa7, 0x8f, 0xcf, 0xad] {
            assert_eq!(intel(model, ICELAKE), Backend::Vaes512, "model {model:#x}");
        }
        // AMD Zen 4 (family 0x19 model 0x11) and Zen 5 (0x1a): 512-bit; Zen 3: 256-bit.
        let amd = |family, model, bits| {
            select_for_cpu(Cpu {
                features: F(bits),
                vendor: Vendor::Amd,
                family,
                model,
            })
        };
        assert_eq!(amd(0x19, 0x11, ICELAKE), Backend::Vaes512);
        assert_eq!(amd(0x1a, 0x02, ICELAKE), Backend::Vaes512);
        assert_eq!(amd(0x19, 0x01, ZEN3), Backend::Vaes256);
        // The same model numbers from another vendor are not on the list.
        assert_eq!(
            select_for_cpu(Cpu {
                features: F(ICELAKE),
                vendor: Vendor::Amd,
                family: 6,
                model: 0x6a
            }),
            Backend::Vaes512
        );
        // On a listed CPU whose OS saves no ZMM state, nothing changes: Vaes256.
        assert_eq!(intel(0x6a, ICELAKE & !F::OS_ZMM), Backend::Vaes256);
        // The preference order keeps every back end, the listed CPUs' choice first.
        let icx = Cpu {
            features: F(ICELAKE),
            vendor: Vendor::Intel,
            family: 6,
            model: 0x6a,
        };
        assert_eq!(preference(icx)[0], Backend::Vaes256);
        let mut sorted = preference(icx);
        sorted.sort();
        assert_eq!(sorted, Backend::ALL);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn amd_and_intel_tunings() {
        use crate::x86_64::{ShortIn256Bits, Tuning};
        let cpu = |vendor| Cpu {
            features: F(ICELAKE),
            vendor,
            family: 0x19,
            model: 0x11,
        };
        let (amd, intel) = (
            tuning_for_cpu(cpu(Vendor::Amd)),
            tuning_for_cpu(cpu(Vendor::Intel)),
        );
        // Zen 4 (family 0x19 model 0x11): short messages in 256 bits, the 32-block reduction.
        assert!(amd.save_multiplies && amd.pair_reduction && !amd.open_hashes_late);
        assert_eq!(amd.short_in_256_bits, ShortIn256Bits::Groups);
        // An Intel core with AVX-512 at full clock (not on the `avoids_zmm` list): fewer
        // multiplies, one-pass messages in 256 bits, one reduction per 32 blocks, AES-128
        // opens hashing late.
        assert!(intel.save_multiplies && intel.pair_reduction && intel.open_hashes_late);
        assert_eq!(intel.short_in_256_bits, ShortIn256Bits::OnePass);
        // Sapphire Rapids and Emerald Rapids as they report themselves, and this kind of
        // guest (model 0xa7), alike.
        for model in [0x8f, 0xcf, 0xa7] {
            assert_eq!(
                tuning_for_cpu(Cpu {
                    model,
                    family: 6,
                    ..cpu(Vendor::Intel)
                }),
                intel
            );
        }
        // Intel without AVX-512 (Alder Lake: VAES, AVX2), or on the `avoids_zmm` list (Ice
        // Lake-SP, which runs the 256-bit kernel): no change from the defaults, as
        // another vendor's.
        let plain = Tuning::default();
        let alder_lake = Cpu {
            features: F(ZEN3),
            family: 6,
            model: 0x97,
            ..cpu(Vendor::Intel)
        };
        assert_eq!(tuning_for_cpu(alder_lake), plain);
        let ice_lake = Cpu {
            family: 6,
            model: 0x6a,
            ..cpu(Vendor::Intel)
        };
        assert_eq!(tuning_for_cpu(ice_lake), plain);
        assert_eq!(tuning_for_cpu(cpu(Vendor::Other)), plain);
        // Zen 5 (family 0x1a model 2): the 32-block reduction, and short messages kept in
        // the 512-bit kernel.
        let zen5 = tuning_for_cpu(Cpu {
            family: 0x1a,
            model: 0x02,
            ..cpu(Vendor::Amd)
        });
        assert!(zen5.save_multiplies && zen5.pair_reduction && !zen5.open_hashes_late);
        assert_eq!(zen5.short_in_256_bits, ShortIn256Bits::None);
    }

    #[test]
    fn names_round_trip() {
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
        }
        assert_eq!("AESNI".parse::<Backend>(), Ok(Backend::AesNi));
        assert!("avx".parse::<Backend>().is_err());
    }

    #[test]
    fn available_is_consistent_with_detect() {
        assert_eq!(Backend::available().next(), Some(Backend::detect()));
        let avail: [Option<Backend>; 4] = {
            let mut a = [None; 4];
            for (slot, b) in a.iter_mut().zip(Backend::available()) {
                *slot = Some(b);
            }
            a
        };
        assert_eq!(avail[0], Some(Backend::detect()));
        assert!(Backend::Portable.is_available());
        assert_eq!(Backend::available().last(), Some(Backend::Portable));
    }
}

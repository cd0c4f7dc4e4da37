//! Which implementation a key runs, chosen once when the key is made: the AES back end
//! (gcm-core's), the hash compression of the HMAC, and whether seal stitches the CBC
//! chain into the hash.
//!
//! `KeyInit::new` picks the fastest this CPU has; `new_with_engines` on each suite forces
//! a choice, so that a test (or a benchmark) can run every implementation the CPU has,
//! not only the one it would pick.

use core::fmt;

pub use gcm_core::Backend;

use crate::{cbc::CbcCipher, digest::HashAlg, hmac_key::HmacKey};

/// The compression function a key's HMAC runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum HashEngine {
    /// The RustCrypto `sha1` / `sha2` crates' compression (which picks its own back end,
    /// SHA-NI or AVX2 among them, on each call). Runs anywhere.
    RustCrypto = 0,
    /// This crate's SHA-1 or SHA-256 on the SHA extensions (x86_64 with SHA-NI and
    /// SSE4.1). Seal can stitch AES-CBC into it.
    ShaNi,
    /// This crate's SHA-1 or SHA-256 with its rounds on the SHA extensions and (part of)
    /// its message schedule on AVX-512VL rotations and XORs: SHA-1's whole schedule
    /// instead of `SHA1MSG1`/`SHA1MSG2`, SHA-256's σ0 instead of `SHA256MSG1` (x86_64
    /// with SHA-NI and AVX-512VL). Keys take it on Intel's cores from Golden Cove on,
    /// whose SHA unit issues `SHA1MSG2` and `SHA256MSG1` once every 4 cycles; elsewhere
    /// they take `ShaNi`. Seal can stitch AES-CBC into it.
    ShaNiAvx512,
    /// This crate's SHA-512 (for SHA-384) on AVX2 and BMI1/BMI2. Seal can stitch AES-CBC
    /// into it.
    Sha512Avx2,
    /// This crate's SHA-512 (for SHA-384) on AVX-512VL, AVX2 and BMI1/BMI2. Seal can
    /// stitch AES-CBC into it.
    Sha512Avx512,
    /// This crate's SHA-1 or SHA-256 with its rounds in scalar BMI2 code and its message
    /// schedule on AVX2, two blocks at a time, for the CPUs with AVX2 but without SHA-NI
    /// (Intel Haswell to Cascade Lake; x86_64 with AVX2 and BMI1/BMI2). Keys take it
    /// only where SHA-NI is missing. Seal can stitch AES-CBC into it.
    Avx2,
    /// `Avx2`'s SHA-1 or SHA-256 with the message schedule on AVX-512VL rotations and
    /// three-way XORs, for the CPUs with AVX-512 but without SHA-NI (Intel Skylake-SP,
    /// Cascade Lake and Cooper Lake; x86_64 with AVX-512F, AVX-512VL, AVX2 and
    /// BMI1/BMI2). Keys take it only where SHA-NI is missing. Seal can stitch AES-CBC
    /// into it.
    Avx512,
}

impl HashEngine {
    /// Every engine. A key takes the first its hash and CPU can run, except that SHA-1
    /// and SHA-256 take `ShaNiAvx512` only on the cores it was made for (and `ShaNi`
    /// elsewhere).
    pub const ALL: [HashEngine; 7] = [
        HashEngine::Sha512Avx512,
        HashEngine::Sha512Avx2,
        HashEngine::ShaNi,
        HashEngine::ShaNiAvx512,
        HashEngine::Avx512,
        HashEngine::Avx2,
        HashEngine::RustCrypto,
    ];

    /// A short lowercase name: `rustcrypto`, `sha-ni`, `sha-ni-avx512`, `sha512-avx2`,
    /// `sha512-avx512`, `avx2` or `avx512`.
    pub const fn name(self) -> &'static str {
        match self {
            HashEngine::RustCrypto => "rustcrypto",
            HashEngine::ShaNi => "sha-ni",
            HashEngine::ShaNiAvx512 => "sha-ni-avx512",
            HashEngine::Sha512Avx2 => "sha512-avx2",
            HashEngine::Sha512Avx512 => "sha512-avx512",
            HashEngine::Avx2 => "avx2",
            HashEngine::Avx512 => "avx512",
        }
    }
}

impl fmt::Display for HashEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The implementation choices of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Engines {
    /// The block cipher's back end. AES suites run on gcm-core's back ends; the 3DES
    /// suites only on [`Backend::Portable`] (this crate's constant-time 3DES, whose CBC
    /// decryption runs on the widest vectors the CPU has, chosen with the key).
    pub cipher: Backend,
    /// The HMAC hash's compression function.
    pub hash: HashEngine,
    /// Whether seal runs the CBC encryption inside the hash rounds: needs an AES back end
    /// on AES-NI (any but `Portable`) and a hash engine that has a stitched seal.
    pub stitched_seal: bool,
}

impl fmt::Display for Engines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seal = if self.stitched_seal {
            "stitched"
        } else {
            "plain"
        };
        write!(f, "{}/{}/{seal}", self.cipher, self.hash)
    }
}

/// The error of `new_with_engines`: this CPU cannot run the engines asked for, or they do
/// not apply to the suite (a SHA-512 engine for a SHA-1 suite, a stitched seal without
/// AES-NI, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineUnavailable;

impl fmt::Display for EngineUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("engine not available for this suite on this CPU")
    }
}

impl core::error::Error for EngineUnavailable {}

/// How an engine's rounds are written for this CPU's core, chosen with the engine when a
/// key is made. Only the SHA-512 engines have more than one build (see
/// `x86_64::sha512::round!` and `x86_64::sha512_avx512::SplitLanes`); the others run the
/// same code for any.
// `repr(u8)` with a variant of 0: a key holding one is wiped as plain bytes (see
// `HmacKey`'s `Drop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RoundTuning {
    /// The fewest operations a round, for cores whose four integer ALUs bound the rounds:
    /// AMD Zen, and Intel's before Golden Cove (Haswell to Ice Lake and Tiger Lake).
    FewestOps = 0,
    /// The shortest chain of dependent steps a round, for cores with five integer ALUs:
    /// Intel's from Golden Cove on (Alder Lake, Sapphire Rapids and later).
    ShortChain,
    /// `a..d` in vector lanes and `e..h` scalar, for AMD Zen 4 (see [`Tunings::for_cpu`]).
    /// Needs AVX-512VL: on the AVX2 engine it is `FewestOps` (see [`Self::on`]).
    SplitLanes,
}

impl RoundTuning {
    /// Every form, in the order the constant-time harness steps through them (see
    /// [`Tunings::for_this_cpu`]).
    const ALL: [RoundTuning; 3] = [
        RoundTuning::FewestOps,
        RoundTuning::ShortChain,
        RoundTuning::SplitLanes,
    ];

    /// The tunings that give `engine` different code: all three for the AVX-512 engine,
    /// the scalar two for the AVX2 one, one for the others (for the tests that run every
    /// build).
    #[cfg(test)]
    pub(crate) fn builds_of(engine: HashEngine) -> &'static [RoundTuning] {
        match engine {
            HashEngine::Sha512Avx512 => &Self::ALL,
            HashEngine::Sha512Avx2 => &[RoundTuning::FewestOps, RoundTuning::ShortChain],
            _ => &[RoundTuning::ShortChain],
        }
    }

    /// The form `steps` places after this one in [`Self::ALL`], round the end.
    fn rotated(self, steps: u8) -> Self {
        Self::ALL[(self as usize + usize::from(steps)) % Self::ALL.len()]
    }

    /// This form as `engine` runs it: `SplitLanes` is the AVX-512 engine's alone, and the
    /// others take the form it replaces there, `FewestOps`.
    pub(crate) fn on(self, engine: HashEngine) -> Self {
        match (self, engine) {
            (RoundTuning::SplitLanes, e) if e != HashEngine::Sha512Avx512 => RoundTuning::FewestOps,
            (t, _) => t,
        }
    }

    /// The scalar form for `cpu`, from its vendor, family and model: the short chain on
    /// the Intel cores with five integer ALUs, the fewest operations everywhere else.
    /// What the stitched seal runs, and the rest too, except on AMD Zen 5 and on AMD
    /// family 0x19, which runs split lanes (see [`Tunings::for_cpu`]).
    ///
    /// Measured: Zen 4 ran the fewest-operations form 4% faster than the short chain
    /// when that took 25 operations, and against the 24 it takes now still seals 1.5-2.5%
    /// faster (opens within 2.5% either way, see `sha512::round!`). Since open runs one
    /// copy of the rounds (`sha512::compress`), Zen 4 (EPYC, family 25 model 17, AVX-512
    /// engine) opens AES-256-CBC-SHA384 records with the fewest operations 0.5-3% faster
    /// at 256 bytes and 3-4.5% from 1350 (TSC cycles a record, fastest of 5000 batches of eight, three
    /// runs, against the short chain: 256 B 1995-2005 / 2011-2057, 1350 B 5274-5284 /
    /// 5453-5512, 4 KiB 14114-14137 / 14699-14738, 16 KiB 52695-52718 / 55074-55120).
    /// Emerald Rapids (Raptor Cove cores) ran the 25-operation short chain 7% faster
    /// than rounds like the other form. Not measured, from `llvm-mca-19` on the second
    /// block's loop (cycles a round, 24-operation short chain against fewest operations):
    /// `haswell` and `znver2` 7.50 / 6.44, `skylake`, `icelake-server` and `tigerlake`
    /// 7.14 / 6.38, `znver3` 6.31 / 6.38 (a tie, as on Zen 4), but `alderlake` and
    /// `sapphirerapids` 7.00 / 8.81: the split follows the number of integer ALUs, which
    /// is what the two forms trade against latency.
    ///
    /// A hypervisor may report another model: a KVM guest of a Xeon with AMX and
    /// AVX512-FP16 (Sapphire Rapids or later) reported model 0xa7 (Rocket Lake, whose
    /// Cypress Cove cores have four ALUs), and sealed / opened AES-256-CBC-SHA384 2-3% /
    /// 4% faster with the short chain (ours / OpenSSL's composition in the `speed` tool,
    /// 1350 B and 16 KiB, five rounds, three alternated runs: seal 1.53-1.59 / 1.50-1.56
    /// -> 1.59-1.63 / 1.53-1.57, open 1.15-1.17 / 1.05-1.09 -> 1.20-1.22 / 1.11-1.12):
    /// [`intel_golden_cove_or_later`] goes by AVX512-FP16 as well as by the model.
    pub(crate) fn for_cpu(cpu: gcm_core::__Cpu) -> Self {
        if intel_golden_cove_or_later(cpu) {
            RoundTuning::ShortChain
        } else {
            RoundTuning::FewestOps
        }
    }
}

/// Intel's performance cores from Golden Cove on (five integer ALUs, and a SHA unit slow
/// at `SHA1MSG2`), from the family and model, or from AVX512-FP16 where a hypervisor
/// reports a model of its own.
fn intel_golden_cove_or_later(cpu: gcm_core::__Cpu) -> bool {
    // Family 6 models with Golden Cove or later performance cores: Alder Lake (0x97,
    // 0x9a), Raptor Lake (0xb7, 0xba, 0xbf), Meteor Lake (0xaa, 0xac), Lunar Lake (0xbd),
    // Arrow Lake (0xc5, 0xc6), Sapphire Rapids (0x8f), Emerald Rapids (0xcf), Granite
    // Rapids (0xad, 0xae). The parts with only efficiency cores (Alder Lake-N, Sierra
    // Forest) have four ALUs and are left out. Later families are assumed to keep five.
    const GOLDEN_COVE_OR_LATER: [u8; 14] = [
        0x97, 0x9a, 0xb7, 0xba, 0xbf, 0xaa, 0xac, 0xbd, 0xc5, 0xc6, 0x8f, 0xcf, 0xad, 0xae,
    ];
    // AVX512-FP16: Sapphire Rapids on; fused off on the client parts, which the model
    // list covers. Not on Rocket Lake (0xa7), the model such a guest reported.
    let fp16_xeon = cpu.features.has(gcm_core::__CpuFeatures::AVX512FP16);
    cpu.vendor == gcm_core::__Vendor::Intel
        && (cpu.family > 6
            || (cpu.family == 6 && (GOLDEN_COVE_OR_LATER.contains(&cpu.model) || fp16_xeon)))
}

/// Where the message schedules of SHA-1 and SHA-256 run, chosen per CPU when a key is
/// made: on the SHA extensions' `SHA1MSG1`/`SHA1MSG2` and `SHA256MSG1`/`SHA256MSG2`
/// ([`HashEngine::ShaNi`]), or (SHA-1's whole, SHA-256's σ0 step) on AVX-512VL vector
/// operations ([`HashEngine::ShaNiAvx512`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShaScheduleOn {
    ShaMsg,
    Vectors,
}

impl ShaScheduleOn {
    /// On vectors on Intel's cores from Golden Cove on, on the SHA unit elsewhere. (The
    /// vector schedule needs AVX-512VL: Alder Lake and the other client parts, whose
    /// AVX-512 is fused off, run `ShaNi` all the same.)
    ///
    /// Measured on an Intel Xeon with AVX512-FP16 and AMX (a KVM guest reporting family 6
    /// model 0xa7): `SHA1MSG2` issues once every 4 cycles there (`SHA1RNDS4` once every
    /// 3, on another port), and its 6-cycle latency chains the schedule from group to
    /// group. In a stand-alone copy of the loops, cycles a 64-byte block: the compression
    /// 119 with `SHA1MSG2`, 99 with the schedule on AVX-512VL; the stitched
    /// AES-128-CBC-SHA1 seal, whose AES chain alone takes 120, 138 and 121. The `speed`
    /// tool, same run, MB/s at 1350 / 16384 bytes: AES-128-CBC-SHA1 seal 1558 / 1812
    /// with `SHA1MSG2`, 1844 / 2091 on vectors (OpenSSL's stitched cipher 1320 / 1676);
    /// open 1497 / 1909 and 1772 / 2298.
    ///
    /// SHA-256, same CPU: `SHA256MSG1` also issues once every 4 cycles, on the port of
    /// `SHA256RNDS2` (once every 3, latency 4: 128 cycles a block of dependent rounds,
    /// the bound of both the compression and the stitched seal, whose AES-128 chain
    /// takes 120). Its σ0 on AVX-512VL, the `speed` tool (medians of 9 rounds), MB/s at
    /// 256 / 1350 / 8192 / 16384 bytes: AES-128-CBC-SHA256 stitched seal 939 / 1555 /
    /// 1809 / 1805 with `SHA256MSG1`, 957 / 1613 / 1885 / 1909 with σ0 on vectors
    /// (OpenSSL's stitched cipher 678 / 1427 / 1822 / 1860); open and AES-256 (bound by
    /// its AES chain) within 1%.
    ///
    /// Not measured on Ice Lake or Tiger Lake (SHA-NI, AVX-512, four ALUs), nor on AMD,
    /// whose SHA units were not the bound there (the stitched seal ran at the AES chain's
    /// own speed on Zen 4): those keep the SHA unit's schedule until measured.
    pub(crate) fn for_cpu(cpu: gcm_core::__Cpu) -> Self {
        if intel_golden_cove_or_later(cpu) {
            ShaScheduleOn::Vectors
        } else {
            ShaScheduleOn::ShaMsg
        }
    }
}

/// AMD from family 0x1a (Zen 5) on: the cores `Tunings` and `FinishSteps` were measured
/// on when they were made to differ from the others.
fn amd_zen5_or_later(cpu: gcm_core::__Cpu) -> bool {
    cpu.vendor == gcm_core::__Vendor::Amd && cpu.family >= 0x1a
}

/// AMD family 0x19: Zen 3 and Zen 4. Only Zen 4 has AVX-512, so only Zen 4 runs the
/// AVX-512 engine and with it [`RoundTuning::SplitLanes`].
fn amd_family_19h(cpu: gcm_core::__Cpu) -> bool {
    cpu.vendor == gcm_core::__Vendor::Amd && cpu.family == 0x19
}

/// The round forms of one key: its plain compressions' (open's record MAC, the plain
/// seal's, both outer hashes, the key's pads) and its stitched seal's inner hash, chosen
/// per CPU when the key is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tunings {
    pub(crate) plain: RoundTuning,
    pub(crate) stitched: RoundTuning,
}

impl Tunings {
    /// One form for both.
    #[cfg(test)]
    pub(crate) fn both(tuning: RoundTuning) -> Self {
        Tunings {
            plain: tuning,
            stitched: tuning,
        }
    }

    /// The forms for the CPU this process runs on, or, while the constant-time harness
    /// asks for pass `k` of its other forms (`ct_check::swap_round_tuning`), each moved
    /// `k` places along [`RoundTuning::ALL`], so that its passes run every form.
    pub(crate) fn for_this_cpu() -> Self {
        let t = Self::for_cpu(gcm_core::__this_cpu());
        let pass = crate::ct_check::round_tuning_pass();
        Tunings {
            plain: t.plain.rotated(pass),
            stitched: t.stitched.rotated(pass),
        }
    }

    /// [`RoundTuning::for_cpu`] for both, except on AMD from family 0x1a (Zen 5) on,
    /// whose six integer ALUs run the short chain's 24 operations a round beside each
    /// other: there the plain compressions take the short chain, and the stitched seal,
    /// whose AES code between the rounds wants the ALUs' spare issue slots, the fewest
    /// operations.
    ///
    /// Measured on an AMD EPYC Zen 5 (family 0x1a model 2, AVX-512 engine),
    /// AES-256-CBC-SHA384, TSC cycles a record, alternated in one process (fastest of
    /// thousands of batches of eight, two runs), fewest operations against the short
    /// chain: open 256 B 1836-1901 / 1764-1842, 1350 B 4540-4628 / 4449-4576, 8 KiB
    /// 22100-22204 / 21151-21437, 16 KiB 41700-42526 / 39991-41122; stitched seal 256 B
    /// 1761-1849 / 1904-1966, 1350 B 4520-4634 / 4881-4995, 16 KiB 44794-45864 /
    /// 47411-48594 (6-8% slower with the short chain).
    ///
    /// On AMD family 0x19, both [`RoundTuning::SplitLanes`], which Zen 4 runs on its
    /// AVX-512 engine and Zen 3 (no AVX-512, so the AVX2 engine) as `FewestOps`. Measured
    /// on an AMD EPYC Zen 4 (family 25 model 17, AVX-512 engine), AES-256-CBC-SHA384, TSC
    /// cycles a record (fastest of 300 batches of eight, the three forms alternated in one
    /// process, three runs), split lanes against the fewest operations, seal (stitched) /
    /// open: 16 B 1043-1049 / 994 against 1186-1202 / 1124-1131; 256 B 1764-1768 /
    /// 1865-1875 against 2002-2005 / 2028; 1350 B 4897-4936 / 4884-4975 against 5609-5648
    /// / 5346-5359; 4 KiB 13393-13448 / 13074-13097 against 15473-15635 / 14365-14417;
    /// 16 KiB 50540-50550 / 48746-48779 against 58409-58457 / 53664-53696 (the short
    /// chain: 60492-60495 / 55942-55968). The compression alone: 345 ticks a block
    /// against 382. Not measured on the Intel cores with AVX-512, which keep their
    /// scalar forms, nor on Zen 5, whose vector pipes take 2 cycles a step for the
    /// additions and logic on the chain through `a` (see `sha512`).
    pub(crate) fn for_cpu(cpu: gcm_core::__Cpu) -> Self {
        if amd_family_19h(cpu) {
            return Tunings {
                plain: RoundTuning::SplitLanes,
                stitched: RoundTuning::SplitLanes,
            };
        }
        let stitched = RoundTuning::for_cpu(cpu);
        Tunings {
            plain: if amd_zen5_or_later(cpu) {
                RoundTuning::ShortChain
            } else {
                stitched
            },
            stitched,
        }
    }
}

/// How a secret-length finish (`digest::Stream::finish_with_secret_suffix`) compresses
/// its candidate blocks on an engine with a two-block compression (the SHA-512 engines),
/// chosen per CPU when a key is made; engines without one go block by block either way.
// `repr(u8)` with a variant of 0, as `RoundTuning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FinishSteps {
    /// Two blocks a call, one message schedule for both (measured faster on AMD Zen 3;
    /// see `HashAlg::pair_compressor`).
    Pairs = 0,
    /// One block a call: measured faster on AMD Zen 5 for records up to a few hundred
    /// bytes (see `for_cpu`).
    Blocks,
}

impl FinishSteps {
    /// The choice for this CPU (or the other one, in the odd passes of the constant-time
    /// harness's other round forms: `ct_check::swap_round_tuning`).
    pub(crate) fn for_this_cpu() -> Self {
        match (
            Self::for_cpu(gcm_core::__this_cpu()),
            crate::ct_check::round_tuning_pass() % 2 == 1,
        ) {
            (steps, false) => steps,
            (FinishSteps::Pairs, true) => FinishSteps::Blocks,
            (FinishSteps::Blocks, true) => FinishSteps::Pairs,
        }
    }

    /// Block by block on AMD from family 0x1a (Zen 5) on, in pairs elsewhere.
    ///
    /// Measured on an AMD EPYC Zen 5 (family 0x1a model 2), AES-256-CBC-SHA384 open, TSC
    /// cycles a record (fastest of 5000 batches of eight, open alone, three runs), pairs
    /// against blocks, AVX-512 engine, both through the one body of
    /// `x86_64::sha512::compress`: 16 B 702-715 / 708, 100 B 1085-1091 / 1033-1039,
    /// 256 B 1449-1462 / 1339-1355, 512 B 1969-2028 / 1988-2024, 1350 B 3532-3571 /
    /// 3571-3610, 4 KiB 9197-9285 / 9330-9343: blocks 7-8% faster up to 256 bytes, pairs
    /// at most 1% faster beyond. Why a pair costs more than two lone blocks there was
    /// not found (alone, in a loop, a pair takes 500-510 TSC cycles and a block 260).
    /// Earlier, with the pair a second copy of the rounds, blocks won by up to 17%
    /// (256 B 1911 / 1589). The pairs were measured on Zen 3 (AVX2 engine), where they
    /// opened 1350-byte records 2.7% faster (see `HashAlg::pair_compressor`), and on
    /// Zen 4 (EPYC, family 25 model 17, AVX-512 engine, one body): pairs against blocks,
    /// measured as on Zen 5, 100 B 1560-1563 / 1641-1644, 256 B 1995-1998 / 2086, 512 B
    /// 2830 / 2918-2921, 1350 B 5278-5284 / 5339-5343, 16 KiB within 0.2% (16 B 1121-1124
    /// / 1114-1118, within the noise). Zen 3 and the Intel cores keep them until measured
    /// again.
    pub(crate) fn for_cpu(cpu: gcm_core::__Cpu) -> Self {
        if amd_zen5_or_later(cpu) {
            FinishSteps::Blocks
        } else {
            FinishSteps::Pairs
        }
    }
}

/// The fastest engines this CPU has for cipher `C` and hash `H`.
pub(crate) fn best<C: CbcCipher, H: HashAlg>() -> Engines {
    let cipher = C::best_backend();
    let hash = H::best_engine();
    Engines {
        cipher,
        hash,
        stitched_seal: can_stitch::<C, H>(cipher, hash),
    }
}

/// Engines that run on every CPU.
pub(crate) fn portable() -> Engines {
    Engines {
        cipher: Backend::Portable,
        hash: HashEngine::RustCrypto,
        stitched_seal: false,
    }
}

/// Whether seal can stitch with these engines on this CPU.
fn can_stitch<C: CbcCipher, H: HashAlg>(cipher: Backend, hash: HashEngine) -> bool {
    C::STITCHES && cipher != Backend::Portable && H::stitches(hash)
}

/// Every combination of engines this CPU can run for `C` and `H`.
pub(crate) fn available<C: CbcCipher, H: HashAlg>() -> impl Iterator<Item = Engines> {
    C::backends().flat_map(|cipher| {
        HashEngine::ALL
            .into_iter()
            .filter(|&hash| H::is_available(hash))
            .flat_map(move |hash| {
                [false, true]
                    .into_iter()
                    .filter(move |&s| !s || can_stitch::<C, H>(cipher, hash))
                    .map(move |stitched_seal| Engines {
                        cipher,
                        hash,
                        stitched_seal,
                    })
            })
    })
}

/// The cipher and HMAC key of a suite on `engines`, checked against this CPU.
pub(crate) fn build<C: CbcCipher, H: HashAlg>(
    enc_key: &[u8],
    mac_key: &[u8],
    engines: Engines,
) -> Result<(C, HmacKey<H>), EngineUnavailable> {
    if !H::is_available(engines.hash)
        || (engines.stitched_seal && !can_stitch::<C, H>(engines.cipher, engines.hash))
    {
        return Err(EngineUnavailable);
    }
    let cipher = C::new_on(enc_key, engines.cipher).ok_or(EngineUnavailable)?;
    Ok((
        cipher,
        HmacKey::new(
            mac_key,
            engines.hash,
            Tunings::for_this_cpu(),
            engines.stitched_seal,
        ),
    ))
}

/// The engines a suite's key was made with.
pub(crate) fn of<C: CbcCipher, H: HashAlg>(cipher: &C, mac: &HmacKey<H>) -> Engines {
    Engines {
        cipher: cipher.backend(),
        hash: mac.engine(),
        stitched_seal: mac.seal_path == crate::record::SealPath::Stitched,
    }
}

/// The part of a suite type's API that does not depend on how it takes its IV: the
/// engine accessors (beside the suite's own `new_with_engines`) and `KeyInit`, which
/// takes the fastest engines and falls back to the portable ones. Expanded by
/// `explicit_iv_suite!` and `implicit_iv_suite!` for suite `$name` with cipher `$cipher`,
/// hash `$hash` and key size `$key`.
macro_rules! suite_engine_api {
    ($name:ident, $cipher:ty, $hash:ty, $key:ty) => {
        impl $name {
            /// The engines this key runs on.
            pub fn engines(&self) -> $crate::engine::Engines {
                $crate::engine::of(&self.cipher, &self.mac)
            }

            /// The engines `KeyInit::new` picks on this CPU.
            pub fn best_engines() -> $crate::engine::Engines {
                $crate::engine::best::<$cipher, $hash>()
            }

            /// Every choice of engines this CPU can run for this suite.
            pub fn available_engines() -> impl Iterator<Item = $crate::engine::Engines> {
                $crate::engine::available::<$cipher, $hash>()
            }

            /// What this key runs, with names, for the constant-time harness's list of
            /// what it covered.
            #[doc(hidden)]
            pub fn ct_engines(&self) -> $crate::ct_check::KeyEngines {
                $crate::ct_check::KeyEngines::of(&self.cipher, &self.mac)
            }
        }

        impl $crate::aead::KeySizeUser for $name {
            type KeySize = $key;
        }

        impl $crate::aead::KeyInit for $name {
            fn new(key: &$crate::aead::Key<Self>) -> Self {
                Self::new_with_engines(key, Self::best_engines())
                    .or_else(|_| Self::new_with_engines(key, $crate::engine::portable()))
                    .expect("the portable engines always run")
            }
        }
    };
}
pub(crate) use suite_engine_api;

#[cfg(test)]
mod tests {
    use super::{FinishSteps, RoundTuning, ShaScheduleOn, Tunings};
    use gcm_core::{__Cpu as Cpu, __Vendor as Vendor};

    /// A CPU identity with no features (the choices here look at vendor, family and model).
    fn cpu(vendor: Vendor, family: u8, model: u8) -> Cpu {
        Cpu {
            vendor,
            family,
            model,
            ..Cpu::default()
        }
    }

    #[test]
    fn round_tuning_by_core() {
        let fewest = RoundTuning::FewestOps;
        let short = RoundTuning::ShortChain;
        for (name, c, want) in [
            ("Zen 3", cpu(Vendor::Amd, 0x19, 0x01), fewest),
            ("Zen 4", cpu(Vendor::Amd, 0x19, 0x11), fewest),
            ("Zen 5", cpu(Vendor::Amd, 0x1a, 0x02), fewest),
            ("Haswell", cpu(Vendor::Intel, 6, 0x3c), fewest),
            ("Skylake-SP", cpu(Vendor::Intel, 6, 0x55), fewest),
            ("Ice Lake-SP", cpu(Vendor::Intel, 6, 0x6a), fewest),
            ("Alder Lake-N", cpu(Vendor::Intel, 6, 0xbe), fewest),
            ("Alder Lake", cpu(Vendor::Intel, 6, 0x97), short),
            ("Sapphire Rapids", cpu(Vendor::Intel, 6, 0x8f), short),
            ("Emerald Rapids", cpu(Vendor::Intel, 6, 0xcf), short),
            (
                "a later Intel family",
                cpu(Vendor::Intel, 0x13, 0x01),
                short,
            ),
            ("another vendor", cpu(Vendor::Other, 6, 0x8f), fewest),
            ("Rocket Lake", cpu(Vendor::Intel, 6, 0xa7), fewest),
            (
                "a Sapphire Rapids guest reported as Rocket Lake",
                Cpu {
                    features: gcm_core::__CpuFeatures(gcm_core::__CpuFeatures::AVX512FP16),
                    ..cpu(Vendor::Intel, 6, 0xa7)
                },
                short,
            ),
        ] {
            assert_eq!(RoundTuning::for_cpu(c), want, "{name}");
        }
    }

    #[test]
    fn sha_schedule_by_core() {
        let (msg, vectors) = (ShaScheduleOn::ShaMsg, ShaScheduleOn::Vectors);
        let fp16 = gcm_core::__CpuFeatures(gcm_core::__CpuFeatures::AVX512FP16);
        for (name, c, want) in [
            ("Zen 3", cpu(Vendor::Amd, 0x19, 0x01), msg),
            ("Zen 4", cpu(Vendor::Amd, 0x19, 0x11), msg),
            ("Zen 5", cpu(Vendor::Amd, 0x1a, 0x02), msg),
            ("Ice Lake-SP", cpu(Vendor::Intel, 6, 0x6a), msg),
            ("Tiger Lake", cpu(Vendor::Intel, 6, 0x8c), msg),
            ("Rocket Lake", cpu(Vendor::Intel, 6, 0xa7), msg),
            ("Alder Lake-N", cpu(Vendor::Intel, 6, 0xbe), msg),
            ("Alder Lake", cpu(Vendor::Intel, 6, 0x97), vectors),
            ("Sapphire Rapids", cpu(Vendor::Intel, 6, 0x8f), vectors),
            ("Emerald Rapids", cpu(Vendor::Intel, 6, 0xcf), vectors),
            ("Granite Rapids", cpu(Vendor::Intel, 6, 0xad), vectors),
            (
                "a Sapphire Rapids guest reported as Rocket Lake",
                Cpu {
                    features: fp16,
                    ..cpu(Vendor::Intel, 6, 0xa7)
                },
                vectors,
            ),
            (
                "another vendor with AVX512-FP16",
                Cpu {
                    features: fp16,
                    ..cpu(Vendor::Other, 6, 0xa7)
                },
                msg,
            ),
        ] {
            assert_eq!(ShaScheduleOn::for_cpu(c), want, "{name}");
        }
    }

    #[test]
    fn finish_steps_by_cpu() {
        for (name, c, want) in [
            ("Zen 3", cpu(Vendor::Amd, 0x19, 0x01), FinishSteps::Pairs),
            ("Zen 4", cpu(Vendor::Amd, 0x19, 0x11), FinishSteps::Pairs),
            ("Zen 5", cpu(Vendor::Amd, 0x1a, 0x02), FinishSteps::Blocks),
            (
                "a later AMD family",
                cpu(Vendor::Amd, 0x1b, 0x00),
                FinishSteps::Blocks,
            ),
            (
                "Emerald Rapids",
                cpu(Vendor::Intel, 6, 0xcf),
                FinishSteps::Pairs,
            ),
            (
                "another vendor",
                cpu(Vendor::Other, 0x1a, 0x02),
                FinishSteps::Pairs,
            ),
        ] {
            assert_eq!(FinishSteps::for_cpu(c), want, "{name}");
        }
    }

    #[test]
    fn tunings_by_cpu() {
        let fewest = RoundTuning::FewestOps;
        let short = RoundTuning::ShortChain;
        let split = RoundTuning::SplitLanes;
        for (name, c, plain, stitched) in [
            // Zen 3 runs it on the AVX2 engine, as `FewestOps` (see `split_lanes_on`).
            ("Zen 3", cpu(Vendor::Amd, 0x19, 0x01), split, split),
            ("Zen 4", cpu(Vendor::Amd, 0x19, 0x11), split, split),
            ("Zen 4 client", cpu(Vendor::Amd, 0x19, 0x61), split, split),
            ("Zen 5", cpu(Vendor::Amd, 0x1a, 0x02), short, fewest),
            ("Skylake-SP", cpu(Vendor::Intel, 6, 0x55), fewest, fewest),
            ("Emerald Rapids", cpu(Vendor::Intel, 6, 0xcf), short, short),
            (
                "another vendor",
                cpu(Vendor::Other, 0x1a, 0x02),
                fewest,
                fewest,
            ),
        ] {
            assert_eq!(Tunings::for_cpu(c), Tunings { plain, stitched }, "{name}");
        }
    }

    /// Split lanes run on the AVX-512 engine only; every other engine takes the form it
    /// replaces, and the scalar forms stay as they are everywhere.
    #[test]
    fn split_lanes_on() {
        use super::HashEngine;
        for engine in HashEngine::ALL {
            let want = if engine == HashEngine::Sha512Avx512 {
                RoundTuning::SplitLanes
            } else {
                RoundTuning::FewestOps
            };
            assert_eq!(RoundTuning::SplitLanes.on(engine), want, "{engine}");
            for t in [RoundTuning::FewestOps, RoundTuning::ShortChain] {
                assert_eq!(t.on(engine), t, "{engine}");
            }
        }
    }

    /// The constant-time harness's passes run every form, whichever this CPU starts from.
    #[test]
    fn passes_reach_every_form() {
        for start in RoundTuning::ALL {
            let mut seen: std::vec::Vec<RoundTuning> = (0..=crate::ct_check::ROUND_TUNING_PASSES)
                .map(|pass| start.rotated(pass))
                .collect();
            seen.sort_by_key(|&t| t as u8);
            seen.dedup();
            assert_eq!(seen, RoundTuning::ALL, "from {start:?}");
        }
    }
}

//! `clock-probe`: the core clock while each AES kernel runs back to back.
//!
//! The speed tool's roofline ratio is a ratio of times, and the two loops it compares do
//! not run at the same clock: on the development machine (Sapphire Rapids) the core drops
//! from about 3.0 to 2.75 GHz while the VAES/VPCLMULQDQ GCM loops run, but not for the
//! AES-CTR loop, nor for the 128-bit AES-NI GCM loop. This tool shows it, so that a
//! time ratio can be split into the loop's work per cycle and the clock it gets.
//!
//! What lowers the clock there, from synthetic loops probed the same way: not
//! VPCLMULQDQ or VAESENC on 512 bits as such (each alone at one per cycle, or the two
//! together keeping both 512-bit ports busy on changing data: 3.0 GHz), not memory
//! traffic with one port busy (the CTR and GHASH-only loops: 3.0 GHz), and not the
//! average load (the GCM loop idle three quarters of the time still gets 2.75 GHz), but
//! both ports busy together with loads or stores: one 64-byte store per four cycles next
//! to them gives 2.79 GHz, one per 32 cycles 2.89 GHz. A stitched GCM loop is exactly
//! that, so part of the gap to the CTR loop is the clock, whatever the code does.
//!
//! For each back end and key size it runs 16 KiB CTR, seal and open calls back to back in
//! alternating 20 ms blocks; after every 25 calls it times a chain of dependent 64-bit
//! multiplies (3 cycles each on every recent x86 core) against the TSC, which gives the
//! clock the core is running at in that state. Medians over the blocks are printed, with
//! each operation's cycles per call at its own clock and the ratio of CTR to GCM in time
//! and in cycles.
//!
//! Usage: `clock-probe [BACKEND...]` (default: every back end this CPU runs but portable).
//! x86_64 only: it reads the TSC.

fn main() {
    #[cfg(target_arch = "x86_64")]
    probe::main();
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("clock-probe reads the x86 time-stamp counter; this target has none");
}

#[cfg(target_arch = "x86_64")]
mod probe {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use benches::clock::median;
    use benches::ours::parse_backend;
    use benches::{AD, Alg, NONCE, Op, message, roofline_counter};
    use gcm_core::{Backend, GcmKey};

    /// Dependent `imul`s timed per probe: 3000 cycles, about a microsecond.
    const PROBE_IMULS: u64 = 1000;
    const MESSAGE: usize = 16384;

    /// A chain of `n` dependent multiplies (`n` a multiple of 4).
    #[inline(never)]
    fn imul_chain(n: u64) -> u64 {
        let mut x = 3u64;
        for _ in 0..n / 4 {
            // SAFETY: register-only arithmetic; no memory, stack or flags the compiler relies on.
            unsafe {
                core::arch::asm!(
                    "imul {0}, {0}", "imul {0}, {0}", "imul {0}, {0}", "imul {0}, {0}",
                    inout(reg) x,
                    options(nomem, nostack),
                );
            }
        }
        x
    }

    /// The TSC once every earlier instruction has completed (LFENCE), so that work still in
    /// flight is counted on the side of the reads it belongs to.
    fn fenced_tsc() -> u64 {
        // SAFETY: LFENCE and RDTSC are available on every x86_64 CPU.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
    }

    /// TSC ticks per second, from the wall clock over 100 ms.
    fn tsc_hz() -> f64 {
        let (t0, c0) = (Instant::now(), fenced_tsc());
        std::thread::sleep(Duration::from_millis(100));
        (fenced_tsc() - c0) as f64 / t0.elapsed().as_secs_f64()
    }

    /// Median clock (GHz) and TSC ticks per call while `op` (`None`: the AES-CTR loop, as
    /// the speed tool's roofline runs it) runs back to back.
    fn probe(
        key: &GcmKey,
        op: Option<Op>,
        buf: &mut [u8],
        blocks: usize,
        tsc_ghz: f64,
    ) -> (f64, f64) {
        let counter = roofline_counter();
        let (mut ghz, mut ticks) = (Vec::new(), Vec::new());
        for _ in 0..blocks {
            // For open, two seals give the two tags under which `buf` opens alternately (the
            // keystream is the same for every call, so opening flips the buffer between two
            // states).
            let mut tags = [[0u8; 16]; 2];
            if op == Some(Op::Open) {
                tags[1] = key.seal_in_place(&NONCE, &AD, buf).expect("seal");
                tags[0] = key.seal_in_place(&NONCE, &AD, buf).expect("seal");
            }
            let mut which = 0;
            let (mut calls, mut spent) = (0u64, 0u64);
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(20) {
                let a = fenced_tsc();
                for _ in 0..25 {
                    match op {
                        None => key.ctr32_apply_keystream(&counter, black_box(&mut *buf)),
                        Some(Op::Seal) => {
                            black_box(
                                key.seal_in_place(&NONCE, &AD, black_box(&mut *buf))
                                    .expect("seal"),
                            );
                        }
                        Some(Op::Open) => {
                            key.open_in_place(&NONCE, &AD, black_box(&mut *buf), &tags[which])
                                .expect("authentic message");
                            which ^= 1;
                        }
                    }
                }
                let b = fenced_tsc();
                black_box(imul_chain(black_box(PROBE_IMULS)));
                let c = fenced_tsc();
                // The first 5 ms let the clock settle into this workload's state.
                if start.elapsed() >= Duration::from_millis(5) {
                    ghz.push(3.0 * PROBE_IMULS as f64 / (c - b) as f64 * tsc_ghz);
                    calls += 25;
                    spent += b - a;
                }
            }
            ticks.push(spent as f64 / calls.max(1) as f64);
        }
        (median(&ghz), median(&ticks))
    }

    pub fn main() {
        let names: Vec<String> = std::env::args().skip(1).collect();
        let backends: Vec<Backend> = if names.is_empty() {
            Backend::available()
                .filter(|b| *b != Backend::Portable)
                .collect()
        } else {
            names
                .iter()
                .map(|n| parse_backend(n).unwrap_or_else(|e| panic!("{e}")))
                .collect()
        };
        let tsc_ghz = tsc_hz() / 1e9;
        println!("TSC {tsc_ghz:.3} GHz; 16 KiB calls, 13-byte AD; medians over 10 blocks of 20 ms");
        let mut buf = message(MESSAGE);
        for backend in backends {
            assert!(
                backend.is_available(),
                "back end {} not available here",
                backend.name()
            );
            for alg in Alg::ALL {
                let key = GcmKey::new_with_backend(alg.key(), backend).expect("key");
                let mut rows = Vec::new();
                for (name, op) in [
                    ("ctr", None),
                    ("seal", Some(Op::Seal)),
                    ("open", Some(Op::Open)),
                ] {
                    let (ghz, ticks) = probe(&key, op, &mut buf, 10, tsc_ghz);
                    rows.push((name, ghz, ticks, ticks / tsc_ghz * ghz));
                }
                let (_, _, ctr_ticks, ctr_cycles) = rows[0];
                for (name, ghz, ticks, cycles) in rows {
                    println!(
                        "{:>8} AES-{}-{name:<4}: clock {ghz:.2} GHz, {:6.0} ns = {cycles:6.0} cycles per call; CTR/this: time {:.3}, cycles {:.3}",
                        backend.name(),
                        alg.key().len() * 8,
                        ticks / tsc_ghz,
                        ctr_ticks / ticks,
                        ctr_cycles / cycles,
                    );
                }
            }
        }
    }
}

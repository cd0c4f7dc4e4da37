//! The clock and the measuring loop shared by every figure the `speed` tool prints.

use std::hint::black_box;

/// Nanoseconds of CPU time the calling thread has used.
///
/// Thread CPU time rather than wall time because the machines this runs on are shared: a
/// measurement that loses the core to another process for a while keeps its rate instead of
/// reporting the pause as slowness. The kernel keeps this clock to the nanosecond.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec and CLOCK_THREAD_CPUTIME_ID is a clock every
    // Linux kernel provides; clock_gettime writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How many operations ran in how much thread CPU time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub ops: u64,
    pub ns: u64,
}

impl Sample {
    /// Throughput in MB/s with 1 MB = 10^6 bytes, as `bssl speed` counts.
    pub fn mb_per_s(&self, bytes_per_op: usize) -> f64 {
        if self.ns == 0 {
            return 0.0;
        }
        (self.ops as f64 * bytes_per_op as f64) * 1e3 / self.ns as f64
    }

    pub fn ns_per_op(&self) -> f64 {
        self.ns as f64 / self.ops.max(1) as f64
    }

    /// The line `bssl speed` prints for one measurement.
    pub fn bssl_line(&self, what: &str, bytes_per_op: usize, op: &str) -> String {
        format!(
            "Did {} {} ({} bytes) {} operations in {}us ({:.1} MB/sec)",
            self.ops,
            what,
            bytes_per_op,
            op,
            self.ns / 1000,
            self.mb_per_s(bytes_per_op)
        )
    }
}

/// Calls `op` until `budget_ns` of thread CPU time has passed and reports how often it ran.
///
/// One call before the clock starts faults in the buffers and warms caches and predictors.
/// The clock is read after batches that double in size until a batch takes about 1/32 of the
/// budget, so reading it (a system call) costs nothing measurable and the last batch
/// overshoots the budget by a few per cent at most.
pub fn run_for(budget_ns: u64, mut op: impl FnMut()) -> Sample {
    op();
    let start = thread_cpu_ns();
    let mut ops = 0u64;
    let mut batch = 1u64;
    loop {
        for _ in 0..batch {
            op();
        }
        ops += batch;
        let elapsed = thread_cpu_ns() - start;
        if elapsed >= budget_ns {
            return black_box(Sample { ops, ns: elapsed });
        }
        let per_batch = elapsed / ops * batch;
        if per_batch < budget_ns / 32 {
            batch *= 2;
        }
    }
}

/// Calls `op` exactly `n` times after one untimed warm-up call (as criterion's
/// `iter_custom` wants) and reports the thread CPU time it took.
pub fn run_count(n: u64, mut op: impl FnMut()) -> Sample {
    op();
    let start = thread_cpu_ns();
    for _ in 0..n {
        op();
    }
    let ns = thread_cpu_ns() - start;
    black_box(Sample { ops: n, ns })
}

/// How long a measurement runs: for a CPU-time budget (the `speed` tool) or for a given
/// number of operations (criterion). A trait with a generic method so the timed loop is
/// compiled for each operation's closure, with no indirect call per operation.
pub trait Runner {
    fn run<F: FnMut()>(self, op: F) -> Sample;
}

/// Run until this many nanoseconds of thread CPU time have passed.
#[derive(Clone, Copy, Debug)]
pub struct ForBudget(pub u64);

/// Run exactly this many operations.
#[derive(Clone, Copy, Debug)]
pub struct ForCount(pub u64);

impl Runner for ForBudget {
    fn run<F: FnMut()>(self, op: F) -> Sample {
        run_for(self.0, op)
    }
}

impl Runner for ForCount {
    fn run<F: FnMut()>(self, op: F) -> Sample {
        run_count(self.0, op)
    }
}

/// The median of some numbers (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The core's clock in GHz while it runs plain integer code, from a chain of dependent
/// register-to-register `add`s (one cycle each on every x86 core) timed in thread CPU
/// time. Not `add reg, imm`: Intel's cores from Golden Cove on fold a chain of those at
/// rename, several a cycle (a Sapphire-Rapids-class Xeon gave "21 GHz" from them, 3.5 from
/// register adds and from `imul` chains alike). The best of a few
/// 2-millisecond runs, so that a run interrupted or sharing its core does not count.
/// `None` off x86_64. An estimate for headers and cycles-per-byte figures, not a
/// measurement of the clock under the vector loops (`clock-probe` gives that).
pub fn core_clock_ghz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        const ADDS: u64 = 100 * 80_000;
        let mut best = f64::MAX;
        for _ in 0..8 {
            let t0 = thread_cpu_ns();
            let mut n = ADDS / 100;
            let mut x = 0u64;
            let one = black_box(1u64);
            // SAFETY: register-only arithmetic and a counted loop; no memory, no stack.
            unsafe {
                core::arch::asm!(
                    "2:",
                    ".rept 100",
                    "add {x}, {one}",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    one = in(reg) one,
                    options(nomem, nostack),
                );
            }
            black_box((x, n));
            best = best.min((thread_cpu_ns() - t0) as f64);
        }
        Some(ADDS as f64 / best)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn run_for_spends_the_budget() {
        let mut n = 0u64;
        let s = run_for(2_000_000, || n = black_box(n + 1));
        assert!(s.ns >= 2_000_000);
        assert!(s.ops > 0);
        assert_eq!(s.ops + 1, n);
    }

    #[test]
    fn rates() {
        let s = Sample {
            ops: 1000,
            ns: 1_000_000,
        };
        assert_eq!(s.mb_per_s(1000), 1000.0);
        assert_eq!(s.ns_per_op(), 1000.0);
        assert_eq!(
            s.bssl_line("AES-128-GCM", 1000, "seal"),
            "Did 1000 AES-128-GCM (1000 bytes) seal operations in 1000us (1000.0 MB/sec)"
        );
    }
}

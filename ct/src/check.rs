//! The harness's bookkeeping: MemorySanitizer's reports counted in-process, secrets
//! marked and declassified, and the ledger of what ran and what it found.
//!
//! The sanitizer is built in keep-going mode (`-Zsanitizer-recover=memory`): a report
//! prints its stack and execution continues, so one run covers every case. Each report
//! also calls `__sanitizer_report_error_summary`, a weak hook of the sanitizer runtime
//! that this binary overrides to count reports, so each group of cases can tell whether
//! it caused any.
//!
//! Only declassified values are branched on or printed here: the checks of results run
//! after [`public`] has unpoisoned them, and the standard library (not instrumented)
//! only ever sees lengths, counts and names.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use gcm_core::ct;

static REPORTS: AtomicUsize = AtomicUsize::new(0);
static BLIND: AtomicUsize = AtomicUsize::new(0);
static WRONG: AtomicUsize = AtomicUsize::new(0);

/// Called by the sanitizer runtime once per report (after it printed the report). It
/// must not look at its argument: this function is instrumented, its caller is not, so
/// the argument's shadow is whatever was left in the parameter slots.
#[cfg(ct_msan)]
#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_report_error_summary(_summary: *const core::ffi::c_char) {
    REPORTS.fetch_add(1, Ordering::Relaxed);
}

/// Prints a line to stderr, like `eprintln!`, but declassifies the formatted text first:
/// the standard library is not instrumented, so the bytes it formats on its stack carry
/// stale shadow, and the sanitizer's `write` interceptor would report them.
pub fn say(args: std::fmt::Arguments<'_>) {
    let mut line = std::fmt::format(format_args!("{args}\n"));
    // The `String` itself (pointer, capacity, length) was written by std too.
    declassify_value(&mut line);
    ct::unpoison(line.as_bytes());
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Declassifies the memory of `value`, and makes the compiler forget what it knew of it.
pub fn declassify_value<T>(value: &mut T) {
    // SAFETY: `value` is `size_of::<T>()` bytes of this process's memory; only the
    // sanitizer's shadow of them changes.
    let bytes =
        unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) };
    ct::unpoison(bytes);
    std::hint::black_box(value);
}

/// `eprintln!` for the harness (see [`say`]).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::check::say(format_args!($($arg)*))
    };
}

/// Reports so far.
pub fn reports() -> usize {
    REPORTS.load(Ordering::Relaxed)
}

/// Marks `bytes` secret. The black box makes the compiler forget what it knew of them,
/// so that no value it could have forwarded from before the marking escapes it.
pub fn secret(bytes: &mut [u8]) {
    ct::poison(bytes);
    std::hint::black_box(bytes);
}

/// Marks the memory of `value` (a key object, say) secret.
pub fn secret_value<T>(value: &mut T) {
    // SAFETY: `value` is `size_of::<T>()` bytes of this process's memory; only the
    // sanitizer's shadow of them changes.
    let bytes =
        unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) };
    ct::poison(bytes);
    std::hint::black_box(value);
}

/// Declassifies `bytes`, to check results after the code under test ran.
pub fn public(bytes: &[u8]) {
    ct::unpoison(bytes);
}

/// Notes a blind spot unless some byte of `bytes` is poisoned: an output computed from
/// secrets that comes out clean means the sanitizer lost track of them on the way (an
/// unmodelled instruction, an `asm!`), and everything after that point went unchecked.
pub fn expect_secret(bytes: &[u8], what: &'static str) {
    if bytes.is_empty() || ct::is_poisoned(bytes) {
        return;
    }
    if BLIND.fetch_add(1, Ordering::Relaxed) < 5 {
        crate::say!("ct-msan: BLIND: {what}: an output derived from secrets is not poisoned");
    }
}

/// Notes the same for the memory of a key object.
pub fn expect_secret_value<T>(value: &T, what: &'static str) {
    // SAFETY: as in `secret_value`; the bytes are only inspected by the sanitizer.
    let bytes =
        unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) };
    expect_secret(bytes, what);
}

/// Notes a wrong result (after declassification); the run then fails.
pub fn expect(ok: bool, what: &'static str) {
    if !ok && WRONG.fetch_add(1, Ordering::Relaxed) < 5 {
        crate::say!("ct-msan: WRONG RESULT: {what}");
    }
}

/// Deterministic bytes (SplitMix64); the seed goes through a black box, so the compiler
/// cannot compute the data (and fold secrets into constants).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(std::hint::black_box(seed))
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// What a group must show: no report (real code) or at least one (a control).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Clean,
    Reported,
}

/// The results of every group, printed as they come and summed up at the end.
#[derive(Default)]
pub struct Ledger {
    groups: usize,
    /// Reports made inside the controls' groups, the only ones allowed.
    control_reports: usize,
    failed: Vec<(&'static str, &'static str)>,
}

impl Ledger {
    /// Runs one group of cases, `what` on `on`; `run` returns how many operations it
    /// checked. Prints one line, and remembers a failure: reports where none may be,
    /// none where one must be, a blind spot, or a wrong result.
    pub fn group(
        &mut self,
        expect: Expect,
        what: &'static str,
        on: &'static str,
        run: impl FnOnce() -> usize,
    ) {
        let (r0, b0, w0) = (reports(), blind(), wrong());
        let ops = run();
        let (reported, blind, wrong) = (reports() - r0, blind() - b0, wrong() - w0);
        let ok = match expect {
            Expect::Clean => reported == 0,
            Expect::Reported => reported > 0,
        } && blind == 0
            && wrong == 0;
        let verdict = match (ok, expect) {
            (true, Expect::Clean) => "clean",
            (true, Expect::Reported) => "reported, as it must be",
            (false, Expect::Clean) => "FAILED",
            (false, Expect::Reported) => "FAILED: NOT REPORTED",
        };
        crate::say!(
            "ct-msan: {what:<44} {on:<28} {ops:>6} ops, {reported} reports, \
             {blind} blind, {wrong} wrong: {verdict}"
        );
        self.groups += 1;
        if expect == Expect::Reported {
            self.control_reports += reported;
        }
        if !ok {
            self.failed.push((what, on));
        }
    }

    /// Records a failure found outside a group (coverage, say).
    pub fn fail(&mut self, what: &'static str, on: &'static str) {
        self.failed.push((what, on));
    }

    /// Prints the verdict; true when everything passed.
    pub fn finish(&mut self) -> bool {
        // Every report must belong to a control: one made between groups (by the
        // harness itself, say) would otherwise go unnoticed.
        let total = reports();
        crate::say!(
            "ct-msan: {total} reports counted, {} of them by the controls",
            self.control_reports
        );
        if total != self.control_reports {
            self.failed
                .push(("reports outside the controls", "harness"));
        }
        if self.failed.is_empty() {
            crate::say!("ct-msan: all {} groups passed", self.groups);
            return true;
        }
        crate::say!(
            "ct-msan: {} of {} groups FAILED:",
            self.failed.len(),
            self.groups
        );
        for (what, on) in &self.failed {
            crate::say!("ct-msan:   {what} ({on})");
        }
        false
    }
}

fn blind() -> usize {
    BLIND.load(Ordering::Relaxed)
}

fn wrong() -> usize {
    WRONG.load(Ordering::Relaxed)
}

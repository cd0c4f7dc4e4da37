#!/usr/bin/env bash
# CI: the hardening checks (issue 6), each a script of its own, run in order of cost.
#
#   1. bad input through every public API: the table of what was tried and what came back;
#   2. zeroize: every key-holding type wipes its key-dependent bytes on drop;
#   3. QEMU CPU models (qemu64, Westmere, Haswell, max): detection picks the expected
#      back end, and the Wycheproof, cross-back-end, bad-input and TLS tests pass on it;
#   4. constant time under valgrind memcheck (gcm-core: key set-up, seal, open; AES-NI
#      and portable, plus the control that must be flagged);
#   5. constant time under MemorySanitizer, natively: every gcm-core back end and TLS CBC
#      engine this CPU has (VAES, AVX-512 and SHA-NI included), with its controls;
#      skipped with a warning where there is no nightly toolchain;
#   6. Miri: gcm-core's unit tests on all four back ends, and tls-cbc-aead's hash
#      engines and stitched seals (raw pointers, aliasing); skipped with a warning
#      where there is no nightly toolchain;
#   7. fuzzing: every cargo-fuzz target for FUZZ_SECONDS (default 30) seconds.
#
# Usage: .ci/hardening.sh            (FUZZ_SECONDS=0 skips step 7)
# Needs what .ci/run has (valgrind, python3); installs qemu-user and cargo-fuzz if missing.
# About 45 to 65 minutes on 2 cores from a warm `cargo test --workspace` build: on a
# Zen 3 on 2026-12-07, 45 (Miri 17 of them, its two halves side by side, and
# MemorySanitizer 10); 65 there before, when Miri ran its two crates one after the
# other (36 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
start=$(date +%s)
step() { printf '\n=== hardening: %s (t=%ss)\n' "$*" "$(($(date +%s) - start))"; }

step "bad input (table)"
cargo test -p tests --test bad_input -- --nocapture --test-threads=1 2>&1 |
    grep -vE '^\s+(Compiling|Finished|Running)'

step "zeroize on drop"
cargo test -p tests --features zeroize --test zeroize -- --nocapture --test-threads=1 2>&1 |
    grep -vE '^\s+(Compiling|Finished|Running)'
# Optimised builds lay values out and move them differently (stale key bytes in struct
# padding showed up only there), so the check runs on a release build too.
cargo test --release -p tests --features zeroize --test zeroize -- --test-threads=1 2>&1 |
    grep -vE '^\s+(Compiling|Finished|Running)'

step "dispatch under QEMU CPU models"
bash .ci/qemu.sh 2>&1 | grep -vE '^\s+(Compiling|Finished)'

step "constant time under valgrind (gcm-core)"
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
bash .ci/ct-gcm.sh 2>&1 | grep -vE '^\s+(Compiling|Finished)'

step "constant time under MemorySanitizer (every back end and engine this CPU has)"
bash .ci/ct-msan.sh 2>&1 | grep -vE '^\s+(Compiling|Finished)'

step "Miri (gcm-core, tls-cbc-aead)"
bash .ci/miri.sh 2>&1 | grep -vE '^\s+(Compiling|Finished)'

if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
    step "fuzzing, ${FUZZ_SECONDS:-30} s per target"
    bash .ci/fuzz.sh "${FUZZ_SECONDS:-30}"
fi

step "hardening done in $(($(date +%s) - start)) s"

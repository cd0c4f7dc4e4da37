#!/usr/bin/env bash
# CI: every fuzz target for SECONDS seconds (default 30), through fuzz/run.sh.
#
#   .ci/fuzz.sh [SECONDS]
#
# Installs cargo-fuzz if it is missing (`cargo install --locked`, about 2 minutes once).
# Needs the nightly toolchain; a machine without it says so loudly and skips (exit 0),
# since `rustup toolchain install` cannot be relied on in CI. The corpus grows in
# fuzz/corpus (not committed); crashes land in fuzz/artifacts and fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz: WARNING: no nightly toolchain on this machine; fuzzing SKIPPED" >&2
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install --locked --quiet cargo-fuzz
fi
exec bash fuzz/run.sh "$secs"

#!/usr/bin/env bash
# Runs fuzz targets for a fixed time each and keeps what they learn.
#
#   fuzz/run.sh SECONDS [TARGET...]     (default: every target in fuzz/Cargo.toml)
#
# Each target reads and grows fuzz/corpus/TARGET (gitignored, kept between runs) and also
# reads the committed seeds in fuzz/seeds/TARGET. A crash is written to
# fuzz/artifacts/TARGET/ and makes this script fail; reproduce it with
#   cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-...
# At the end a table gives executions, executions per second and corpus size per target.
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install --locked cargo-fuzz`).
# Builds into $CARGO_TARGET_DIR/fuzz when CARGO_TARGET_DIR is set, else fuzz/target.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    export CARGO_TARGET_DIR="$CARGO_TARGET_DIR/fuzz"
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One build for every target first, so that the timed runs are only fuzzing.
if ! cargo +nightly fuzz build >"$logs/build.log" 2>&1; then
    cat "$logs/build.log" >&2
    echo "fuzz: build failed" >&2
    exit 2
fi

run_one() {
    local t=$1
    mkdir -p "corpus/$t" "artifacts/$t"
    local seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    cargo +nightly fuzz run "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -print_final_stats=1 >"$logs/$t.log" 2>&1
}

fail=0
for t in "${targets[@]}"; do
    echo "fuzz: $t for ${secs}s"
    if ! run_one "$t"; then
        fail=1
        echo "fuzz: FAILED: $t" >&2
        grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$logs/$t.log" | head -n 20 >&2 || true
    fi
done

printf '\n| target | executions | exec/s | corpus files | result |\n|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
    execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$logs/$t.log" | grep -oE '[0-9]+$' || echo '?')
    rate=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$logs/$t.log" | grep -oE '[0-9]+$' || echo '?')
    files=$(find "corpus/$t" -type f | wc -l)
    if grep -qE 'panicked|ERROR: ' "$logs/$t.log"; then
        result="CRASH (artifacts/$t)"
    else
        result=ok
    fi
    printf '| %s | %s | %s | %s | %s |\n' "$t" "$execs" "$rate" "$files" "$result"
done
exit "$fail"

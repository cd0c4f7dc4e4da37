#!/usr/bin/env bash
# Runs the real CPU detection on every dispatch path: the test binaries are built once
# (natively) and then run under QEMU user mode with CPU models that have fewer features
# than this machine. For each model the dispatch test asserts which back end
# `Backend::detect()` picks and the exact list `Backend::available()` yields, and the
# Wycheproof, NIST CAVP, BoringSSL's GCM vectors, cross-back-end, bad-input and gcm-core
# unit tests, and tls-cbc-aead's unit, known-answer (with BoringSSL's) and differential
# tests (its AES runs on gcm-core's back ends), must pass on what is left.
#
#   model      what TCG exposes                          expected
#   qemu64     no AES-NI, no PCLMULQDQ, no AVX             portable
#   Westmere   AES-NI + PCLMULQDQ, no AVX                  aesni
#   Haswell    + AVX2, no VAES                             aesni
#   max        + VAES, but no VPCLMULQDQ and no AVX-512    aesni (must not pick a VAES back end)
#
# QEMU's TCG implements neither VPCLMULQDQ nor AVX-512, so the Vaes256/Vaes512 kernels
# only run natively (cargo test on a VAES machine). An instruction a model lacks raises
# SIGILL, so a dispatch bug fails loudly.
#
# Usage: .ci/qemu.sh  (installs Debian's qemu-user if missing; QEMU_BACKPORTS=1 takes
# qemu 10 from bookworm-backports instead). Respects CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" != x86_64 ]; then
    echo "qemu: x86_64 hosts only, skipped" >&2
    exit 0
fi

if ! command -v qemu-x86_64 >/dev/null; then
    echo "qemu: installing qemu-user"
    export DEBIAN_FRONTEND=noninteractive
    if [ "${QEMU_BACKPORTS:-0}" = 1 ]; then
        # Backports from the same mirror as the machine's main Debian source.
        mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' \
            /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
        [ -n "$mirror" ] || { echo "qemu: no Debian mirror found for backports" >&2; exit 2; }
        echo "deb $mirror bookworm-backports main" \
            >/etc/apt/sources.list.d/bookworm-backports.list
        apt-get update -qq
        apt-get install -y -qq -t bookworm-backports qemu-user >/dev/null
    else
        apt-get update -qq
        apt-get install -y -qq qemu-user >/dev/null
    fi
fi
qemu-x86_64 --version | head -n 1

# Build once; collect the executables by target name.
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# Optimised (with debug assertions still on): the emulator is 10-50x slower than the CPU,
# and the cross-back-end test pushes megabytes through each back end. The profile is part
# of cargo's artifact hash, so this does not disturb the plain `cargo test` build.
CARGO_PROFILE_DEV_OPT_LEVEL=2 cargo test -p tests -p gcm-core -p tls-cbc-aead --no-run --message-format=json |
    python3 -c '
import json, sys
want = {"wycheproof", "cavp", "cavp_aes", "boringssl_gcm", "cross_backend", "dispatch",
        "bad_input", "gcm_core", "tls_cbc_aead", "differential", "kat"}
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] in want and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])
' >"$list"
for t in dispatch wycheproof cavp cavp_aes boringssl_gcm cross_backend bad_input gcm_core tls_cbc_aead \
    differential kat; do
    grep -q "^$t " "$list" || { echo "qemu: test binary $t not built" >&2; exit 2; }
done

models=(qemu64 Westmere Haswell max)
declare -A backend=([qemu64]=portable [Westmere]=aesni [Haswell]=aesni [max]=aesni)
declare -A avail=([qemu64]=portable [Westmere]=aesni,portable [Haswell]=aesni,portable
    [max]=aesni,portable)

# One model: every binary under it, a short report on stdout; non-zero on failure.
run_model() {
    local model=$1 start out
    start=$(date +%s)
    out=$(mktemp)
    echo "=== qemu -cpu $model: expect ${backend[$model]} (available: ${avail[$model]})"
    while read -r name bin; do
        if ! EXPECT_BACKEND=${backend[$model]} EXPECT_AVAILABLE=${avail[$model]} \
            qemu-x86_64 -cpu "$model" "$bin" --test-threads=2 --nocapture >"$out" 2>&1; then
            cat "$out"
            rm -f "$out"
            echo "qemu: FAILED: $name under -cpu $model"
            return 1
        fi
        result=$(grep -E '^test result' "$out" | tail -n 1)
        echo "  $name: ${result#test result: }"
        case $name in
            dispatch) grep -E '^dispatch:' "$out" | sed 's/^/    /' ;;
            wycheproof) grep -E 'cases run' "$out" | sed 's/^/    /' || true ;;
            cavp) grep -E 'vectors|SKIPPED' "$out" | sed 's/^/    /' || true ;;
            cavp_aes) grep -E 'SKIPPED' "$out" | sed 's/^/    /' || true ;;
            boringssl_gcm) grep -E ' on [a-z0-9]+: |SKIPPED' "$out" | sed 's/^/    /' || true ;;
            kat) grep -E 'SKIPPED' "$out" | sed 's/^/    /' || true ;;
        esac
    done <"$list"
    rm -f "$out"
    echo "  -> ${backend[$model]} [${avail[$model]}] in $(($(date +%s) - start)) s"
}

fail=0
for model in "${models[@]}"; do
    echo
    if ! run_model "$model"; then
        fail=1
    fi
done
if [ "$fail" -ne 0 ]; then
    echo "qemu: FAILED (see above)" >&2
    exit 1
fi
echo
echo "qemu: every model picked the expected back end and passed its tests"

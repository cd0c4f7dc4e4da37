#!/usr/bin/env bash
# Constant-time check of gcm-core under valgrind memcheck (ctgrind).
#
# Builds gcm-core/tests/ct_valgrind.rs in the `ctgrind` profile (release code, debug info,
# no debug assertions or overflow checks) with the `ct-check` feature, whose valgrind client
# requests let the test mark keys and plaintexts secret and let the library declassify the
# tag check's accept bit. Then, under `valgrind --error-exitcode=99`:
#   1. the AES-NI and portable back ends, each forced with new_with_backend: key set-up
#      (AES schedules, H powers), seal, open with valid, truncated and invalid tags, in place
#      and with separate buffers, block ciphers, CBC and GHASH: memcheck must report nothing;
#   2. the control, a tag check with `==`: memcheck MUST report it (exit 99), or the check
#      above proves nothing;
#   3. the portable back end again, built with RustCrypto's software AES and POLYVAL forced
#      (`--cfg aes_backend="soft"`, `--cfg polyval_backend="soft"`): the code a CPU without
#      AES-NI runs, which valgrind's CPUID would otherwise never select. Skip with CT_SOFT=0.
# The test also asserts that detection under valgrind (which has no VAES/AVX-512) picks
# AES-NI, not a VAES back end.
#
# Usage: .ci/ct-gcm.sh            (respects CARGO_TARGET_DIR; x86_64 Linux only)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "ct-gcm: valgrind is not installed" >&2; exit 2; }
target_dir=${CARGO_TARGET_DIR:-target}

# Prints the path of the ct_valgrind test binary that `cargo test --no-run` built.
build() {
    cargo test --profile ctgrind -p gcm-core --features ct-check --test ct_valgrind \
        --no-run --message-format=json "$@" |
        python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] == "ct_valgrind":
        print(m["executable"])
'
}

vg=(valgrind -q --error-exitcode=99 --track-origins=yes)
export CT_REQUIRE_VALGRIND=1
fail=0

bin=$(build)
[ -x "$bin" ] || { echo "ct-gcm: test binary not found" >&2; exit 2; }

for case in aesni portable; do
    echo "ct-gcm: $case under memcheck"
    if ! "${vg[@]}" "$bin" "$case"; then
        echo "ct-gcm: FAILED: memcheck reported a secret-dependent branch or address ($case)" >&2
        fail=1
    fi
done

echo "ct-gcm: control (a leaky tag check; memcheck must flag it)"
set +e
"${vg[@]}" "$bin" control >/tmp/ct-gcm-control.$$ 2>&1
rc=$?
set -e
reports=$(grep -c 'depends on uninitialised value' /tmp/ct-gcm-control.$$ || true)
rm -f /tmp/ct-gcm-control.$$
if [ "$rc" -eq 99 ]; then
    echo "ct-gcm: control flagged as it must be (exit 99, $reports reports)"
else
    echo "ct-gcm: FAILED: the control was not flagged (exit $rc, wanted 99)" >&2
    fail=1
fi

if [ "${CT_SOFT:-1}" != 0 ]; then
    echo "ct-gcm: portable back end with RustCrypto's software AES and POLYVAL forced"
    soft_bin=$(CARGO_TARGET_DIR="$target_dir/ct-soft" \
        RUSTFLAGS="${RUSTFLAGS:-} --cfg aes_backend=\"soft\" --cfg polyval_backend=\"soft\"" build)
    [ -x "$soft_bin" ] || { echo "ct-gcm: soft test binary not found" >&2; exit 2; }
    if ! "${vg[@]}" "$soft_bin" portable; then
        echo "ct-gcm: FAILED: memcheck reported a leak on the software AES/POLYVAL path" >&2
        fail=1
    fi
fi

if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "ct-gcm: OK (AES-NI and portable clean, control flagged)"

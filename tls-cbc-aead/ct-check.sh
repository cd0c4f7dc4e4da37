#!/usr/bin/env bash
# Constant-time check of tls-cbc-aead's seal and open under valgrind memcheck.
#
# Builds tests/ct_valgrind.rs with the `ctgrind` profile (release code generation, debug
# info, no debug assertions or overflow checks, which would add branches of their own) and
# the `ct-check` feature (valgrind client requests that mark secrets), then:
#   1. runs every suite's seal, and open on good and bad records: memcheck must report
#      nothing;
#   2. runs a control that branches on a secret: memcheck must report it, which shows the
#      annotations reach valgrind and the first run could have failed;
#   3. runs 3DES through RustCrypto `des` (S-box tables) with a secret key: memcheck must
#      report it too, which shows the check sees the table lookups that this crate's own
#      3DES, checked in step 1, does without.
# Exits non-zero if either expectation fails. x86_64 Linux only (the client requests are
# x86_64 inline asm). Respects CARGO_TARGET_DIR. Never build this with target-cpu=native:
# valgrind 3.19 cannot run VAES/AVX-512/SHA-NI; the crates detect at run time and fall back.
set -euo pipefail
cd "$(dirname "$0")"

command -v valgrind >/dev/null || { echo "ct-check: valgrind is not installed" >&2; exit 2; }

bin=$(cargo test --profile ctgrind -p tls-cbc-aead --features ct-check --test ct_valgrind \
        --no-run --message-format=json-render-diagnostics \
      | python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and msg["target"]["name"] == "ct_valgrind":
        print(msg["executable"])
')
[ -x "$bin" ] || { echo "ct-check: test binary not found" >&2; exit 2; }

export CT_REQUIRE_VALGRIND=1
vg=(valgrind -q --error-exitcode=99 --track-origins=yes)

echo "ct-check: seal and open under memcheck ($bin)"
if ! "${vg[@]}" "$bin"; then
    echo "ct-check: FAILED: memcheck reported a secret-dependent branch or address" >&2
    exit 1
fi

# Runs the control named $1 (what it does: $2), which memcheck must flag (exit 99).
control() {
    echo "ct-check: control: $2; memcheck must flag it"
    local rc
    set +e
    "${vg[@]}" "$bin" "$1" >/dev/null 2>&1
    rc=$?
    set -e
    if [ "$rc" -ne 99 ]; then
        echo "ct-check: FAILED: control $1 was not flagged (exit $rc, wanted 99)" >&2
        exit 1
    fi
}
control control "a branch on a secret"
control control-des "3DES through RustCrypto des's S-box tables, secret key"
echo "ct-check: OK (seal and open clean, both controls flagged)"

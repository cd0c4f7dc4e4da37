#!/usr/bin/env bash
# Constant-time check under LLVM's MemorySanitizer: the code users actually run, VAES,
# AVX-512 and SHA-NI included (valgrind executes none of them).
#
# Builds the `ct` crate (ct/src/main.rs) once, instrumented, and runs it. It marks every
# secret poisoned (AES keys, so round keys and powers of H; plaintexts; the tags handed
# to open; HMAC keys; TLS CBC records; QUIC keys, packet numbers and headers), lets the
# libraries declassify only the accept bits and the TLS plaintext length (and the
# harness a QUIC header once unmasked), and fails on any branch or memory address that
# depends on a poisoned bit, on every gcm-core back end this CPU has (forced), on every
# TLS CBC engine choice (CPU features hidden from detection one profile at a time, then
# the remaining choices forced) and on QUIC packet and header protection. It prints what
# it covered and what this CPU cannot run; controls (a branch on a secret, a secret
# table index, a tag compared with ==, VPTERNLOG and SHA1RNDS4 unwrapped) must be
# reported.
#
# The build:
#   -Zsanitizer=memory -Cunsafe-allow-abi-mismatch=sanitizer
#       the sanitizer; the standard library stays uninstrumented (no rust-src needed),
#       which the harness allows for (it only gives std lengths and names);
#   --target x86_64-unknown-linux-gnu
#       so that build scripts and proc macros are not instrumented;
#   -Zsanitizer-recover=memory
#       keep going after a report: one run covers every case, and the harness counts
#       the reports of each group of cases;
#   -Cllvm-args=-msan-eager-checks=0
#       a secret passed to a function that is not inlined is a value, not a leak: with
#       eager checks the sanitizer would report every such call (subtle's
#       `Choice::from`, for one), instead of following the value into the callee;
#   --cfg ct_msan
#       gcm_core::ct talks to the sanitizer; the empty `asm!` hints (which it would
#       report, and whose outputs it would take as public) compile out; VPTERNLOG,
#       AESKEYGENASSIST (aes crate), SHA1RNDS4 (sha1 crate), the SHA instructions of
#       tls-cbc-aead's SHA-NI engines and the VPERMI2B and VPSHUFBITQMB of its 3DES
#       encryption, which it does not model (or models lane by lane), go through
#       shadow-propagating wrappers (gcm_core::ct::msan);
#   profile ctgrind
#       release code generation (the code shipped), debug info, no debug assertions or
#       overflow checks (their branches would be reported).
#
# A second build and run does it all again with the RustCrypto `aes`, `polyval`, `sha1` and
# `sha2` crates built with their software back ends (`--cfg aes_backend="soft"` ...):
# the code those crates run on CPUs without AES-NI, PCLMULQDQ or SHA-NI. CT_MSAN_SOFT=0
# skips it.
#
# Usage: .ci/ct-msan.sh          (x86_64 Linux; respects CARGO_TARGET_DIR)
# Needs the nightly toolchain (the sanitizer runtime ships with it). A machine without
# nightly says so loudly and skips (exit 0), as .ci/miri.sh does. Exit 1 on any failure.
# About 2 minutes per build and 10 seconds per run on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "ct-msan: WARNING: no nightly toolchain on this machine; MemorySanitizer check SKIPPED" >&2
    exit 0
fi
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
if [ "$host" != x86_64-unknown-linux-gnu ]; then
    echo "ct-msan: this check is set up for x86_64-unknown-linux-gnu, not $host" >&2
    exit 2
fi

flags="-Zsanitizer=memory -Cunsafe-allow-abi-mismatch=sanitizer -Zsanitizer-recover=memory \
-Cllvm-args=-msan-eager-checks=0 --cfg ct_msan"
soft='--cfg aes_backend="soft" --cfg polyval_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft"'
target_root="${CARGO_TARGET_DIR:-target}"

# Builds the harness with extra flags $2 into target directory $1 and runs it; returns
# non-zero on any failure.
run() {
    local dir=$1 extra=$2 bin log rc printed counted
    # A target directory of its own: its RUSTFLAGS differ from every other build's.
    CARGO_TARGET_DIR="$dir" RUSTFLAGS="$flags $extra" \
        cargo +nightly build --locked -p ct --bin ct-msan --profile ctgrind --target "$host"
    bin="$dir/$host/ctgrind/ct-msan"
    [ -x "$bin" ] || { echo "ct-msan: harness binary not found at $bin" >&2; return 2; }
    log=$(mktemp)
    set +e
    # exitcode=0: the controls' reports are expected; the harness decides the exit status.
    MSAN_OPTIONS="halt_on_error=0:exitcode=0:strip_path_prefix=$PWD/" "$bin" >"$log" 2>&1
    rc=$?
    set -e
    grep '^ct-msan:' "$log"
    # Cross-check the harness's own count against the reports in the log.
    printed=$(grep -c 'WARNING: MemorySanitizer' "$log" || true)
    counted=$(sed -n 's/^ct-msan: \([0-9]*\) reports counted.*/\1/p' "$log")
    if [ "$rc" -ne 0 ] || [ "$printed" != "$counted" ]; then
        echo "ct-msan: FAILED (exit $rc; $printed reports in the log, $counted counted);" \
            "the first reports that are not the controls':" >&2
        # Each report: from its WARNING line to the next blank line; the controls' skipped.
        awk '/WARNING: MemorySanitizer/ { block = ""; inside = 1 }
             inside { block = block $0 "\n" }
             inside && /^$/ { inside = 0
                              if (block !~ /ct_msan::controls/ && shown++ < 5) printf "%s", block }' \
            "$log" | grep -v '^ct-msan:' >&2 || true
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
    echo "ct-msan: OK ($printed reports, all from the controls)"
}

echo "ct-msan: === the RustCrypto crates as this CPU runs them ($(rustc +nightly --version))"
fail=0
run "$target_root/ct-msan" "" || fail=1
if [ "${CT_MSAN_SOFT:-1}" != 0 ]; then
    echo "ct-msan: === again, with the aes, polyval, sha1 and sha2 crates' software back ends"
    echo "ct-msan: (what CPUs without AES-NI, PCLMULQDQ or SHA-NI run in them)"
    run "$target_root/ct-msan-soft" "$soft" || fail=1
fi
exit "$fail"

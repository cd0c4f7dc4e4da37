#!/usr/bin/env bash
# CI: gcm-core's and tls-cbc-aead's unit tests under Miri, which checks every raw-pointer
# load and store of the kernels (the `InOut` buffers, byte-masked tails, tails through
# stack buffers, the block cipher's parallel path, the hash engines' block loads and
# schedule buffers) for out-of-bounds access, use of uninitialised memory and aliasing
# violations (Stacked Borrows).
#
#   .ci/miri.sh
#
# The build enables every instruction set a kernel uses (under Miri, `gcm-core` takes its
# CPU features from the build, since Miri cannot execute CPUID), so the tests run all four
# back ends: VAES-512, VAES-256, AES-NI and portable, Miri interpreting the AES, carry-less
# multiply, AVX-512 masked load/store and three-way-XOR intrinsics. Each test runs over
# every available back end. The RustCrypto `aes` crate is built with
# its software back end (`aes_backend="soft"`), because Miri does not implement
# `AESKEYGENASSIST`, which its AES-NI key schedule uses; the `sha1`/`sha2` crates, the
# hash tests' references, with theirs, because Miri does not implement the SHA
# extensions. The heavy tests shrink their loops under `cfg(miri)`.
#
# Needs the nightly toolchain; installs the miri component if it is missing. A machine
# without nightly says so loudly and skips (exit 0), as .ci/fuzz.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "miri: WARNING: no nightly toolchain on this machine; Miri SKIPPED" >&2
    exit 0
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri: installing the miri component"
    rustup component add --toolchain nightly miri rust-src
fi

# A target directory of its own: its RUSTFLAGS differ from the other builds'.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri-ci"
# One set of flags for both crates, so that their dependencies build once.
soft='--cfg aes_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft"'
features=+aes,+pclmulqdq,+ssse3,+sse4.1,+avx,+avx2,+vaes,+vpclmulqdq,+avx512f,+avx512bw,+avx512vl,+sha,+bmi1,+bmi2
export RUSTFLAGS="-C target-feature=$features $soft"

# Build both crates' tests first (both cores), then run them as two Miri processes at
# once: an interpreter runs on one core, and run one after the other the tests took
# about 30 minutes on a Zen 3 (gcm-core 21, tls-cbc-aead 10; 2026-12-07). Cargo does not
# hold the target directory's lock while tests run, so the two share the build. The
# split balances the halves by the time each test took there (in seconds): job 1 is
# gcm-core's test of every buffer shape (690) and its three AES block-cipher tests
# against the `aes` crate (360); job 2 the rest of gcm-core (230) and tls-cbc-aead.
echo "miri: building gcm-core's and tls-cbc-aead's tests"
cargo +nightly miri test -p gcm-core -p tls-cbc-aead --lib --no-run

heavy=(every_buffer_shape_against_the_portable_back_end aes::tests::aes)
skip_heavy=()
for t in "${heavy[@]}"; do skip_heavy+=(--skip "$t"); done

# tls-cbc-aead's kernels: SHA-1 and SHA-256 on the SHA extensions (whose instructions Miri
# does not implement, so under Miri they run as `x86_64::sha_ext_model`, checked against
# the instructions by a native test), SHA-512 on AVX2 and on AVX-512VL in both round
# forms, the stitched seals on every AES back end, and the streaming, secret-suffix and
# HMAC code that drives them, and the MAC extraction on SSE2 vectors (`copy_mac`, against
# the portable version). The references, the `sha1`/`sha2` crates, run their software
# back ends, as `aes` does. The tests without `unsafe` under them (3DES, the padding
# model) are left to the normal run.
job1() {
    echo "miri: gcm-core, every back end: the buffer shapes and the AES block ciphers"
    cargo +nightly miri test -p gcm-core --lib -- "${heavy[@]}"
    echo "miri: job 1 took $SECONDS s"
}
job2() {
    echo "miri: gcm-core, every back end: the other tests"
    cargo +nightly miri test -p gcm-core --lib -- "${skip_heavy[@]}"
    echo "miri: tls-cbc-aead, every hash engine and stitched seal, the MAC extraction"
    cargo +nightly miri test -p tls-cbc-aead --lib -- x86_64:: digest:: hmac_key:: cbc::tests::aes copy_mac::
    echo "miri: job 2 took $SECONDS s"
}

# The whole of gcm-core's unit tests, which the two jobs' halves must add up to.
gcm_tests=$(cargo +nightly miri test -p gcm-core --lib -- --list 2>/dev/null | grep -c ': test$')

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
SECONDS=0
job1 >"$logs/1" 2>&1 &
pid1=$!
job2 >"$logs/2" 2>&1 &
pid2=$!
status1=0
status2=0
wait "$pid1" || status1=$?
wait "$pid2" || status2=$?
for j in 1 2; do
    echo "--- miri job $j"
    cat "$logs/$j"
done
if [ "$status1" != 0 ] || [ "$status2" != 0 ]; then
    echo "miri: FAILED (job 1 exit $status1, job 2 exit $status2)" >&2
    exit 1
fi
# gcm-core's first result line in each job: together they must be every test, so that a
# renamed test cannot fall between the filter of job 1 and the skips of job 2.
passed() { grep -m1 '^test result: ok' "$logs/$1" | awk '{print $4}'; }
ran=$(($(passed 1) + $(passed 2)))
echo "miri: gcm-core ran $ran of its $gcm_tests tests across the two jobs"
if [ "$ran" != "$gcm_tests" ] || [ "$gcm_tests" = 0 ]; then
    echo "miri: FAILED: gcm-core has $gcm_tests tests, the two jobs ran $ran" >&2
    exit 1
fi

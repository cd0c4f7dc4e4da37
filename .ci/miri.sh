#!/usr/bin/env bash
# CI: gcm-core's unit tests under Miri, which checks every raw-pointer load and store of
# the kernels (the `InOut` buffers, byte-masked tails, tails through stack buffers, the
# block cipher's parallel path) for out-of-bounds access, use of uninitialised memory and
# aliasing violations (Stacked Borrows).
#
#   .ci/miri.sh
#
# The build enables every instruction set a kernel uses (under Miri, `gcm-core` takes its
# CPU features from the build, since Miri cannot execute CPUID), so the tests run all four
# back ends: VAES-512, VAES-256, AES-NI and portable, Miri interpreting the AES, carry-less
# multiply, AVX-512 masked load/store and three-way-XOR intrinsics. Each test runs over
# every available back end (about 8 minutes). The RustCrypto `aes` crate is built with
# its software back end (`aes_backend="soft"`), because Miri does not implement
# `AESKEYGENASSIST`, which its AES-NI key schedule uses. The heavy tests shrink their
# loops under `cfg(miri)`.
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
soft_aes='--cfg aes_backend="soft"'

features=+aes,+pclmulqdq,+ssse3,+sse4.1,+avx,+avx2,+vaes,+vpclmulqdq,+avx512f,+avx512bw,+avx512vl
echo "miri: gcm-core, every back end"
RUSTFLAGS="-C target-feature=$features $soft_aes" cargo +nightly miri test -p gcm-core --lib

#!/usr/bin/env bash
# The three crypto crates as crates.io would hold them: packaged together (cargo builds
# each from its own .crate, gcm-core through a local registry since it is not published
# yet), then the tests of tls-cbc-aead and aes-gcm-vaes run from the unpacked .crate
# files with default features, outside this workspace: a test that needs an optional
# feature (3DES, rustls) must say so, or a user's `cargo test` of the published crate
# would not compile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
crates=(gcm-core aes-gcm-vaes tls-cbc-aead)

# --allow-dirty: run by hand on a work tree too; CI's checkout is clean anyway.
packages=()
for c in "${crates[@]}"; do packages+=(-p "$c"); done
cargo package --quiet --allow-dirty "${packages[@]}"

stage=$(mktemp -d "${TMPDIR:-/tmp}/packaged.XXXXXX")
trap 'rm -rf "$stage"' EXIT
for c in "${crates[@]}"; do
    tar -xzf "target/package/$c-$version.crate" -C "$stage"
done
export CARGO_TARGET_DIR="$root/target/packaged"
# The packaged tests look for BoringSSL's vector files beside their own directory; point
# them at the workspace's copy (CI fetches it and requires it: BORINGSSL_VECTORS_REQUIRED).
if [ -d "$root/target/boringssl-vectors" ]; then
    export BORINGSSL_VECTORS_DIR="$root/target/boringssl-vectors"
fi
config=(--config "patch.crates-io.gcm-core.path=\"$stage/gcm-core-$version\""
    # As the workspace builds its tests: the reference crates optimised.
    --config 'profile.dev.package."*".opt-level=2')
for c in tls-cbc-aead aes-gcm-vaes; do
    echo "$c $version, its tests from the .crate:"
    (cd "$stage/$c-$version" && cargo test --quiet "${config[@]}" 2>&1 | grep -E '^test result|^error')
done

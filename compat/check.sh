#!/usr/bin/env bash
# Proof that the aes-gcm facades under compat/ are drop-ins for a whole dependency tree.
#
#  1. The published aes-gcm 0.11.1 and 0.10.3 crates' own tests/ directories, taken from
#     crates.io now and left unmodified, run against compat/aes-gcm-0.11 and
#     compat/aes-gcm-0.10 (beside the facades' own tests), with every feature on.
#  2. Real crates from crates.io that depend on aes-gcm run their own test suites with the
#     facade patched in through `[patch.crates-io]` (given as `--config`, their sources
#     untouched), and `cargo tree -i aes-gcm` must show the patched aes-gcm is ours:
#       sframe 2.1.0  (aes-gcm 0.11; RFC 9605 known-answer vectors for its AES-GCM suites)
#       pkcs5 0.8.1   (aes-gcm 0.11; builds AesGcm over aes::Aes128Enc in code generic
#                      over the cipher: compiles only if the facade takes any cipher)
#       cookie 0.18.2 (aes-gcm 0.10; private jars, incl. cookies sealed by ring)
#       ssh-key 0.6.7 (aes-gcm 0.10 through ssh-cipher 0.2; decrypts private keys that
#                      OpenSSH encrypted with aes128-gcm@openssh.com and
#                      aes256-gcm@openssh.com, and encrypts new ones)
#       ssh-cipher 0.3.0 (aes-gcm 0.11; its ciphers' round trip, the GCM ones included)
#  3. A tree with both majors (the helper crate below, which depends on both) takes one
#     patch entry per major, as the README says, and builds.
#  4. The facades are formatted and lint-clean.
#
# Network: crates.io only (through cargo). Sources are copied to a temporary directory
# outside the repository; builds share one target directory, target/compat/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR="$root/target/compat"
export CARGO_TERM_COLOR=never
stage=$(mktemp -d "${TMPDIR:-/tmp}/aes-gcm-compat.XXXXXX")
trap 'rm -rf "$stage"' EXIT
start=$(date +%s)
say() { printf '\n--- compat: %s (t=%ss)\n' "$*" "$(($(date +%s) - start))"; }

say "format and lints of the facades"
for major in 0.11 0.10; do
    manifest="$root/compat/aes-gcm-$major/Cargo.toml"
    cargo fmt --check --manifest-path "$manifest"
    cargo clippy --quiet --manifest-path "$manifest" --all-targets --all-features -- -D warnings
done

say "sources of the published crates, from crates.io"
mkdir -p "$stage/fetch/src"
: >"$stage/fetch/src/lib.rs"
cat >"$stage/fetch/Cargo.toml" <<'EOF'
[package]
name = "fetch"
version = "0.0.0"
edition = "2021"

[dependencies]
aes-gcm-011 = { package = "aes-gcm", version = "=0.11.1", default-features = false }
aes-gcm-010 = { package = "aes-gcm", version = "=0.10.3", default-features = false }
sframe = { version = "=2.1.0", default-features = false }
pkcs5 = { version = "=0.8.1", default-features = false }
cookie = { version = "=0.18.2", default-features = false }
ssh-key = { version = "=0.6.7", default-features = false }
ssh-cipher = { version = "=0.3.0", default-features = false }
EOF
cargo metadata --quiet --format-version 1 --manifest-path "$stage/fetch/Cargo.toml" \
    >"$stage/metadata.json"
# The directory holding a published crate's source, by name and version.
src_of() {
    python3 - "$stage/metadata.json" "$1" "$2" <<'EOF'
import json, os, sys
meta, name, version = sys.argv[1:]
dirs = [os.path.dirname(p["manifest_path"]) for p in json.load(open(meta))["packages"]
        if p["name"] == name and p["version"] == version and p["source"]]
assert len(dirs) == 1, (name, version, dirs)
print(dirs[0])
EOF
}

# Runs a published aes-gcm's tests/ against a facade: the facade's manifest and sources
# plus the upstream tests/ (byte for byte), in a scratch copy.
upstream_tests() {
    local major=$1 version=$2
    local upstream facade="$stage/facade-$major"
    upstream=$(src_of aes-gcm "$version")
    say "aes-gcm $version's own tests/ against compat/aes-gcm-$major"
    mkdir -p "$facade"
    cp -r "$root/compat/aes-gcm-$major/Cargo.toml" "$root/compat/aes-gcm-$major/src" \
        "$root/compat/aes-gcm-$major/tests" "$facade/"
    # The one path that changes with the copy's location.
    sed -i "s|path = \"../../aes-gcm-vaes\"|path = \"$root/aes-gcm-vaes\"|" "$facade/Cargo.toml"
    cp -r "$upstream/tests/." "$facade/tests/"
    local changed
    changed=$(diff -rq "$upstream/tests" "$facade/tests" | grep -v ': facade.rs$' || true)
    [ -z "$changed" ] || { echo "compat: upstream tests differ: $changed" >&2; exit 1; }
    ls "$facade/tests"
    run_tests "upstream-$major" --manifest-path "$facade/Cargo.toml" --all-features
}

# `cargo test "$@"`, its full log kept; shows the test binaries and their results, and
# fails unless something passed.
run_tests() {
    local log="$stage/$1.log"
    shift
    cargo test "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
    grep -E '^ +Running |^test result' "$log"
    grep -q '^test result: ok\. [1-9]' "$log"
}
upstream_tests 0.11 0.11.1
upstream_tests 0.10 0.10.3

# Runs a real crate's own tests with aes-gcm patched to a facade; fails unless the tree
# resolves aes-gcm to the facade.
crate_tests() {
    local name=$1 version=$2 major=$3
    shift 3
    local dir="$stage/$name-$version"
    local patch="patch.crates-io.aes-gcm.path=\"$root/compat/aes-gcm-$major\""
    say "$name $version's own tests, aes-gcm patched to compat/aes-gcm-$major"
    cp -r "$(src_of "$name" "$version")" "$dir"
    # Resolve as a user's tree would, not with the versions locked at the crate's release
    # (those can predate what aes-gcm-vaes needs, e.g. inout 0.2.6).
    rm -f "$dir/Cargo.lock"
    (cd "$dir" && cargo tree --quiet --config "$patch" "$@" -i aes-gcm) | tee "$stage/tree"
    grep -q "^aes-gcm v$major\.[0-9]* ($root/compat/aes-gcm-$major)\$" "$stage/tree" || {
        echo "compat: $name does not use the patched aes-gcm" >&2
        exit 1
    }
    (cd "$dir" && run_tests "$name" --config "$patch" "$@")
}
crate_tests sframe 2.1.0 0.11 --no-default-features --features rust-crypto
crate_tests pkcs5 0.8.1 0.11 --features pbes2,alloc
crate_tests cookie 0.18.2 0.10 --features secure,percent-encode
crate_tests ssh-key 0.6.7 0.10 --features encryption,getrandom
crate_tests ssh-cipher 0.3.0 0.11 --features aes

say "one tree with both majors: two patch entries, both resolve to the facades"
both=(--config "patch.crates-io.aes-gcm.path=\"$root/compat/aes-gcm-0.11\""
    --config 'patch.crates-io.aes-gcm-010.package="aes-gcm"'
    --config "patch.crates-io.aes-gcm-010.path=\"$root/compat/aes-gcm-0.10\"")
for v in 0.11.1 0.10.3; do
    tree=$(cd "$stage/fetch" && cargo tree --quiet "${both[@]}" -i "aes-gcm@$v" --depth 1)
    echo "$tree"
    grep -q "^aes-gcm v$v ($root/compat/aes-gcm-${v%.*})\$" <<<"$tree"
done
(cd "$stage/fetch" && cargo check --quiet "${both[@]}")

say "done"

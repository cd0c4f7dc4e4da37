#!/usr/bin/env bash
# Fetches BoringSSL's own test vectors for its TLS CBC "legacy AEADs", for the
# `boringssl_*` tests of tls-cbc-aead/tests/kat.rs: the six files
# crypto/cipher/test/{aes_128,aes_256,des_ede3}_cbc_sha1_tls{,_implicit_iv}_tests.txt,
# 424 records each (minimal, non-minimal and maximal padding, bad padding, bad MACs,
# records too short for a MAC), written by BoringSSL's make_legacy_aead_tests.go.
#
#   bash tls-cbc-aead/tests/fetch-boringssl-vectors.sh [DIR]
#                                 (default: ${CARGO_TARGET_DIR:-target}/boringssl-vectors)
#
# GitHub is not reachable from every machine that reaches a package registry, so the
# files come from PyPI: the `boringssl` wheel (a third party's packaging of BoringSSL's
# source tree) carries them. Only the SHA-256 sums pinned here are trusted: each of the
# six files is byte for byte the one in google/boringssl at commit a0689af29e8e
# (2026-08-21), whose git blob ids are given beside the sums. Nothing else from the
# wheel is kept and nothing in it is run. BoringSSL's newer aes_128_cbc_sha256 file is
# not in that wheel. Needs python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/pinned-wheel.sh
dir=${1:-${CARGO_TARGET_DIR:-target}/boringssl-vectors}

version=1.0.0.post1
wheel=boringssl-$version-py2.py3-none-any.whl
wheel_sha256=f06132a37552e91ca2a534ee260909bac84a837f07cec838f6823122d2ed8377
# sha256, file (git blob at google/boringssl a0689af29e8e in the comment after).
files_sha256="\
d48456a9035db0358aa17679b9d85c75c47c10e6531bc56e42ac5f0cff5db52d  aes_128_cbc_sha1_tls_tests.txt
16ae4b768617b2f0fc54c950ffb660e3bded2ac76d3e849162ef9b5f950f0cb1  aes_128_cbc_sha1_tls_implicit_iv_tests.txt
181ff0110528b6a959d78d9c9e15c5ce89f5ffddca444214a3353e2145585079  aes_256_cbc_sha1_tls_tests.txt
c8fa9b8843a2fee2783be31d2a5a7293c03362d8ee4172d3f976a2e04c302140  aes_256_cbc_sha1_tls_implicit_iv_tests.txt
ef79435fe926f51dace7e5d7d729a924c928a190ae8c9587ac477223a11c4e56  des_ede3_cbc_sha1_tls_tests.txt
919f7ecc025444ee69c03aa03f454a754d811b2f6f3de4d6247a6e0a7d5839a3  des_ede3_cbc_sha1_tls_implicit_iv_tests.txt"
# Blobs: 6e57ba48103b, 6c98e0c8fcdb, 02281d648701, da7c2af0d54a, d9a56b891f7c,
# 8fd6922d5bbd (same order).

# Exactly the files pinned above, from the wheel's boringssl/boringssl/crypto/cipher/test/.
fetch_wheel_files "boringssl==$version" "$wheel" "$wheel_sha256" \
    boringssl/boringssl/crypto/cipher/test/ "$dir" "$files_sha256"

#!/usr/bin/env bash
# Fetches BoringSSL's own AEAD test vectors from its crypto/cipher/test/:
#  * for the `boringssl_*` tests of tls-cbc-aead/tests/kat.rs, the TLS CBC "legacy AEADs":
#    {aes_128,aes_256,des_ede3}_cbc_sha1_tls{,_implicit_iv}_tests.txt, 424 records each
#    (minimal, non-minimal and maximal padding, bad padding, bad MACs, records too short
#    for a MAC), written by BoringSSL's make_legacy_aead_tests.go;
#  * for tests/tests/boringssl_gcm.rs, aes_{128,192,256}_gcm_tests.txt: 146 AES-GCM
#    cases (NIST's GCM spec examples, BoringSSL's own, nonces of 8 to 64 bytes, 128-byte
#    associated data and long messages for the streaming paths).
#
#   bash tests/fetch-boringssl-vectors.sh [DIR]
#                                 (default: ${CARGO_TARGET_DIR:-target}/boringssl-vectors)
#
# GitHub is not reachable from every machine that reaches a package registry, so the
# files come from PyPI: the `boringssl` wheel (a third party's packaging of BoringSSL's
# source tree) carries them. Only the SHA-256 sums pinned here are trusted: each of the
# nine files is byte for byte the one in google/boringssl at commit a0689af29e8e
# (2026-08-21), whose git blob ids are given beside the sums. Nothing else from the
# wheel is kept and nothing in it is run. BoringSSL's newer aes_128_cbc_sha256 file is
# not in that wheel. Needs python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
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
919f7ecc025444ee69c03aa03f454a754d811b2f6f3de4d6247a6e0a7d5839a3  des_ede3_cbc_sha1_tls_implicit_iv_tests.txt
9007963438d54c65a684758cc6f0b35bfe850c1b83d05cf09b55c1cd15363e8f  aes_128_gcm_tests.txt
d6d9f44c5d23daff829841c81ec18fd0fc395c8d88fe0e709cceb5cf72a12ecd  aes_192_gcm_tests.txt
5f4c4fbbed80e021a9e5e3372284ff2779d2569c293c69fc86727f8c7ac0f087  aes_256_gcm_tests.txt"
# Blobs: 6e57ba48103b, 6c98e0c8fcdb, 02281d648701, da7c2af0d54a, d9a56b891f7c,
# 8fd6922d5bbd, eac9aa92703f, 154e3c3ee2c3, 30fd422d8021 (same order).

# Exactly the files pinned above, from the wheel's boringssl/boringssl/crypto/cipher/test/.
fetch_wheel_files "boringssl==$version" "$wheel" "$wheel_sha256" \
    boringssl/boringssl/crypto/cipher/test/ "$dir" "$files_sha256"

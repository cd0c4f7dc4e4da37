#!/usr/bin/env bash
# Fetches NIST's CAVP AES-GCM vector files (CAVS 14.0: gcmEncryptExtIV{128,192,256}.rsp
# and gcmDecrypt{128,192,256}.rsp, 47,250 vectors, about 18 MB) for tests/tests/cavp.rs.
#
#   bash tests/fetch-cavp.sh [DIR]     (default: ${CARGO_TARGET_DIR:-target}/cavp-gcm)
#
# NIST's own site is not reachable from every machine that reaches a package registry,
# so the files come from PyPI: pyca/cryptography's `cryptography_vectors` wheel carries
# them unmodified. The wheel and each extracted file are checked against SHA-256 sums
# pinned here; nothing else from the wheel is kept. Needs python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-${CARGO_TARGET_DIR:-target}/cavp-gcm}

version=50.0.2
wheel=cryptography_vectors-$version-py3-none-any.whl
wheel_sha256=51641f03a3eb4edbe9fb68e3a3574d25f86aa502d06391fffa886330d02778a0
files_sha256="\
0d1f98d0c9e176ede1f3e85484dd13de92c3436ca97df378ec3481e04c19a732  gcmDecrypt128.rsp
ca65640844441d58828e29bff87b7ec4571ef6778f4c331fc06697264edb2ffd  gcmDecrypt192.rsp
ed318735a517d5a85c82d2846c23dcf56e57a352fb0f0a163d9e7617a7bd12ad  gcmDecrypt256.rsp
30156236f768b0d81e58a3e5bd3bd79ce294cf9ef0ba0a84cf7b869c89ebd9fd  gcmEncryptExtIV128.rsp
86827942bf67d1c67f34532bd057adf0a41cd911396a36023d9033f89fc6f571  gcmEncryptExtIV192.rsp
4448b4998c3f58cd9f5542ddf7c573189a721ff3d3ac24cd5177bb4910a787f8  gcmEncryptExtIV256.rsp"

# Already there and intact: nothing to do.
if [ -d "$dir" ] && (cd "$dir" && echo "$files_sha256" | sha256sum --check --quiet --strict) 2>/dev/null; then
    echo "$dir"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
    "cryptography_vectors==$version" >&2
echo "$wheel_sha256  $tmp/$wheel" | sha256sum --check --quiet --strict >&2
mkdir -p "$dir"
python3 - "$tmp/$wheel" "$dir" <<'PY'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
prefix = "cryptography_vectors/ciphers/AES/GCM/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix + "gcm") and n.endswith(".rsp")]
    for n in names:
        with open(os.path.join(out, os.path.basename(n)), "wb") as f:
            f.write(z.read(n))
PY
(cd "$dir" && echo "$files_sha256" | sha256sum --check --quiet --strict) >&2
echo "$dir"

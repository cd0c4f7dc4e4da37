#!/usr/bin/env bash
# Fetches NIST's CAVP AES vector files for tests/tests/cavp.rs and cavp_aes.rs: AES-GCM
# (CAVS 14.0: gcmEncryptExtIV{128,192,256}.rsp and gcmDecrypt{128,192,256}.rsp, 47,250
# vectors, about 18 MB) and the AESAVS known-answer and multi-block files for ECB and
# CBC (CAVS 11.1: {ECB,CBC}{GFSbox,KeySbox,VarKey,VarTxt,MMT}{128,192,256}.rsp).
#
#   bash tests/fetch-cavp.sh [DIR]     (default: ${CARGO_TARGET_DIR:-target}/cavp)
#
# NIST's own site is not reachable from every machine that reaches a package registry,
# so the files come from PyPI: pyca/cryptography's `cryptography_vectors` wheel carries
# them unmodified. The wheel and each extracted file are checked against SHA-256 sums
# pinned here; nothing else from the wheel is kept. Needs python3 with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/pinned-wheel.sh
dir=${1:-${CARGO_TARGET_DIR:-target}/cavp}

version=50.0.2
wheel=cryptography_vectors-$version-py3-none-any.whl
wheel_sha256=51641f03a3eb4edbe9fb68e3a3574d25f86aa502d06391fffa886330d02778a0
files_sha256="\
0d1f98d0c9e176ede1f3e85484dd13de92c3436ca97df378ec3481e04c19a732  gcmDecrypt128.rsp
ca65640844441d58828e29bff87b7ec4571ef6778f4c331fc06697264edb2ffd  gcmDecrypt192.rsp
ed318735a517d5a85c82d2846c23dcf56e57a352fb0f0a163d9e7617a7bd12ad  gcmDecrypt256.rsp
30156236f768b0d81e58a3e5bd3bd79ce294cf9ef0ba0a84cf7b869c89ebd9fd  gcmEncryptExtIV128.rsp
86827942bf67d1c67f34532bd057adf0a41cd911396a36023d9033f89fc6f571  gcmEncryptExtIV192.rsp
4448b4998c3f58cd9f5542ddf7c573189a721ff3d3ac24cd5177bb4910a787f8  gcmEncryptExtIV256.rsp
119b791407ffccf564da7b4399842fe9d2db4eca537c160e9cd38b5e1adb71aa  CBCGFSbox128.rsp
0ffad4681dab37b9feb00a1d0565eeaebf4e6f16f6511114fdcfa45b1dbaaa1f  CBCGFSbox192.rsp
b1835c5632d9f43128adb700a1d067b65ed2bfef53b1baab9106e20f2da8fd93  CBCGFSbox256.rsp
21f85ffcda18787d1431b17c26b7c1baf6e42169e3254ed7ede92633eb00868f  CBCKeySbox128.rsp
3afa023a8641bad9c51966a1d809b6c02ae15ddfe68b232b2f632bb6e1121bea  CBCKeySbox192.rsp
e0b7c7de7c734396d6f3d6b8b033f08142b449e6099090a098df49236765d09b  CBCKeySbox256.rsp
62662d69fdc3e34956f7e0547ad860a9ac0d682a07448af47d50b1755b1c49f1  CBCMMT128.rsp
e0b9a05f3c96517b7fca209f99e03faa5d78b89258ffe0c8727cdaea599818fb  CBCMMT192.rsp
508e971df72f00971dca8df36739e5893d0088483524518dfcbf6b3b21847f7a  CBCMMT256.rsp
f6c3cd5df80ddb16ea0c322ea25794e429e65c74aef8186f76f1645ed5b15f4c  CBCVarKey128.rsp
8239c2782fc1183271c94be65adf0a4da389ffce4d018f136e70337c0c80c18a  CBCVarKey192.rsp
4bd7369056b2d5bf7d72759369dc5bc90a27c993ef13357fc4a788bfaff857e5  CBCVarKey256.rsp
eaed3dc6a3fc6c1d1acd828739036502a583fbeed12e9257d560d50b4f6c6c6e  CBCVarTxt128.rsp
c00870cf1e1b46f3fb5ec889a4d88a4bd0d0c6b40460da59d8a9d448a7e81eb0  CBCVarTxt192.rsp
8438d766d13835c3f271baa65e1323e5de5090105fdb6b35a6cfc23dba0c878e  CBCVarTxt256.rsp
f9b071c9910703f804ddbc816462dad0b3f40fda988e0393dfd8cb3da4376fc4  ECBGFSbox128.rsp
88dfb9f0eed042ab14fd50de5443805d263a63a1dbed36dfdfd0add931b6997f  ECBGFSbox192.rsp
11c6de0a2eeece2b63fbbeb0bb82588adf88d0ece8d7e9a2fa268502edc9e13c  ECBGFSbox256.rsp
87c1485e396cc0532d1b96a1f8d5ba7c380def6637be2629e5261eeab0f34d0f  ECBKeySbox128.rsp
305aaf39cb3ed45f51092616c33b6e6325fb81f46ef7c3bcbc19b94323cfa833  ECBKeySbox192.rsp
434f70c6757e1f10a6cf8d685f1824bc80db34b4e023642216b8972740febd2d  ECBKeySbox256.rsp
8d829708a40bef2d8a7eba37bd66f7c3097c0e30451581b809b7ee8979db5d32  ECBMMT128.rsp
02bad50076338fb35d02e865caf33ff84ff3a5899950f4f97cbb3ac63deda17e  ECBMMT192.rsp
00281608bd5d049457e1476e2c296c5f76522a3cc29cbe06644870f4b853cf26  ECBMMT256.rsp
c1a39631991065bdb26351804b7f881961316a4c0b89a1435aeedbc749a4ca64  ECBVarKey128.rsp
d718c07f4bbef9525c20a524c4e94c73198ed9b6900a5e7a1caf97d78e191aa3  ECBVarKey192.rsp
97d23587b89b327a551da26c41a12d4c8e901dd31d2db3556aa57d65a151c928  ECBVarKey256.rsp
000494372fbd273f684b817454f802fd2e7090f8ae7bbb63b4b402c9e8f239d1  ECBVarTxt128.rsp
528428f5e3c82054f33a34fe8c21bdec555a65c82c610251c14836f345e3a1b4  ECBVarTxt192.rsp
956df459a6822755d29c598ff3123d86ad0e1082d195f1d7aeab5b3c86f69e10  ECBVarTxt256.rsp"

# Exactly the files pinned above, from the wheel's cryptography_vectors/ciphers/AES/.
fetch_wheel_files "cryptography_vectors==$version" "$wheel" "$wheel_sha256" \
    cryptography_vectors/ciphers/AES/ "$dir" "$files_sha256"

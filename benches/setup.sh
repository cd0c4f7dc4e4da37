#!/usr/bin/env bash
# Installs what the peer implementations of the benches crate need to build, and nothing
# else; safe to run again. Only the OpenSSL peer (features peer-openssl and tls-cbc) needs
# system packages: the OpenSSL headers and pkg-config to find them. ring, aws-lc-rs (whose
# aws-lc-sys builds with the cc crate, no cmake) and graviola need only a C compiler.
set -euo pipefail

need=()
for pkg in libssl-dev pkg-config; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        need+=("$pkg")
    fi
done
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    need+=(gcc)
fi

if [ ${#need[@]} -eq 0 ]; then
    echo "setup.sh: peer build dependencies already installed"
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "setup.sh: installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"

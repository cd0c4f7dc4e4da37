#!/usr/bin/env bash
# The main job: our AES-GCM (and TLS CBC-HMAC) against every peer, in one interleaved run.
# Installs the OpenSSL peer's build dependencies first (idempotent). Extra arguments are
# passed to `speed`, e.g. `bash benches/speed.sh --chunks 16,1350,16384 --plot out.svg`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash benches/setup.sh
exec cargo run --release -p benches --bin speed --features full -- --peers --tls-cbc "$@"

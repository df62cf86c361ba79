#!/usr/bin/env bash
# Builds INSEE's own simulator, `fsin`, from its unmodified C sources (the
# reference fsin-rs is compared against) and prints the binary's path on
# its last line, for `fsin bench --insee BIN`.
#
# usage: scripts/build-insee.sh [SRC_DIR]
#   SRC_DIR  INSEE's sources (default: ../shared/reference/insee/src next to
#            the repository). The binary goes to target/insee/fsin-insee.
# Flags: -O3 as the reference figures in docs/validation.md were taken;
# -fcommon because INSEE defines its globals in a header, as the compilers
# it was written for allowed; -w silences its old-style warnings.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:-$repo/../shared/reference/insee/src}"
if [ ! -f "$src/main.c" ]; then
  echo "build-insee: no INSEE sources in $src (main.c missing); pass their directory" >&2
  exit 2
fi
command -v cc >/dev/null || { echo "build-insee: no C compiler (cc); install gcc" >&2; exit 2; }
out="$repo/target/insee"
mkdir -p "$out"
cc -O3 -w -fcommon -o "$out/fsin-insee" "$src"/*.c -lm
echo "$out/fsin-insee"

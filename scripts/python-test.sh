#!/usr/bin/env bash
# The Python module's tests (python/tests), as CI runs them: builds the
# wheel with `pip install ./python[test]` into a fresh virtual environment
# (pip brings maturin, pytest and pandas from PyPI), then runs pytest
# against the `fsin` binary of this checkout.
#
#   scripts/python-test.sh [PYTEST_ARGS...]
#
# Needs the Rust toolchain and python3 (3.9 or later) with venv and pip.
# FSIN_BIN: the binary the reports are compared with (default:
# target/release/fsin, built here if missing). MATURIN_PEP517_ARGS:
# maturin's build options for the wheel (CI gives "--profile checked", the
# profile of its test build, so that the shared crates build once).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${FSIN_PY_VENV:-$root/target/py-venv}
if [[ -z ${FSIN_BIN:-} ]]; then
  [[ -x target/release/fsin ]] || cargo build --release -p sim-server
  export FSIN_BIN=$root/target/release/fsin
fi
rm -rf "$venv"
python3 -m venv "$venv"
started=$(date +%s)
"$venv/bin/pip" install --quiet --disable-pip-version-check "./python[test]"
echo "python-test: pip install ./python[test] took $(( $(date +%s) - started )) s" >&2
# pytest from the root, not `python -m pytest` in python/: the sources
# there would shadow the installed package, which holds the extension.
exec "$venv/bin/pytest" -q python/tests "$@"

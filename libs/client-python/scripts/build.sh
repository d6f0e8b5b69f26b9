#!/bin/sh
# Builds the wheel offline (Debian's setuptools, no build isolation, nothing downloaded) and
# installs it into a fresh virtualenv: scripts/build.sh [venv-dir] [venv options…]
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${SLUICE_PYTHON:-/usr/bin/python3}
VENV=${1:-.venv}
[ $# -gt 0 ] && shift
cd "$HERE"
rm -rf build dist "$VENV" src/*.egg-info
"$PY" -m pip wheel --no-build-isolation --no-deps --no-index -w dist . >/dev/null
"$PY" -m venv "$@" "$VENV"
"$VENV"/bin/python -m pip install --no-index --no-deps --ignore-installed dist/sluice_client-*.whl >/dev/null
rm -rf build src/*.egg-info

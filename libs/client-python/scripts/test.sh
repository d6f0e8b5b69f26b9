#!/bin/sh
# Builds the wheel offline with Debian's setuptools, installs it into a fresh virtualenv and runs
# the tests with pytest from there. Exits 0 only when tests ran and passed.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${SLUICE_PYTHON:-/usr/bin/python3}
cd "$HERE"
rm -rf build dist .venv src/*.egg-info
"$PY" -m pip wheel --no-build-isolation --no-deps --no-index -w dist . >/dev/null
# The venv sees the system's site-packages only for pytest itself; the client comes from the wheel.
"$PY" -m venv --system-site-packages .venv
.venv/bin/python -m pip install --no-index --no-deps --force-reinstall --ignore-installed dist/sluice_client-*.whl >/dev/null
cd tests
exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"

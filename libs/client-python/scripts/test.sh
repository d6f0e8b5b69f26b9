#!/bin/sh
# Builds the wheel, installs it into a fresh virtualenv and runs the tests with pytest from there.
# The venv sees the system's site-packages only for pytest itself; the client comes from the wheel.
# Exits 0 only when tests ran and passed.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
sh "$HERE/scripts/build.sh" .venv --system-site-packages
cd "$HERE/tests"
exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"

#!/bin/sh
# Runs the conformance driver with the client installed from its wheel (scripts/build.sh .venv-driver).
HERE=$(cd "$(dirname "$0")/.." && pwd)
exec "$HERE/.venv-driver/bin/python" "$HERE/conformance_driver.py"

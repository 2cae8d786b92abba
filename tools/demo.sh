#!/usr/bin/env bash
# A one-minute demo: a compute host fails and masakari evacuates its instances, printed as it
# happens. Nothing to configure: the project's Nova simulator (with a fake Keystone) stands in
# for the cloud, and masakari-api and masakari-engine run on SQLite in a temporary directory.
# Usage: tools/demo.sh [--state-dir DIR] [--summary FILE.json]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

if [ ! -x "$VENV/bin/masakari-api" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e .
fi
exec "$VENV/bin/python" tools/demo.py "$@"

#!/usr/bin/env bash
# The project's test command: lint and type checks, the test suite (SQLite, PostgreSQL, MariaDB), then the
# shared conformance suite against the installed console scripts.
# Usage: tools/test.sh [pytest args...]     (MASAKARI_SKIP_CONFORMANCE=1 skips the last part)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"

echo "== ruff"
ruff check masakari tests benchmarks

echo "== mypy"
mypy

echo "== pytest"
require=()
[ "${CI:-}" = "true" ] && require=(--require-servers)
pytest -q "${require[@]}" "$@"

if [ "${MASAKARI_SKIP_CONFORMANCE:-}" != "1" ]; then
  shared=${MASAKARI_SHARED_DIR:-../shared}
  echo "== conformance ($shared/conformance)"
  # Two scenarios at a time: each is mostly process start-up, on a 2-core machine.
  python "$shared/conformance/run.py" --impl project --jobs 2 \
    --compare "$shared/conformance/golden" \
    --deviations tests/conformance/deviations.yaml
fi

#!/usr/bin/env bash
# The project's test command: lint and type checks, the test suite (SQLite, PostgreSQL, MariaDB), then the
# shared conformance suite against the installed console scripts.
# Usage: tools/test.sh [pytest args...]     (MASAKARI_SKIP_CONFORMANCE=1 skips the last part)
# It creates .venv (VENV) with the test extras when it is missing or incomplete.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

# Create or complete the virtualenv, so the command works alone on a fresh clone and after
# tools/run-aio.sh (whose virtualenv lacks the test extras). The stamp records the
# pyproject.toml it was installed from: a changed dependency list installs again.
stamp=$VENV/.masakari-test-extras
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x "$VENV/bin/ruff" ] \
    || [ ! -x "$VENV/bin/pytest" ] || [ ! -x "$VENV/bin/mypy" ]; then
  echo "== installing the project and its test extras into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e '.[test]'
  echo "$want" > "$stamp"
fi
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
  if [ ! -f "$shared/conformance/run.py" ] && [ "${CI:-}" != "true" ]; then
    echo "== conformance skipped: $shared/conformance not found (MASAKARI_SHARED_DIR)"
    exit 0
  fi
  echo "== conformance ($shared/conformance)"
  # Two scenarios at a time: each is mostly process start-up, on a 2-core machine.
  python "$shared/conformance/run.py" --impl project --jobs 2 \
    --compare "$shared/conformance/golden" \
    --deviations tests/conformance/deviations.yaml
fi

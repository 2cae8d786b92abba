#!/usr/bin/env bash
# The project's test command: lint and type checks, the test suite (SQLite, PostgreSQL, MariaDB,
# Galera, RabbitMQ, Redis) and, at the same time, the shared conformance suite against the
# installed console scripts. It fails when either fails.
# Usage: tools/test.sh [pytest args...]     (MASAKARI_SKIP_CONFORMANCE=1 skips the conformance)
# pytest runs on MASAKARI_TEST_WORKERS pytest-xdist workers (default 4); `-n 0` among the
# pytest args runs it in one process.
# It creates .venv (VENV) with the test extras when it is missing or incomplete (and stops
# there with MASAKARI_TEST_SETUP_ONLY=1).
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
  "$VENV/bin/pip" install -q -e '.[test,server]'
  echo "$want" > "$stamp"
fi
export PATH="$PWD/$VENV/bin:$PATH"
# .ci/run builds the virtualenv this way while it installs the reference beside it.
[ "${MASAKARI_TEST_SETUP_ONLY:-}" = "1" ] && exit 0

# The conformance suite runs beside the lint, type checks and pytest: both mostly wait on
# processes they start (servers, engines), so together they take little more than the longer.
# Its output goes to a file, printed once pytest is done.
started=$(date +%s)
conformance_pid=
conformance_log=
if [ "${MASAKARI_SKIP_CONFORMANCE:-}" != "1" ]; then
  shared=${MASAKARI_SHARED_DIR:-../shared}
  if [ -f "$shared/conformance/run.py" ]; then
    conformance_log=$(mktemp "${TMPDIR:-/tmp}/masakari-conformance.XXXXXX")
    # Two scenarios at a time: each is mostly process start-up, on a 2-core machine.
    # setsid: its own process group, stopped as a whole if this script exits early.
    # MASAKARI_CONFORMANCE_BIN: the console scripts it runs, when not this virtualenv's
    # (.ci/run: those installed under the 2026.2 upper-constraints).
    PATH="${MASAKARI_CONFORMANCE_BIN:-$PWD/$VENV/bin}:$PATH" \
      setsid python "$shared/conformance/run.py" --impl project --jobs 2 \
      --compare "$shared/conformance/golden" \
      --deviations tests/conformance/deviations.yaml >"$conformance_log" 2>&1 &
    conformance_pid=$!
  elif [ "${CI:-}" = "true" ]; then
    echo "== conformance: $shared/conformance/run.py not found (MASAKARI_SHARED_DIR)"
    exit 1
  fi
fi
cleanup() {
  if [ -n "$conformance_pid" ]; then
    kill -- "-$conformance_pid" 2>/dev/null || true
  fi
  [ -z "$conformance_log" ] || rm -f "$conformance_log"
}
trap cleanup EXIT

echo "== ruff"
ruff check masakari tests benchmarks

echo "== mypy"
mypy

echo "== pytest"
require=()
[ "${CI:-}" = "true" ] && require=(--require-servers)
# --dist loadgroup: tests/conftest.py keeps tests/galera (one cluster) on one worker.
pytest_status=0
pytest -q -n "${MASAKARI_TEST_WORKERS:-4}" --dist loadgroup "${require[@]}" "$@" || pytest_status=$?
echo "== pytest exit $pytest_status after ${SECONDS}s"

conformance_status=0
if [ -n "$conformance_pid" ]; then
  echo "== conformance ($shared/conformance)"
  wait "$conformance_pid" || conformance_status=$?
  conformance_pid=
  cat "$conformance_log"
  # When it finished: its log's last write.
  echo "== conformance exit $conformance_status, done $(( $(stat -c %Y "$conformance_log") - started ))s after the start"
elif [ "${MASAKARI_SKIP_CONFORMANCE:-}" != "1" ]; then
  echo "== conformance skipped: $shared/conformance not found (MASAKARI_SHARED_DIR)"
fi

if [ "$pytest_status" -ne 0 ] || [ "$conformance_status" -ne 0 ]; then
  echo "== FAILED: pytest exit $pytest_status, conformance exit $conformance_status"
  exit 1
fi

#!/usr/bin/env bash
# The project under one upper-constraints file: build (or reuse) its virtualenv, `pip check`,
# the console scripts, the unit tests and the HTTP server's tests (which check the fallback
# behaviour of the constraints' gunicorn), and with --conformance the shared conformance suite.
# Usage: tools/constraints/check.sh NAME [--conformance]    (NAME: 2026.2, stable-2026.1)
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
conformance=${2:-}
venv=.venv-uc-$name
started=$(date +%s)
if [ ! -x "$venv/bin/pytest" ]; then
  tools/constraints/venv.sh "tools/constraints/$name.txt" "$venv"
fi
echo "== constraints $name: pip check"
"$venv/bin/pip" check
"$venv/bin/pip" freeze --exclude-editable | grep -iE '^(gunicorn|oslo\.messaging|SQLAlchemy|keystonemiddleware)=='
for script in masakari-api masakari-engine masakari-manage masakari-status; do
  "$venv/bin/$script" --help >/dev/null
done
echo "== constraints $name: pytest tests/unit tests/functional/server"
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/pytest" -q -n "${MASAKARI_TEST_WORKERS:-4}" \
  -p no:cacheprovider tests/unit tests/functional/server
if [ "$conformance" = "--conformance" ]; then
  echo "== constraints $name: conformance"
  shared=${MASAKARI_SHARED_DIR:-../shared}
  PATH="$PWD/$venv/bin:$PATH" python "$shared/conformance/run.py" --impl project --jobs 2 \
    --compare "$shared/conformance/golden" --deviations tests/conformance/deviations.yaml
fi
echo "== constraints $name: done in $(( $(date +%s) - started ))s"

#!/usr/bin/env bash
# Build a virtualenv with the project and its test extras under OpenStack's upper-constraints,
# as tox does: the project's own pin is dropped from the constraints first.
# Usage: tools/constraints/venv.sh CONSTRAINTS_FILE VENV_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
constraints=$1
venv=$2
filtered=$(mktemp "${TMPDIR:-/tmp}/masakari-constraints.XXXXXX")
trap 'rm -f "$filtered"' EXIT
grep -viE '^masakari(===|==)' "$constraints" > "$filtered"
python3 -m venv "$venv"
"$venv/bin/pip" install -q -c "$filtered" -e '.[test]'
"$venv/bin/pip" check

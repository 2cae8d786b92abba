#!/usr/bin/env bash
# The real-OpenStack drills (tests/openstack, docs/real-openstack.md) in one step: bring the
# control plane up (unless MASAKARI_REAL_OPENSTACK names one that runs), run the drills on one
# pytest worker, tear down what this script brought up.
# Usage: tools/test-openstack.sh [pytest args...]
#   OPENSTACK_UP_ARGS: extra arguments of `tools/openstack.sh up` (e.g. --rpc-timeout 20)
# Needs the project's .venv (tools/test.sh builds it), MariaDB and RabbitMQ on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
state=${MASAKARI_REAL_OPENSTACK:-}
own=
if [ -z "$state" ]; then
  state=$PWD/.openstack-state
  # shellcheck disable=SC2086
  tools/openstack.sh up --state "$state" ${OPENSTACK_UP_ARGS:-}
  own=1
fi
cleanup() {
  if [ -n "$own" ]; then tools/openstack.sh purge --state "$state" || true; fi
}
trap cleanup EXIT
require=()
[ "${CI:-}" = "true" ] && require=(--require-servers)
# A temporary directory of its own: another pytest run meanwhile (.ci/run runs the suite beside
# it) prunes the numbered ones under /tmp/pytest-of-USER, the drills' masakari state among them.
MASAKARI_REAL_OPENSTACK=$state .venv/bin/pytest -q -n 0 -p no:cacheprovider "${require[@]}" \
  --basetemp "$state/pytest" --durations 10 tests/openstack "$@"

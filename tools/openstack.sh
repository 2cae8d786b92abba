#!/usr/bin/env bash
# The real OpenStack control plane of the drills (docs/real-openstack.md): upstream Keystone,
# Placement, Glance and Nova (fake virt driver) on loopback, on the machine's MariaDB and
# RabbitMQ.
#   tools/openstack.sh install      # .venv-openstack with tools/openstack/requirements.txt
#   tools/openstack.sh up           # install if needed, then start (about a minute)
#   tools/openstack.sh status|down|purge
# Options after the action: --state DIR (.openstack-state), --computes N (3), --base-port P,
# --prefix NAME, --rpc-timeout S, --db-url URL (another MariaDB server).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPENSTACK_VENV:-.venv-openstack}
action=${1:-up}

install() {
  local stamp=$VENV/.requirements want
  want=$(sha256sum tools/openstack/requirements.txt | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "== installing the OpenStack services into $VENV"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -r tools/openstack/requirements.txt
    echo "$want" > "$stamp"
  fi
}

case "$action" in
  install) install; exit 0 ;;
  up) install ;;
esac
# The harness runs in the project's virtualenv (keystoneauth1, SQLAlchemy, PyMySQL).
PYTHON=${PYTHON:-.venv/bin/python}
exec "$PYTHON" -m tests.support.openstack "$@" --venv "$VENV"

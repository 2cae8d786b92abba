#!/usr/bin/env bash
# Set up and run Masakari all-in-one on its embedded default: SQLite, auth_strategy noauth2,
# the API (port 15868) and the engine together. State lives in ./state.
# Environment: MASAKARI_STATE_DIR (default ./state) holds masakari.conf and the database;
# MASAKARI_PORT (default 15868, or the port of an existing conf) is written into that conf.
# Nova: set the [DEFAULT] os_privileged_user_* options in state/masakari.conf.
# --recommended: merge etc/masakari/masakari.conf.recommended into that conf first (the
# settings it does not set yet; masakari-manage config recommended --merge).
set -euo pipefail
recommended=
for arg in "$@"; do
  case $arg in
    --recommended) recommended=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--recommended]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
root=$PWD
state=${MASAKARI_STATE_DIR:-$root/state}
port=${MASAKARI_PORT:-15868}

VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/masakari-api" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e '.[server]'
fi
case $VENV in /*) ;; *) VENV=$root/$VENV ;; esac
export PATH="$VENV/bin:$PATH"

mkdir -p "$state"
conf=$state/masakari.conf
if [ -f "$conf" ]; then
  # A conf from an earlier run: MASAKARI_PORT, when given, replaces its port; otherwise the
  # conf's port is the one announced, so the printed URL is always where the API listens.
  if [ -n "${MASAKARI_PORT:-}" ]; then
    if grep -q '^masakari_api_listen_port *=' "$conf"; then
      sed -i "s/^masakari_api_listen_port *=.*/masakari_api_listen_port = $port/" "$conf"
    else
      sed -i "0,/^\[DEFAULT\]/s//[DEFAULT]\nmasakari_api_listen_port = $port/" "$conf"
    fi
  else
    port=$(sed -n 's/^masakari_api_listen_port *= *\([0-9]*\).*/\1/p' "$conf" | tail -n1)
    port=${port:-15868}
  fi
else
  cat > "$conf" <<CONF
[DEFAULT]
auth_strategy = noauth2
state_path = $state
masakari_api_listen = 127.0.0.1
masakari_api_listen_port = $port
masakari_api_workers = 1
# Nova credentials (a keystone user with the admin role), needed for hosts and recovery:
# os_privileged_user_auth_url = http://keystone.example:5000/v3
# os_privileged_user_name = masakari
# os_privileged_user_password = secret
# os_privileged_user_tenant = service

[database]
connection = sqlite:///$state/masakari.db
CONF
fi

if [ -n "$recommended" ]; then
  masakari-manage config recommended --merge "$conf"
fi
masakari-manage --config-file "$conf" db sync
masakari-engine --config-file "$conf" &
engine=$!
trap 'kill $engine 2>/dev/null; wait $engine 2>/dev/null' EXIT INT TERM
echo "Masakari API on http://127.0.0.1:$port (noauth2: no token needed, every caller is admin);" \
  "engine pid $engine; try: curl http://127.0.0.1:$port/v1/segments"
if grep -q '^# Added by masakari-manage config recommended' "$conf" \
    || grep -q '^# masakari.conf.recommended' "$conf"; then
  echo "Recommended settings on ($conf); metrics: curl http://127.0.0.1:$port/metrics"
fi
masakari-api --config-file "$conf"

"""devstack/plugin.sh run through its phases with devstack's functions stubbed: it installs
the project, writes a masakari.conf the services start with, and starts and stops them."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.api_process import request
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
BINDIR = os.path.dirname(sys.executable)

# devstack's functions, as far as the plugin calls them: every call is recorded in
# $CALLS, run_process really starts the command (and stop_process stops it).
STUBS = r"""
record() { printf '%s\n' "$*" >> "$CALLS"; }
is_service_enabled() {
  for s in "$@"; do [[ ",$ENABLED_SERVICES," == *",$s,"* ]] && return 0; done
  return 1
}
enable_service() {
  for s in "$@"; do [[ ",$ENABLED_SERVICES," == *",$s,"* ]] || ENABLED_SERVICES+=",$s"; done
}
echo_summary() { echo "$@"; }
die() { echo "die: $*" >&2; exit 1; }
sudo() { "$@"; }
setup_develop() { record setup_develop "$@"; }
iniset() {
  python3 - "$@" <<'PY'
import configparser, sys
path, section, option, value = sys.argv[1:5]
conf = configparser.RawConfigParser()
conf.optionxform = str
conf.read(path)
if section != "DEFAULT" and not conf.has_section(section):
    conf.add_section(section)
conf.set(section, option, value)
with open(path, "w") as fh:
    conf.write(fh)
PY
}
database_connection_url() { echo "sqlite:///$STATE/$1.db"; }
recreate_database() { rm -f "$STATE/$1.db"; record recreate_database "$@"; }
iniset_rpc_backend() { record iniset_rpc_backend "$@"; }
configure_keystone_authtoken_middleware() {
  iniset "$1" keystone_authtoken www_authenticate_uri "$KEYSTONE_SERVICE_URI"
  iniset "$1" keystone_authtoken auth_type password
  iniset "$1" keystone_authtoken auth_url "$KEYSTONE_SERVICE_URI"
  iniset "$1" keystone_authtoken username "$2"
  iniset "$1" keystone_authtoken password "$SERVICE_PASSWORD"
  iniset "$1" keystone_authtoken user_domain_name Default
  iniset "$1" keystone_authtoken project_name "$SERVICE_PROJECT_NAME"
  iniset "$1" keystone_authtoken project_domain_name Default
  record configure_keystone_authtoken_middleware "$@"
}
write_uwsgi_config() { record write_uwsgi_config "$@"; }
remove_uwsgi_config() { record remove_uwsgi_config "$@"; }
create_service_user() { record create_service_user "$@"; }
get_or_create_service() { record get_or_create_service "$@"; echo service-id; }
get_or_create_endpoint() { record get_or_create_endpoint "$@"; }
run_process() {
  record run_process "$1"
  setsid bash -c "exec $2" > "$STATE/$1.log" 2>&1 < /dev/null &
  echo $! > "$STATE/$1.pid"
}
stop_process() {
  record stop_process "$1"
  if [ -f "$STATE/$1.pid" ]; then kill "$(cat "$STATE/$1.pid")"; rm -f "$STATE/$1.pid"; fi
}
wait_for_service() {
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    python3 -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)" "$2" \
      2>/dev/null && return 0
    sleep 0.5
  done
  return 1
}
"""


def _env(tmp: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PATH=f"{BINDIR}:{env['PATH']}",
        CALLS=str(tmp / "calls"),
        STATE=str(tmp),
        DEST=str(tmp / "opt"),
        MASAKARI_DIR=str(ROOT),
        MASAKARI_CONF_DIR=str(tmp / "etc"),
        MASAKARI_USE_MOD_WSGI="False",
        MASAKARI_SERVICE_PORT=str(port),
        SERVICE_HOST="127.0.0.1",
        STACK_USER=subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
        ENABLED_SERVICES="key,n-api",
        ENABLE_DEBUG_LOG_LEVEL="True",
        API_WORKERS="1",
        KEYSTONE_SERVICE_URI="http://127.0.0.1:5000/identity",
        SERVICE_PASSWORD="secret",
        SERVICE_PROJECT_NAME="service",
        REGION_NAME="RegionOne",
        SERVICE_TIMEOUT="60",
    )
    return env


def _phase(tmp: Path, env: dict[str, str], *phase: str) -> None:
    script = tmp / "stubs.sh"
    script.write_text(STUBS)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{script}"; source "{ROOT}/devstack/settings"; '
            f'source "{ROOT}/devstack/plugin.sh" {" ".join(phase)}',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (FileNotFoundError, ProcessLookupError):
        return False
    return True


def test_the_devstack_plugin_installs_configures_starts_and_stops(tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path, port)
    try:
        for phase in (("stack", "install"), ("stack", "post-config"), ("stack", "extra")):
            _phase(tmp_path, env, *phase)
        calls = (tmp_path / "calls").read_text().splitlines()
        assert f"setup_develop {ROOT}" in calls
        assert (
            f"get_or_create_endpoint service-id RegionOne http://127.0.0.1:{port}/v1/$(tenant_id)s"
            in calls
        )
        assert (tmp_path / "etc" / "api-paste.ini").read_text() == (
            ROOT / "etc" / "masakari" / "api-paste.ini"
        ).read_text()
        conf = configparser.RawConfigParser()
        conf.read(tmp_path / "etc" / "masakari.conf")
        assert conf.get("database", "connection") == f"sqlite:///{tmp_path}/masakari.db"

        # Started: the API answers (the version document needs no token), the engine runs.
        status, _, body = request(port, "GET", "/")
        assert status == 200 and b"versions" in body
        time.sleep(2)
        assert _alive(tmp_path / "masakari-engine.pid"), (
            tmp_path / "masakari-engine.log"
        ).read_text()
    finally:
        _phase(tmp_path, env, "unstack")
    assert not (tmp_path / "masakari-api.pid").exists()
    assert not (tmp_path / "masakari-engine.pid").exists()

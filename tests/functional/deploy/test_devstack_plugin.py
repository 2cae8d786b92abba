"""devstack/plugin.sh run the way stack.sh and unstack.sh run it, through devstack's own
function library: the files under tests/fakes/devstack/ (devstack's, unmodified; the README
there names the commit). The plugin is enabled with devstack's `enable_plugin`, fetched with
`fetch_plugins` (which finds a copy of this tree at $DEST/masakari, where devstack's CI jobs
put it, and clones nothing), its settings loaded and its phases run with `run_phase`, under
stack.sh's `set -o errexit`. So `setup_develop` really pip-installs the project in editable
mode, reading its name from setup.cfg as devstack does (stack.sh stopped there while the
project had no setup.cfg), `iniset` writes masakari.conf, `run_process` writes the systemd
unit files, `write_uwsgi_config` the uWSGI file, `wait_for_service` polls the API with curl,
and Keystone's helpers (`create_service_user`, `get_or_create_service`,
`get_or_create_endpoint`) build their `openstack` commands.

What is not devstack's, because it would touch the machine or needs a running cloud:

- stackrc and local.conf: the test sets the variables they would (`_setup`), among them
  `GLOBAL_VENV=True` (stackrc's default) with `DEVSTACK_VENV` a new virtualenv that sees the
  test virtualenv's packages through a .pth file, so pip (the test virtualenv's, run by the
  new one's bin/pip) finds the dependencies installed (no download) and installs the project
  and its console scripts there, not in .venv;
  `os_VENDOR`/`os_PACKAGE` say Ubuntu, so `GetOSVersion` (which would install lsb-release)
  does not run and lib/apache takes its Debian paths.
- `database_connection_url` and `recreate_database` (lib/database needs a MySQL or
  PostgreSQL server): redefined to a SQLite file in the test's directory.
- Commands on PATH, each recording its arguments in $CALLS:
  `sudo` runs `install`, `rm`, `mkdir`, `tee`, `grep`, `sed`, `cp`, `ln`, `touch` when every
  absolute path they are given is in the test's directory (`iniset -sudo` writes the unit
  files with them), and runs nothing else (Apache's `a2ensite`, `systemd-tmpfiles`,
  `git config --system`, writes under /etc);
  `systemctl` (devstack's $SYSTEMCTL) starts the ExecStart of the unit file `run_process`
  wrote, in the background, and stops it again;
  `openstack` answers Keystone's questions as an empty Keystone would (no such service, no
  endpoint) and prints an id for what is created;
  `$REQUIREMENTS_DIR/.venv/bin/edit-constraints` (openstack/requirements' tool) removes the
  named package from the constraints file.
- masakari-monitors and masakari-dashboard are small local git repositories standing in for
  the real ones (the plugin clones them with devstack's `git_clone`): the monitors' console
  scripts run masakarimonitors from the test virtualenv, the dashboard has the three files
  Horizon links to. Horizon's tree is a directory in the test's.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import pytest

from tests.support.api_process import request
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
DEVSTACK = ROOT / "tests" / "fakes" / "devstack"
BINDIR = os.path.dirname(sys.executable)
NOT_SOURCES = (
    ".git",
    ".venv*",
    ".ref-venv",
    ".*_cache",
    "build",
    "state",
    "demo-state",
    "*.egg-info",
    "__pycache__",
)


@pytest.fixture
def devstack_tools(request: pytest.FixtureRequest) -> None:
    """devstack's wait_for_service runs curl, git_clone git: without them the test is skipped,
    or fails under --require-servers (CI)."""
    missing = [tool for tool in ("curl", "git") if shutil.which(tool) is None]
    if missing:
        reason = f"devstack's functions need {', '.join(missing)}"
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)


# Run before each script: stack.sh's and unstack.sh's start, as far as the plugin needs it.
PRELUDE = r"""
TOP_DIR=$DEVSTACK_DIR
source "$TOP_DIR/functions"
source "$TOP_DIR/lib/rpc_backend"
function database_connection_url { echo "sqlite:///$STATE/$1.db"; }
function recreate_database { rm -f "$STATE/$1.db"; }
enable_plugin masakari "$MASAKARI_SOURCE"
setup_devstack_virtualenv
source "$TOP_DIR/lib/apache"
source "$TOP_DIR/lib/keystone"
"""

STACK = r"""
set -o errexit
fetch_plugins
run_phase source
for phase in $PHASES; do
    run_phase stack "$phase"
done
"""

UNSTACK = r"""
load_plugin_settings
run_phase "$1"
"""

FAKE_SUDO = r"""#!/bin/bash
printf 'sudo %s\n' "$*" >> "$CALLS"
case "$1" in
    install|rm|mkdir|tee|grep|sed|cp|ln|touch) ;;
    *) exit 0 ;;
esac
for arg in "${@:2}"; do
    # A path (not a sed expression such as "/^\[Service\]/ a\ ...") outside the test's.
    if [[ "$arg" =~ ^/[^[:space:]^]*$ && "$arg" != "$STATE"/* ]]; then
        [ "$1" != tee ] || cat > /dev/null
        exit 0
    fi
done
exec "$@"
"""

FAKE_SYSTEMCTL = r"""#!/bin/bash
printf 'systemctl %s\n' "$*" >> "$CALLS"
unit=$2
case "$1" in
    enable) touch "$STATE/$unit.enabled" ;;
    disable) rm -f "$STATE/$unit.enabled" ;;
    is-enabled) [ -f "$STATE/$unit.enabled" ] ;;
    start)
        command=$(sed -n 's/^ExecStart *= *//p' "$SYSTEMD_DIR/$unit")
        setsid bash -c "exec $command" > "$STATE/$unit.log" 2>&1 < /dev/null &
        echo $! > "$STATE/$unit.pid"
        ;;
    stop)
        if [ -f "$STATE/$unit.pid" ]; then
            kill "$(cat "$STATE/$unit.pid")" 2>/dev/null
            rm -f "$STATE/$unit.pid"
        fi
        ;;
esac
exit 0
"""

FAKE_OPENSTACK = r"""#!/bin/bash
printf 'openstack %s\n' "$*" >> "$CALLS"
shift 2  # --os-cloud devstack-system-admin
case "$1 $2" in
    "service show") exit 1 ;;
    "endpoint list"|"role assignment") ;;
    *) echo "$1-id" ;;
esac
"""

FAKE_EDIT_CONSTRAINTS = r"""#!/bin/bash
printf 'edit-constraints %s\n' "$*" >> "$CALLS"
sed -i "/^$3===/d" "$1"
"""

MONITORS = ("processmonitor", "instancemonitor", "introspectiveinstancemonitor", "hostmonitor")


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _git_repo(path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        _write(path / name, text)
    for args in (["init", "-q", "-b", "master"], ["add", "."], ["commit", "-q", "-m", "stand-in"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            cwd=path,
            check=True,
            capture_output=True,
        )


def _stand_ins(tmp: Path) -> None:
    scripts = "\n".join(f'masakari-{m} = "masakarimonitors.cmd.{m}:main"' for m in MONITORS)
    _git_repo(
        tmp / "repos" / "masakari-monitors",
        {
            "pyproject.toml": '[project]\nname = "masakari-monitors"\nversion = "22.0.0"\n'
            f"[project.scripts]\n{scripts}\n[tool.setuptools]\npy-modules = []\n",
            "setup.cfg": "[metadata]\nname = masakari-monitors\n",
        },
    )
    _git_repo(
        tmp / "repos" / "masakari-dashboard",
        {
            "pyproject.toml": '[project]\nname = "masakari-dashboard"\nversion = "10.0.0"\n'
            "[tool.setuptools]\npy-modules = []\n",
            "setup.cfg": "[metadata]\nname = masakari-dashboard\n",
            "masakaridashboard/local/enabled/_50_masakaridashboard.py": "PANEL = 'masakari'\n",
            "masakaridashboard/local/local_settings.d/_50_masakari.py": "",
            "masakaridashboard/conf/masakari_policy.yaml": "{}\n",
        },
    )
    for sub in ("local/enabled", "local/local_settings.d", "conf"):
        (tmp / "horizon" / "openstack_dashboard" / sub).mkdir(parents=True)


def _setup(tmp: Path, services: str, **extra: str) -> dict[str, str]:
    """The machine devstack would find: fake commands, the requirements checkout, the
    virtualenv; returns the environment stackrc and local.conf would have made."""
    fakes = tmp / "fakebin"
    _write(fakes / "sudo", FAKE_SUDO, 0o755)
    _write(fakes / "systemctl", FAKE_SYSTEMCTL, 0o755)
    _write(fakes / "openstack", FAKE_OPENSTACK, 0o755)
    requirements = tmp / "requirements"
    _write(requirements / ".venv" / "bin" / "edit-constraints", FAKE_EDIT_CONSTRAINTS, 0o755)
    _write(requirements / "upper-constraints.txt", "masakari===22.0.0\n")
    _write(requirements / "global-requirements.txt", "python-masakariclient>=8.0.0  # Apache-2.0\n")
    venv = tmp / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # pip and setuptools are the test virtualenv's (through the .pth file); pip installs into
    # the virtualenv it runs in, this one.
    _write(
        venv / "bin" / "pip",
        f"#!{venv}/bin/python\nimport sys\nfrom pip._internal.cli.main import main\n"
        "sys.exit(main())\n",
        0o755,
    )
    # Where the plugin's repository is on a devstack machine. A copy: setup_develop's build
    # writes masakari.egg-info next to the sources.
    shutil.copytree(
        ROOT,
        tmp / "opt" / "masakari",
        ignore=shutil.ignore_patterns(*NOT_SOURCES),
        symlinks=True,
    )
    _stand_ins(tmp)
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    env = dict(os.environ)
    env.update(
        PATH=f"{fakes}:{BINDIR}:{env['PATH']}",
        # The stand-ins and the project build with the test virtualenv's setuptools.
        PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        CALLS=str(tmp / "calls"),
        STATE=str(tmp),
        DEVSTACK_DIR=str(DEVSTACK),
        MASAKARI_SOURCE=str(ROOT),
        DEST=str(tmp / "opt"),
        DATA_DIR=str(tmp / "data"),
        STACK_USER=user,
        GLOBAL_VENV="True",
        DEVSTACK_VENV=str(venv),
        PYTHON3_VERSION=f"{sys.version_info.major}.{sys.version_info.minor}",
        REQUIREMENTS_DIR=str(requirements),
        SYSTEMCTL=str(fakes / "systemctl"),
        SYSTEMD_DIR=str(tmp / "systemd"),
        os_VENDOR="Ubuntu",
        os_RELEASE="24.04",
        os_PACKAGE="deb",
        os_CODENAME="noble",
        ENABLED_SERVICES=services,
        SERVICE_HOST="127.0.0.1",
        SERVICE_LOCAL_HOST="127.0.0.1",
        SERVICE_PROTOCOL="http",
        SERVICE_IP_VERSION="4",
        SERVICE_PASSWORD="secret",
        SERVICE_TIMEOUT="60",
        REGION_NAME="RegionOne",
        GIT_BASE="https://opendev.org",
        ENABLE_DEBUG_LOG_LEVEL="True",
        SYSLOG="False",
        LOG_COLOR="False",
        API_WORKERS="1",
        WORKER_TIMEOUT="80",
        HORIZON_DIR=str(tmp / "horizon"),
        MASAKARI_CONF_DIR=str(tmp / "etc" / "masakari"),
        MASAKARI_MONITORS_CONF_DIR=str(tmp / "etc" / "masakarimonitors"),
        MASAKARI_MONITORS_REPO=str(tmp / "repos" / "masakari-monitors"),
        MASAKARI_DASHBOARD_REPO=str(tmp / "repos" / "masakari-dashboard"),
    )
    env.update(extra)
    return env


def _run(env: dict[str, str], script: str, *args: str) -> str:
    done = subprocess.run(
        ["bash", "-c", PRELUDE + script, "devstack", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    return done.stdout + done.stderr


def _ini(path: Path) -> configparser.RawConfigParser:
    conf = configparser.RawConfigParser(interpolation=None)
    conf.read(path)
    return conf


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (FileNotFoundError, ProcessLookupError):
        return False
    return True


def test_stack_sh_installs_configures_and_starts_masakari_and_unstack_stops_it(
    devstack_tools: None, tmp_path: Path
) -> None:
    port = free_port()
    env = _setup(
        tmp_path,
        "key,n-api,n-cpu,horizon",
        PHASES="install post-config extra",
        MASAKARI_USE_MOD_WSGI="False",
        MASAKARI_SERVICE_PORT=str(port),
    )
    units = tmp_path / "systemd"
    etc = tmp_path / "etc"
    venv_bin = tmp_path / "venv" / "bin"
    try:
        _run(env, STACK)
        calls = (tmp_path / "calls").read_text().splitlines()

        # setup_develop: the name from setup.cfg taken out of the constraints, the project
        # installed in editable mode with its console scripts in devstack's virtualenv.
        assert f"edit-constraints {tmp_path}/requirements/upper-constraints.txt -- masakari" in (
            calls
        )
        assert (tmp_path / "requirements" / "upper-constraints.txt").read_text() == ""
        pip = subprocess.run(
            [
                venv_bin / "python",
                "-m",
                "pip",
                "list",
                "--path",
                str(next((tmp_path / "venv").glob("lib/python*/site-packages"))),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "masakari " in pip and "masakari-monitors" in pip and "masakari-dashboard" in pip
        for script in ("masakari-api", "masakari-engine", "masakari-manage"):
            assert (venv_bin / script).exists()

        # masakari.conf: devstack's iniset, rpc backend and keystone middleware settings.
        conf = _ini(etc / "masakari" / "masakari.conf")
        assert conf.get("database", "connection") == f"sqlite:///{tmp_path}/masakari.db"
        assert conf.get("DEFAULT", "masakari_api_listen_port") == str(port)
        assert conf.get("DEFAULT", "os_privileged_user_name") == "nova"
        assert conf.get("keystone_authtoken", "username") == "masakari"
        assert conf.get("keystone_authtoken", "auth_url") == "http://127.0.0.1/identity"
        assert (etc / "masakari" / "api-paste.ini").read_text() == (
            ROOT / "etc" / "masakari" / "api-paste.ini"
        ).read_text()

        # Keystone: the service user, the instance-ha service and its endpoint.
        assert any(
            c.startswith("openstack --os-cloud devstack-system-admin user create masakari")
            for c in calls
        )
        assert any(
            c.startswith(
                "openstack --os-cloud devstack-system-admin endpoint create "
                f"service-id public http://127.0.0.1:{port}/v1/$(tenant_id)s"
            )
            for c in calls
        ), calls

        # The services: unit files with absolute commands, started; the API answers.
        api = _ini(units / "devstack@masakari-api.service")
        assert api.get("Service", "ExecStart") == (
            f"{venv_bin}/masakari-api --config-file {etc}/masakari/masakari.conf"
        )
        status, _, body = request(port, "GET", "/")
        assert status == 200 and b"versions" in body
        time.sleep(2)
        assert _alive(tmp_path / "devstack@masakari-engine.service.pid"), (
            tmp_path / "devstack@masakari-engine.service.log"
        ).read_text()

        # masakari-monitors: configured and started on the compute node (not hostmonitor).
        monitors = _ini(etc / "masakarimonitors" / "masakarimonitors.conf")
        assert monitors.get("api", "username") == "masakari"
        assert monitors.get("api", "auth_url") == "http://127.0.0.1/identity"
        assert monitors.get("api", "region") == "RegionOne"
        assert monitors.get("process", "process_list_path") == (
            f"{etc}/masakarimonitors/process_list.yaml"
        )
        for name in MONITORS[:3]:
            unit = _ini(units / f"devstack@masakari-{name}.service")
            assert unit.get("Service", "ExecStart") == (
                f"{venv_bin}/masakari-{name} --config-file "
                f"{etc}/masakarimonitors/masakarimonitors.conf"
            )
        assert not (units / "devstack@masakari-hostmonitor.service").exists()
        # The real masakari-processmonitor runs with that file (the instance monitors need
        # libvirt's Python binding, which the test virtualenv has not).
        assert (etc / "masakarimonitors" / "process_list.yaml").read_text() == "[]\n"
        assert _alive(tmp_path / "devstack@masakari-processmonitor.service.pid"), (
            tmp_path / "devstack@masakari-processmonitor.service.log"
        ).read_text()

        # masakari-dashboard: linked into Horizon.
        dashboard = tmp_path / "horizon" / "openstack_dashboard"
        enabled = dashboard / "local" / "enabled" / "_50_masakaridashboard.py"
        assert enabled.resolve() == (
            tmp_path
            / "opt"
            / "masakari-dashboard"
            / "masakaridashboard"
            / "local"
            / "enabled"
            / "_50_masakaridashboard.py"
        )
        assert (dashboard / "conf" / "masakari_policy.yaml").is_symlink()
    finally:
        _run(env, UNSTACK, "unstack")
    for unit in ("masakari-api", "masakari-engine", *(f"masakari-{m}" for m in MONITORS[:3])):
        assert not (tmp_path / f"devstack@{unit}.service.pid").exists()
        assert not (tmp_path / f"devstack@{unit}.service.enabled").exists()
    assert not (etc / "masakari").exists() and not (etc / "masakarimonitors").exists()
    assert not list((tmp_path / "horizon" / "openstack_dashboard").rglob("*masakari*"))


def test_under_uwsgi_the_plugin_writes_the_uwsgi_file_and_the_instance_ha_endpoint(
    devstack_tools: None, tmp_path: Path
) -> None:
    env = _setup(tmp_path, "key,rabbit", PHASES="post-config", RABBIT_PASSWORD="rabbit-secret")
    _run(env, STACK)
    calls = (tmp_path / "calls").read_text().splitlines()
    conf = _ini(tmp_path / "etc" / "masakari" / "masakari.conf")
    assert conf.get("DEFAULT", "transport_url") == (
        "rabbit://stackrabbit:rabbit-secret@127.0.0.1:5672/"
    )
    uwsgi = _ini(tmp_path / "etc" / "masakari" / "masakari-api-uwsgi.ini")
    assert uwsgi.get("uwsgi", "module") == "masakari.wsgi.api:application"
    assert uwsgi.get("uwsgi", "socket") == "/var/run/uwsgi/masakari-api.socket"
    assert any(
        c.startswith(
            "openstack --os-cloud devstack-system-admin endpoint create "
            "service-id public http://127.0.0.1/instance-ha/v1/$(tenant_id)s"
        )
        for c in calls
    ), calls
    assert "sudo a2ensite masakari-api" in calls
    # No compute service: no monitors.
    assert not (tmp_path / "etc" / "masakarimonitors").exists()

    _run(env, UNSTACK, "clean")
    assert not (tmp_path / "etc" / "masakari").exists()
    assert "sudo a2dissite masakari-api" in (tmp_path / "calls").read_text().splitlines()


def test_setup_cfg_gives_devstack_the_name_in_pyproject_toml() -> None:
    # setup_develop's own reading of setup.cfg (inc/python, _setup_package_with_constraints_edit).
    name = subprocess.run(
        ["awk", "/^name.*=/ {print $3}", str(ROOT / "setup.cfg")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with open(ROOT / "pyproject.toml", "rb") as fh:
        assert name == tomllib.load(fh)["project"]["name"]

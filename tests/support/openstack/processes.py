"""The control plane's processes: how each is started, and its pid file.

Every process runs in a session of its own (so that the command that brought the cloud up
can exit, and a signal reaches a gunicorn master and its workers together), writes its
output to ``state/logs/NAME.out``, and is found again through ``state/pids/NAME.pid``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.openstack.config import Layout

ENTRY = Path(__file__).resolve().parent / "entry"
REPO = Path(__file__).resolve().parents[3]
WSGI = {
    "keystone": "os_keystone",
    "placement": "os_placement",
    "glance": "os_glance",
    "nova-api": "os_nova_api",
}
# The slow disable blocks a nova-api thread for rpc_response_timeout (60 s): threads enough
# that the drills' other requests are served meanwhile, and no worker time-out below it.
GUNICORN = ["--worker-class", "gthread", "--workers", "2", "--threads", "8", "--timeout", "300"]


def names(layout: Layout) -> list[str]:
    """Every process of the cloud, in start order."""
    computes = [compute_name(host) for host in layout.computes]
    fixed = ["keystone", "placement", "glance", "nova-api", "neutron"]
    return fixed + ["nova-conductor", "nova-scheduler", *computes]


def compute_name(host: str) -> str:
    return f"nova-compute-{host}"


def command(layout: Layout, name: str) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment of one process."""
    bin_dir = layout.venv / "bin"
    logs = layout.state / "logs"
    nova_conf = str(layout.dir("nova") / "nova.conf")
    if name in WSGI:
        service = "nova" if name == "nova-api" else name
        argv = [
            str(bin_dir / "gunicorn"),
            *GUNICORN,
            "--pythonpath",
            str(ENTRY),
            "--bind",
            f"127.0.0.1:{layout.port(service)}",
            "--error-logfile",
            str(logs / f"{name}.gunicorn.log"),
            f"{WSGI[name]}:application",
        ]
        env = {
            "keystone": {"OS_KEYSTONE_CONFIG_FILES": str(layout.dir("keystone") / "keystone.conf")},
            "placement": {"OS_PLACEMENT_CONFIG_DIR": str(layout.dir("placement"))},
            "glance": {"OS_GLANCE_CONFIG_DIR": str(layout.dir("glance"))},
            "nova-api": {
                "OS_NOVA_CONFIG_DIR": str(layout.dir("nova")),
                "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf",
            },
        }[name]
        return argv, env
    if name == "neutron":
        return [sys.executable, "-m", "tests.support.openstack.neutron", str(layout.port(name))], {}
    if name in ("nova-conductor", "nova-scheduler"):
        return [
            str(bin_dir / name),
            "--config-file",
            nova_conf,
            "--log-file",
            str(logs / f"{name}.log"),
        ], {}
    host = name.removeprefix("nova-compute-")
    return [
        str(bin_dir / "nova-compute"),
        "--config-file",
        nova_conf,
        "--config-file",
        str(layout.dir(host) / "compute.conf"),
    ], {}


def _pid_file(layout: Layout, name: str) -> Path:
    return layout.state / "pids" / f"{name}.pid"


def pid(layout: Layout, name: str) -> int | None:
    """The pid of ``name`` if it runs (a zombie of this process counts as gone)."""
    try:
        number = int(_pid_file(layout, name).read_text())
    except (FileNotFoundError, ValueError):
        return None
    with contextlib.suppress(ChildProcessError):
        # Reaps it when this process started it and it has exited.
        if os.waitpid(number, os.WNOHANG)[0] == number:
            return None
    try:
        os.kill(number, 0)
    except ProcessLookupError:
        return None
    return number


# The services this process started, kept referenced: a service outlives the call that
# starts it (its pid file is what the harness reads), and a Popen collected while its child
# runs is a ResourceWarning, an error under the suite's warnings-as-errors.
_CHILDREN: list[subprocess.Popen[bytes]] = []


def start(layout: Layout, name: str) -> int:
    """Start ``name`` (a no-op when it runs); its pid."""
    running = pid(layout, name)
    if running is not None:
        return running
    argv, extra = command(layout, name)
    (layout.state / "pids").mkdir(parents=True, exist_ok=True)
    out = open(layout.state / "logs" / f"{name}.out", "ab")  # noqa: SIM115 (the child's)
    env = {**os.environ, **extra, "PYTHONUNBUFFERED": "1"}
    # The services' own virtualenv, not the one running this (the neutron stand-in excepted).
    env.pop("VIRTUAL_ENV", None)
    with out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
    _CHILDREN.append(proc)
    _pid_file(layout, name).write_text(str(proc.pid))
    return proc.pid


def signal_process(layout: Layout, name: str, sig: int) -> bool:
    """Send ``sig`` to ``name``'s process group; False when it does not run."""
    number = pid(layout, name)
    if number is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(number, sig)
    return True


def stop(layout: Layout, name: str, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    """Stop ``name`` with ``sig`` (SIGKILL after ``timeout``) and wait until it is gone."""
    if not signal_process(layout, name, sig):
        return
    deadline = time.monotonic() + timeout
    while pid(layout, name) is not None:
        if time.monotonic() > deadline:
            signal_process(layout, name, signal.SIGKILL)
            deadline = time.monotonic() + timeout
        time.sleep(0.1)
    # Workers of a killed gunicorn master, if any outlived it.
    number = int(_pid_file(layout, name).read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(number, signal.SIGKILL)

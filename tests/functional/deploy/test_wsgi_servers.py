"""masakari.wsgi.api:application as deployment tools serve it: plain gunicorn and uWSGI,
configured only through OS_MASAKARI_CONFIG_DIR (masakari.conf, api-paste.ini, policy.yaml),
with the reference's own api-paste.ini and generated policy.yaml loaded unchanged."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests

from tests.fakes import nova as fake_nova
from tests.fakes.nova import NovaSimulator
from tests.support.ports import free_port

REPO = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent
# The reference's virtualenv (.ci/run makes it): its pip install put etc/masakari/api-paste.ini
# under its prefix, and its oslopolicy-sample-generator writes the reference's policy sample.
REF_PYTHON = os.environ.get("MASAKARI_REF_PYTHON")
REF_PREFIX = pathlib.Path(REF_PYTHON).parent.parent if REF_PYTHON else None
needs_uwsgi = pytest.mark.skipif(
    not (BIN / "uwsgi").exists(), reason="uwsgi is not installed (pip install uWSGI)"
)


@pytest.fixture(scope="module")
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator() as sim:
        sim.add_service("compute-1")
        yield sim


def _config_dir(path: pathlib.Path, sim: NovaSimulator) -> pathlib.Path:
    """/etc/masakari as a deployment tool writes it: masakari.conf with Keystone auth."""
    path.mkdir()
    options = sim.conf_overrides()
    authtoken = {k.split(".", 1)[1]: v for k, v in options.items() if "." in k}
    authtoken.update(sim.authtoken_plugin_options())
    lines = ["[DEFAULT]", *(f"{k} = {v}" for k, v in options.items() if "." not in k)]
    lines += ["[database]", f"connection = sqlite:///{path}/masakari.db"]
    lines += ["[keystone_authtoken]", *(f"{k} = {v}" for k, v in authtoken.items())]
    (path / "masakari.conf").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [str(BIN / "masakari-manage"), "--config-file", str(path / "masakari.conf"), "db", "sync"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return path


def _gunicorn(port: int) -> list[str]:
    # As deployment tools run it: the module path and a bind address, nothing masakari-specific.
    return [str(BIN / "gunicorn"), "--bind", f"127.0.0.1:{port}", "masakari.wsgi.api:application"]


def _uwsgi(port: int) -> list[str]:
    # The settings devstack writes for OpenStack APIs under uWSGI.
    return [
        str(BIN / "uwsgi"),
        "--http-socket", f"127.0.0.1:{port}",
        "--module", "masakari.wsgi.api:application",
        "--virtualenv", sys.prefix,
        "--master", "--enable-threads", "--lazy-apps", "--need-app", "--die-on-term",
        "--processes", "1", "--threads", "2",
    ]  # fmt: skip


@contextlib.contextmanager
def _served(argv: list[str], config_dir: pathlib.Path, log: pathlib.Path) -> Iterator[str]:
    port = int(argv[argv.index("--bind") + 1].rsplit(":", 1)[1]) if "--bind" in argv else None
    if port is None:
        port = int(argv[argv.index("--http-socket") + 1].rsplit(":", 1)[1])
    env = {**os.environ, "OS_MASAKARI_CONFIG_DIR": str(config_dir)}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, cwd=config_dir, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(requests.RequestException):
                if requests.get(url + "/", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _check_api(url: str) -> None:
    admin = {"X-Auth-Token": fake_nova.ADMIN_TOKEN}
    member = {"X-Auth-Token": fake_nova.MEMBER_TOKEN}
    versions = requests.get(url + "/", timeout=10).json()
    assert [v["version"] for v in versions["versions"]] == ["1.3"]
    assert requests.get(url + "/v1/segments", timeout=10).status_code == 401
    assert requests.get(url + "/v1/segments", headers=member, timeout=10).status_code == 403
    body = {"segment": {"name": "seg", "recovery_method": "auto", "service_type": "compute"}}
    resp = requests.post(url + "/v1/segments", json=body, headers=admin, timeout=10)
    assert resp.status_code == 201, resp.text
    seg = resp.json()["segment"]["uuid"]
    host = {"host": {"name": "compute-1", "type": "COMPUTE", "control_attributes": "ssh"}}
    resp = requests.post(url + f"/v1/segments/{seg}/hosts", json=host, headers=admin, timeout=10)
    assert resp.status_code == 201, resp.text  # Nova (the simulator) was asked
    listed = requests.get(url + f"/v1/segments/{seg}/hosts", headers=admin, timeout=10).json()
    assert [h["name"] for h in listed["hosts"]] == ["compute-1"]


SERVERS = [
    pytest.param(_gunicorn, id="gunicorn"),
    pytest.param(_uwsgi, id="uwsgi", marks=needs_uwsgi),
]


@pytest.fixture(scope="module")
def deployer_files(tmp_path_factory) -> dict[str, pathlib.Path]:
    """api-paste.ini and policy.yaml as a deployment has them: the reference's own paste file
    and its generated policy sample when the reference is installed (CI), else what
    ``pip install .`` put under <prefix>/etc/masakari (test_packaging checks it)."""
    if REF_PREFIX is None:
        return {"api-paste.ini": REPO / "masakari" / "api" / "api-paste.ini"}
    policy = tmp_path_factory.mktemp("reference") / "policy.yaml"
    subprocess.run(
        [
            str(REF_PREFIX / "bin" / "oslopolicy-sample-generator"),
            "--namespace", "masakari",
            "--output-file", str(policy),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert "os_masakari_api:segments:index" in policy.read_text()
    return {
        "api-paste.ini": REF_PREFIX / "etc" / "masakari" / "api-paste.ini",
        "policy.yaml": policy,
    }


@pytest.mark.parametrize("server", SERVERS)
def test_served_as_deployment_tools_serve_it(server, sim, deployer_files, tmp_path) -> None:
    config_dir = _config_dir(tmp_path / "etc", sim)
    for name, source in deployer_files.items():
        shutil.copy(source, config_dir / name)  # unchanged
    log = tmp_path / "server.log"
    with _served(server(free_port()), config_dir, log) as url:
        _check_api(url)
    assert "eventlet" not in log.read_text().lower()

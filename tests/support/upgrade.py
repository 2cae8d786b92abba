"""Upgrade in place, the deployment both versions serve: the reference (masakari==22.0.0, in the
virtualenv of MASAKARI_REF_PYTHON) and the project, on one masakari.conf and database, read
through openstacksdk."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import time
from typing import Any

import openstack

from tests.fakes.nova import NovaSimulator
from tests.support.api_process import request

REF_PYTHON = os.environ.get("MASAKARI_REF_PYTHON")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("MASAKARI_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
REFERENCE_SERVER = os.path.join(SHARED, "conformance", "reference_server.py")
BINDIR = os.path.dirname(sys.executable)
REFERENCE_HEAD = "13adff5efb9a"

HOST_DOWN = {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"}


def conf_file(directory: str, sim: NovaSimulator, port: int) -> str:
    """One masakari.conf, as a deployment has it: both versions read it."""
    sections: dict[str, dict[str, Any]] = {
        "DEFAULT": {
            "auth_strategy": "keystone",
            "masakari_api_listen": "127.0.0.1",
            "masakari_api_listen_port": port,
            "masakari_api_workers": 1,
            "log_dir": directory,
            "notification_delay_max": 0,
            "wait_period_after_service_update": 0,
            "wait_period_after_evacuation": 3,
            "verify_interval": 1,
            "engine_poll_interval": 0.1,
            "os_privileged_user_name": "masakari",
            "os_privileged_user_password": "secret",
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": sim.auth_url,
            "os_user_domain_name": "Default",
            "os_project_domain_name": "Default",
            "nova_catalog_admin_info": "compute:nova:publicURL",
        },
        "database": {"connection": f"sqlite:///{directory}/masakari.db"},
        "taskflow": {"connection": f"sqlite:///{directory}/taskflow.db"},
        "keystone_authtoken": {
            "www_authenticate_uri": sim.auth_url,
            "auth_type": "password",
            **sim.authtoken_plugin_options(),
        },
        "oslo_concurrency": {"lock_path": f"{directory}/locks"},
    }
    path = os.path.join(directory, "masakari.conf")
    with open(path, "w") as fh:
        for name, options in sections.items():
            fh.write(f"[{name}]\n")
            fh.writelines(f"{key} = {value}\n" for key, value in options.items())
    return path


class Services:
    """Processes of one version, stopped with SIGTERM as a service manager does."""

    def __init__(self, directory: str, port: int) -> None:
        self.directory = directory
        self.port = port
        self.procs: list[subprocess.Popen[bytes]] = []

    def run(self, name: str, argv: list[str]) -> None:
        with open(os.path.join(self.directory, f"{name}.stderr"), "ab") as log:
            self.procs.append(
                subprocess.Popen(
                    argv,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    cwd=self.directory,  # not this checkout: the reference imports `masakari`
                    start_new_session=True,
                )
            )

    def wait_api(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for proc in self.procs:
                assert proc.poll() is None, f"a service exited: see {self.directory}"
            try:
                if request(self.port, "GET", "/")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"no API on port {self.port}: see {self.directory}")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


def reference(directory: str, conf: str, port: int, sync: bool) -> Services:
    services = Services(directory, port)
    argv = [str(REF_PYTHON), REFERENCE_SERVER, "--config-file", conf, "--port", str(port)]
    services.run("reference", argv + ([] if sync else ["--no-db-sync"]))
    services.wait_api()
    return services


def project(directory: str, conf: str, port: int) -> Services:
    services = Services(directory, port)
    services.run("masakari-api", [os.path.join(BINDIR, "masakari-api"), "--config-file", conf])
    services.run(
        "masakari-engine", [os.path.join(BINDIR, "masakari-engine"), "--config-file", conf]
    )
    services.wait_api()
    return services


def manage(conf: str, *args: str) -> None:
    done = subprocess.run(
        [os.path.join(BINDIR, "masakari-manage"), "--config-file", conf, "db", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def connect(sim: NovaSimulator) -> openstack.connection.Connection:
    return openstack.connection.Connection(
        auth_url=sim.auth_url,
        username="admin",
        password="secret",
        project_name="admin",
        user_domain_name="Default",
        project_domain_name="Default",
        region_name="RegionOne",
        interface="public",
    )


def served(sim: NovaSimulator) -> dict[str, Any]:
    """Everything the API serves, as openstacksdk reads it."""
    conn = connect(sim)
    try:
        ha = conn.instance_ha
        segments = sorted(ha.segments(), key=lambda s: s.uuid)
        notifications = sorted(ha.notifications(), key=lambda n: n.notification_uuid)
        return {
            "segments": [
                (s.uuid, s.name, s.recovery_method, s.service_type, s.description) for s in segments
            ],
            "hosts": sorted(
                (h.uuid, h.name, h.failover_segment_id, h.reserved, h.on_maintenance)
                for s in segments
                for h in ha.hosts(s.uuid)
            ),
            "notifications": [
                (n.notification_uuid, n.type, n.source_host_uuid, n.status, n.generated_time)
                for n in notifications
            ],
            "vmoves": sorted(
                (n.notification_uuid, m.uuid, m.server_id, m.source_host, m.dest_host, m.status)
                for n in notifications
                for m in ha.vmoves(n.notification_uuid)
            ),
        }
    finally:
        conn.close()


def report_failure(sim: NovaSimulator, host: str) -> str:
    """What masakari-hostmonitor sends when a host goes down; the notification's uuid once
    the engine has finished with it."""
    sim.power_off(host)
    conn = connect(sim)
    try:
        ha = conn.instance_ha
        generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
        created = ha.create_notification(
            type="COMPUTE_HOST",
            hostname=host,
            generated_time=generated.isoformat(),
            payload=HOST_DOWN,
        )
        deadline = time.monotonic() + 90
        while (status := ha.get_notification(created.notification_uuid).status) in (
            "new",
            "running",
        ):
            assert time.monotonic() < deadline, status
            time.sleep(0.3)
        assert status == "finished"
        return str(created.notification_uuid)
    finally:
        conn.close()

"""masakari-api and masakari-engine processes in front of the real control plane, as a
deployer runs them: keystone auth on, Nova found through Keystone's catalog, one
masakari.conf, started from the console scripts.

    with Masakari(cloud, tmp_path, {"DEFAULT": {"wait_period_after_service_update": 15}}) as m:
        segment = m.api.post("/segments", json={...}).json()["segment"]
        m.report_host_down("compute-1")
        m.kill_engine()     # kill -9; m.start_engine() starts another

ReferenceMasakari(python, cloud, state, ...) runs the reference, masakari 22.0.0, the same way
from the same conf.
"""

from __future__ import annotations

import configparser
import datetime
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keystoneauth1 import adapter

from masakari.db.database import Database
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.config import PASSWORD

REPO = Path(__file__).resolve().parents[3]
# The conformance suite's runner of the reference: its API and engine in one process.
REFERENCE_SERVER = (
    Path(os.environ.get("MASAKARI_SHARED_DIR", REPO.parent / "shared"))
    / "conformance"
    / "reference_server.py"
)
RECOMMENDED = REPO / "etc" / "masakari" / "masakari.conf.recommended"

# Recoveries on the drills' scale: Nova counts a host down 10 s after its last heartbeat (the
# drills mostly report once it does), a server evacuates in seconds; claims lost in 10 s so
# that a takeover drill is short.
DRILL_TIMINGS: dict[str, Any] = {
    "wait_period_after_service_update": 5,
    "wait_period_after_evacuation": 90,
    "wait_period_after_power_off": 60,
    "wait_period_after_power_on": 60,
    "verify_interval": 1,
    "periodic_fuzzy_delay": 0,
    "notification_delay_max": 0,
    "engine_claim_timeout": 10,
    "engine_claim_renew_interval": 2,
    "engine_claim_margin": 3,
}


def recommended(**more: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The recommended settings (tools/run-aio.sh --recommended), metrics off (each drill's
    engines would share their port), and ``more``."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(RECOMMENDED)
    sections: dict[str, dict[str, Any]] = {name: dict(parser[name]) for name in parser.sections()}
    sections["DEFAULT"] = dict(parser.defaults())
    sections.pop("metrics", None)
    for name, options in more.items():
        sections.setdefault(name, {}).update(options)
    return sections


def conf_text(
    cloud: Cloud,
    port: int,
    db_url: str,
    sections: Mapping[str, Mapping[str, Any]],
    state: Path,
    timings: Mapping[str, Any] = DRILL_TIMINGS,
) -> str:
    """A masakari.conf both the project and the reference (masakari 22.0.0) read."""
    keystone = cloud.layout.url("keystone")
    base: dict[str, dict[str, Any]] = {
        "DEFAULT": {
            "auth_strategy": "keystone",
            "masakari_api_listen": "127.0.0.1",
            "masakari_api_listen_port": port,
            "masakari_api_workers": 2,
            "use_stderr": "true",
            "os_privileged_user_name": "masakari",
            "os_privileged_user_password": PASSWORD,
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": keystone,
            "os_user_domain_name": "Default",
            "os_project_domain_name": "Default",
            "nova_catalog_admin_info": "compute:nova:publicURL",
            # The reference's API and engine share one process (reference_server.py), whose
            # in-process bus this names. The project's API and engine each have a bus of their
            # own then: the wake-up cast is lost and the engine finds a notification by its
            # poll of the database (engine_poll_interval, 0.5 s), as with no transport_url.
            "transport_url": "fake://",
            **timings,
        },
        "database": {"connection": db_url},
        # The reference's host failure flow persists its progress there; the project has none.
        "taskflow": {"connection": f"sqlite:///{state / 'taskflow.db'}"},
        "keystone_authtoken": {
            "www_authenticate_uri": keystone,
            "auth_url": keystone,
            "auth_type": "password",
            "username": "masakari",
            "password": PASSWORD,
            "project_name": "service",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        },
        "oslo_concurrency": {"lock_path": str(state / "locks")},
    }
    for section, options in sections.items():
        base.setdefault(section, {}).update(options)
    lines = []
    for section, options in base.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {value}" for key, value in options.items() if value is not None)
        lines.append("")
    return "\n".join(lines)


class Masakari:
    """One masakari deployment (API, engines) on one database, in front of ``cloud``."""

    def __init__(
        self,
        cloud: Cloud,
        state: Path,
        sections: Mapping[str, Mapping[str, Any]] | None = None,
        db_url: str | None = None,
        port: int | None = None,
        timings: Mapping[str, Any] = DRILL_TIMINGS,
    ) -> None:
        self.cloud = cloud
        self.state = state
        self.port = port or cloud.layout.port("masakari")
        self.db_url = db_url or f"sqlite:///{state / 'masakari.db'}"
        self.conf = state / "masakari.conf"
        state.mkdir(parents=True, exist_ok=True)
        self.timings = timings
        self.sections: dict[str, dict[str, Any]] = {}
        self.reconfigure(sections or {})
        self.api_proc: subprocess.Popen[bytes] | None = None
        self.engines: list[subprocess.Popen[bytes]] = []
        self._db: Database | None = None

    def reconfigure(self, sections: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge ``sections`` into masakari.conf: the processes started from now on read it."""
        for name, options in sections.items():
            self.sections.setdefault(name, {}).update(options)
        self.conf.write_text(
            conf_text(self.cloud, self.port, self.db_url, self.sections, self.state, self.timings)
        )

    # --- processes --------------------------------------------------------------------------

    def start(self, engines: int = 1) -> Masakari:
        self._run("masakari.cmd.manage", "db", "sync")
        self.api_proc = self._spawn("masakari.cmd.api", "api")
        for _ in range(engines):
            self.start_engine()
        wait_for("masakari-api", lambda: self.api.get("/segments").ok, 60)
        return self

    def start_engine(self) -> subprocess.Popen[bytes]:
        proc = self._spawn("masakari.cmd.engine", f"engine-{len(self.engines) + 1}")
        self.engines.append(proc)
        return proc

    def kill_engine(self, index: int = 0, sig: int = signal.SIGKILL) -> None:
        proc = self.engines[index]
        os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            proc.wait(10)

    def stop(self) -> None:
        """Every process at once, the engines SIGTERM and the API SIGINT, then SIGKILL after
        15 s: a drill's database is thrown away, so nothing waits for a graceful end."""
        running = [p for p in [*self.engines, self.api_proc] if p is not None and p.poll() is None]
        for proc in running:
            # The API's graceful stop (SIGTERM) waits for open connections, idle kept-alive
            # ones too, up to gunicorn's graceful_timeout (10 s); SIGINT stops it at once.
            quick = proc is self.api_proc
            os.killpg(proc.pid, signal.SIGINT if quick else signal.SIGTERM)
        for proc in running:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if self._db is not None:
            self._db.dispose()

    def __enter__(self) -> Masakari:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, module: str, name: str) -> subprocess.Popen[bytes]:
        with open(self.state / f"{name}.log", "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", module, "--config-file", str(self.conf)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _run(self, module: str, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", module, "--config-file", str(self.conf), *args],
            check=True,
            capture_output=True,
        )

    # --- the API ----------------------------------------------------------------------------

    @property
    def api(self) -> adapter.Adapter:
        """masakari's API as the admin (a Keystone token, as the monitors and clients send)."""
        if "_api" not in self.__dict__:
            self.__dict__["_api"] = adapter.Adapter(
                self.cloud.admin_session(),
                endpoint_override=f"http://127.0.0.1:{self.port}/v1",
                raise_exc=False,
            )
        return self.__dict__["_api"]  # type: ignore[no-any-return]

    def segment(
        self,
        name: str,
        hosts: list[str],
        recovery_method: str = "auto",
        reserved: tuple[str, ...] = (),
    ) -> str:
        """A segment with ``hosts`` (those in ``reserved`` reserved); its uuid."""
        answer = self.api.post(
            "/segments",
            json={
                "segment": {
                    "name": name,
                    "recovery_method": recovery_method,
                    "service_type": "COMPUTE",
                }
            },
        )
        assert answer.ok, answer.text
        uuid = str(answer.json()["segment"]["uuid"])
        for host in hosts:
            created = self.api.post(
                f"/segments/{uuid}/hosts",
                json={
                    "host": {
                        "name": host,
                        "type": "COMPUTE",
                        "control_attributes": "SSH",
                        "reserved": host in reserved,
                    }
                },
            )
            assert created.ok, created.text
        return uuid

    def notify(self, kind: str, hostname: str, payload: dict[str, Any]) -> str:
        """A notification as masakari-monitors sends it (naive generated_time); its uuid."""
        answer = self.api.post(
            "/notifications",
            json={
                "notification": {
                    "type": kind,
                    "hostname": hostname,
                    "generated_time": datetime.datetime.utcnow().isoformat(),
                    "payload": payload,
                }
            },
        )
        assert answer.ok, answer.text
        return str(answer.json()["notification"]["notification_uuid"])

    def report_host_down(self, host: str, host_status: str = "NORMAL") -> str:
        return self.notify(
            "COMPUTE_HOST",
            host,
            {"event": "STOPPED", "cluster_status": "OFFLINE", "host_status": host_status},
        )

    def notification(self, uuid: str) -> dict[str, Any]:
        answer = self.api.get(f"/notifications/{uuid}")
        assert answer.ok, answer.text
        return dict(answer.json()["notification"])

    def wait_notification(
        self,
        uuid: str,
        statuses: tuple[str, ...] = ("finished",),
        timeout: float = 300,
        ends: tuple[str, ...] = ("finished", "error", "failed", "ignored"),
    ) -> dict[str, Any]:
        """The notification once in one of ``statuses``; an AssertionError as soon as it is in
        another of ``ends`` (leave "error" out to wait through a retry)."""

        def ended() -> dict[str, Any] | None:
            found = self.notification(uuid)
            if found["status"] in ends and found["status"] not in statuses:
                raise AssertionError(f"notification {uuid} ended {found['status']}")
            return found if found["status"] in statuses else None

        return dict(wait_for(f"notification {uuid} {statuses}", ended, timeout, 1))

    @property
    def db(self) -> Database:
        if self._db is None:
            self._db = Database.from_url(self.db_url)
        return self._db


class ReferenceMasakari(Masakari):
    """The reference (masakari 22.0.0) in front of ``cloud`` from the same masakari.conf: API
    and engine in one process (reference_server.py), run by ``python``, the reference's
    virtualenv's (as tests/upgrade runs it, MASAKARI_REF_PYTHON)."""

    def __init__(
        self,
        python: Path,
        cloud: Cloud,
        state: Path,
        sections: Mapping[str, Mapping[str, Any]] | None = None,
        db_url: str | None = None,
        port: int | None = None,
        timings: Mapping[str, Any] = DRILL_TIMINGS,
    ) -> None:
        super().__init__(cloud, state, sections, db_url, port, timings)
        self.python = python

    def start(self, engines: int = 1) -> Masakari:
        """The one process (``engines`` is the project's notion: the reference has one engine,
        in it); it migrates both databases before it serves."""
        argv = [str(self.python), str(REFERENCE_SERVER), "--config-file", str(self.conf)]
        with open(self.state / "reference.log", "ab") as log:
            self.api_proc = subprocess.Popen(
                [*argv, "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # Not this checkout: the reference imports its own `masakari`.
                cwd=self.state,
                start_new_session=True,
            )
        proc = self.api_proc

        def serving() -> bool:
            assert proc.poll() is None, f"the reference exited: see {self.state}/reference.log"
            return bool(self.api.get("/segments").ok)

        wait_for("reference masakari", serving, 90)
        return self

    def start_engine(self) -> subprocess.Popen[bytes]:
        raise NotImplementedError("the reference's engine runs in its API's process")

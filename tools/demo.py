"""A one-minute demo of masakari: a compute host fails and its instances are evacuated.

Runs from a checkout (tools/demo.sh sets up the virtualenv). Everything is local and
temporary: the project's Nova simulator (tests/fakes/nova.py, with its fake Keystone) stands
in for the cloud, masakari-api and masakari-engine run on a SQLite database, and the host
failure is reported the way masakari-monitors reports it. The recovery is printed as it
happens, from the API a client would read (the notification's recovery_workflow_details at
microversion 1.1 and its vmoves at 1.3).

Exit status 0 when the notification ends ``finished`` with every instance running on
another host, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import requests

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.nova import NovaSimulator  # noqa: E402

FAILED_HOST = "compute-1"
HOSTS = ("compute-1", "compute-2", "compute-3")
INSTANCES = 4
# The engine's timers, shortened so that the whole recovery fits in a few seconds; the
# defaults (minutes) are meant for real clouds.
ENGINE_OPTIONS = {
    "notification_delay_max": 0,
    "wait_period_after_service_update": 1,
    "wait_period_after_evacuation": 30,
    "verify_interval": 1,
    "periodic_fuzzy_delay": 0,
}
FINAL = ("finished", "failed", "error", "ignored")


class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> str:
        return f"[{time.monotonic() - self.start:5.1f}s]"


def say(text: str = "") -> None:
    print(text, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_conf(state: pathlib.Path, sim: NovaSimulator, port: int) -> pathlib.Path:
    conf = state / "masakari.conf"
    lines = [
        "[DEFAULT]",
        "auth_strategy = noauth2",
        f"state_path = {state}",
        "masakari_api_listen = 127.0.0.1",
        f"masakari_api_listen_port = {port}",
        "masakari_api_workers = 1",
        *(f"{key} = {value}" for key, value in ENGINE_OPTIONS.items()),
        # Nova: the simulator, reached through its fake Keystone.
        f"os_privileged_user_auth_url = {sim.auth_url}",
        "os_privileged_user_name = masakari",
        "os_privileged_user_password = secret",
        "os_privileged_user_tenant = service",
        "nova_catalog_admin_info = compute:nova:publicURL",
        "[database]",
        f"connection = sqlite:///{state}/masakari.db",
    ]
    conf.write_text("\n".join(lines) + "\n")
    return conf


@contextlib.contextmanager
def service(argv: list[str], log: pathlib.Path) -> Iterator[subprocess.Popen[bytes]]:
    """A masakari process, its output in ``log``; SIGTERM (then SIGKILL) on the way out."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.http = requests.Session()

    def call(self, method: str, path: str, body: Any = None, version: str = "1.0") -> Any:
        resp = self.http.request(
            method,
            self.base + path,
            json=body,
            headers={"OpenStack-API-Version": f"instance-ha {version}"},
            timeout=10,
        )
        if resp.status_code >= 400:
            raise SystemExit(f"{method} {path} answered {resp.status_code}: {resp.text}")
        return resp.json() if resp.content else None

    def wait_ready(self, procs: list[subprocess.Popen[bytes]], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in procs:
                if proc.poll() is not None:
                    raise SystemExit(f"{proc.args[0]} exited with {proc.returncode}")
            with contextlib.suppress(requests.RequestException):
                if self.http.get(self.base + "/", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise SystemExit("masakari-api did not answer in time")


def build_cloud(sim: NovaSimulator) -> dict[str, str]:
    """Three compute hosts; HA-enabled instances on the one that will fail. Returns id -> name."""
    for host in HOSTS:
        sim.add_service(host)
    names = {}
    for i in range(1, INSTANCES + 1):
        name = f"vm-{i}"
        names[sim.add_server(host=FAILED_HOST, name=name, metadata={"HA_Enabled": "True"})] = name
    sim.add_server(host="compute-2", name="vm-other", metadata={"HA_Enabled": "True"})
    return names


def run(state: pathlib.Path, summary: pathlib.Path | None) -> int:
    bindir = pathlib.Path(sys.executable).parent
    clock = Clock()
    # Evacuations take 0.5-3 s each in the simulator, as rebuilds on a real host take a while;
    # a stopped host is "down" for Nova 1 s after its last heartbeat.
    with NovaSimulator(service_down_time=1, evacuate_delay=(0.5, 3.0)) as sim:
        names = build_cloud(sim)
        port = free_port()
        conf = write_conf(state, sim, port)
        say(f"{clock()} Nova simulator with Keystone at {sim.base_url}: hosts {', '.join(HOSTS)};")
        say(f"        {', '.join(names.values())} run on {FAILED_HOST} (metadata HA_Enabled=True)")
        subprocess.run(
            [str(bindir / "masakari-manage"), "--config-file", str(conf), "db", "sync"],
            check=True,
            capture_output=True,
        )
        say(f"{clock()} database {state}/masakari.db created; starting masakari-api and -engine")
        api = Api(port)
        with (
            service(
                [str(bindir / "masakari-engine"), "--config-file", str(conf)],
                state / "masakari-engine.log",
            ) as engine,
            service(
                [str(bindir / "masakari-api"), "--config-file", str(conf)],
                state / "masakari-api.log",
            ) as api_proc,
        ):
            api.wait_ready([engine, api_proc])
            say(f"{clock()} API on {api.base} (logs in {state})")
            segment = api.call(
                "POST",
                "/v1/segments",
                {"segment": {"name": "demo", "recovery_method": "auto", "service_type": "compute"}},
            )["segment"]["uuid"]
            for host in HOSTS:
                api.call(
                    "POST",
                    f"/v1/segments/{segment}/hosts",
                    {"host": {"name": host, "type": "COMPUTE", "control_attributes": "ssh"}},
                )
            say(f"{clock()} segment 'demo' (recovery_method auto) with hosts {', '.join(HOSTS)}")

            sim.power_off(FAILED_HOST)
            say(f"{clock()} {FAILED_HOST} loses power; Nova sees its nova-compute down")
            time.sleep(sim.service_down_time + 0.5)
            notification = api.call(
                "POST",
                "/v1/notifications",
                {
                    "notification": {
                        "type": "COMPUTE_HOST",
                        "hostname": FAILED_HOST,
                        "generated_time": datetime.datetime.now(datetime.UTC)
                        .replace(tzinfo=None)
                        .isoformat(timespec="seconds"),
                        "payload": {
                            "event": "STOPPED",
                            "host_status": "NORMAL",
                            "cluster_status": "OFFLINE",
                        },
                    }
                },
            )["notification"]
            nid = notification["notification_uuid"]
            reported = time.monotonic()
            say(
                f"{clock()} masakari-monitors reports it: POST /v1/notifications COMPUTE_HOST "
                f"STOPPED (notification {nid})"
            )
            status, last_running = watch(api, sim, clock, nid, names)
            elapsed = (last_running or time.monotonic()) - reported
        final_hosts = {names[sid]: sim.server(sid)["OS-EXT-SRV-ATTR:host"] for sid in names}
        final_status = {names[sid]: sim.server(sid)["status"] for sid in names}
    moved = all(host != FAILED_HOST for host in final_hosts.values())
    running = all(s == "ACTIVE" for s in final_status.values())
    say()
    say(f"Notification {nid}: {status}.")
    for name in names.values():
        say(f"  {name}: {FAILED_HOST} -> {final_hosts[name]} ({final_status[name]})")
    if status == "finished" and moved and running:
        say(f"Every instance runs again {elapsed:.1f} s after the failure was reported.")
    say("Stopped masakari-api, masakari-engine and the simulator.")
    if summary is not None:
        summary.write_text(
            json.dumps(
                {
                    "status": status,
                    "hosts": final_hosts,
                    "servers": final_status,
                    "seconds_to_last_running": round(elapsed, 1),
                }
            )
        )
    return 0 if status == "finished" and moved and running else 1


def readable(message: str, names: dict[str, str]) -> str:
    """The engine's step messages name instances by uuid; the demo's have short names."""
    for sid, name in names.items():
        message = message.replace(sid, name)
    return message


def watch(
    api: Api, sim: NovaSimulator, clock: Clock, nid: str, names: dict[str, str]
) -> tuple[str, float | None]:
    """Print each new step and each instance's move until the notification ends."""
    seen_steps: set[tuple[str, str]] = set()
    seen_moves: dict[str, str] = {}
    running: dict[str, bool] = {}
    last_running: float | None = None
    status = "new"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body = api.call("GET", f"/v1/notifications/{nid}", version="1.1")["notification"]
        if body["status"] != status:
            status = body["status"]
            say(f"{clock()} notification status: {status}")
        for task in body.get("recovery_workflow_details") or []:
            for detail in task.get("progress_details") or []:
                key = (task["name"], detail["message"])
                if key not in seen_steps:
                    seen_steps.add(key)
                    say(f"{clock()}   {task['name']}: {readable(detail['message'], names)}")
        for move in api.call("GET", f"/v1/notifications/{nid}/vmoves", version="1.3")["vmoves"]:
            state = f"{move['status']} {move['source_host']} -> {move['dest_host'] or '?'}"
            if seen_moves.get(move["instance_uuid"]) != state:
                seen_moves[move["instance_uuid"]] = state
                name = names.get(move["instance_uuid"], move["instance_uuid"])
                say(f"{clock()}   move {name}: {state}")
        for sid, name in names.items():
            server = sim.server(sid)
            up = server["OS-EXT-SRV-ATTR:host"] != FAILED_HOST and server["status"] == "ACTIVE"
            if up and not running.get(sid):
                running[sid] = True
                last_running = time.monotonic()
                say(f"{clock()}   Nova: {name} ACTIVE on {server['OS-EXT-SRV-ATTR:host']}")
        if status in FINAL:
            return status, last_running
        time.sleep(0.3)
    return status, last_running


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", help="keep the conf, database and logs here")
    parser.add_argument("--summary", help="write the outcome as JSON to this file")
    args = parser.parse_args(argv)
    summary = pathlib.Path(args.summary) if args.summary else None
    if args.state_dir:
        state = pathlib.Path(args.state_dir).resolve()
        state.mkdir(parents=True, exist_ok=True)
        return run(state, summary)
    with tempfile.TemporaryDirectory(prefix="masakari-demo-") as tmp:
        return run(pathlib.Path(tmp), summary)


if __name__ == "__main__":
    sys.exit(main())

"""A one-minute demo of masakari: a compute host fails and its instances are evacuated.

Runs from a checkout (tools/demo.sh sets up the virtualenv). Everything is local and
temporary: the project's Nova simulator (tests/fakes/nova.py, with its fake Keystone) stands
in for the cloud, masakari-api and masakari-engine run on a SQLite database, and the host
failure is reported the way masakari-monitors reports it. The recovery is printed as it
happens, from the API a client would read (the notification's recovery_workflow_details at
microversion 1.1 and its vmoves at 1.3).

With ``--recommended`` the demo runs with etc/masakari/masakari.conf.recommended merged into
its configuration, and goes on: three more hosts fail at once, the mass-failure guard
recovers up to half the segment and holds the rest, the operator releases the held report,
and the first recovery's timeline page is drawn.

Exit status 0 when the notification ends ``finished`` with every instance running on
another host (and, with ``--recommended``, the released report too), 1 otherwise.
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
# With --recommended: three more hosts, which fail together after compute-1.
STORM_HOSTS = ("compute-4", "compute-5", "compute-6")
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


def run(state: pathlib.Path, summary: pathlib.Path | None, recommended: bool = False) -> int:
    bindir = pathlib.Path(sys.executable).parent
    clock = Clock()
    storm: dict[str, Any] = {}
    timeline: pathlib.Path | None = None
    hosts = HOSTS + STORM_HOSTS if recommended else HOSTS
    # Evacuations take 0.5-3 s each in the simulator, as rebuilds on a real host take a while;
    # a stopped host is "down" for Nova 1 s after its last heartbeat.
    with NovaSimulator(service_down_time=1, evacuate_delay=(0.5, 3.0)) as sim:
        names = build_cloud(sim)
        port = free_port()
        conf = write_conf(state, sim, port)
        metrics_port = free_port()
        if recommended:
            for host in STORM_HOSTS:
                sim.add_service(host)
                sim.add_server(host=host, name=f"vm-{host}", metadata={"HA_Enabled": "True"})
            with open(conf, "a", encoding="utf-8") as fh:
                # Free ports for this run, kept by the merge (which adds what is not set).
                fh.write(f"[metrics]\napi_port = {free_port()}\nengine_port = {metrics_port}\n")
            added = subprocess.run(
                [
                    str(bindir / "masakari-manage"),
                    "config",
                    "recommended",
                    "--merge",
                    str(conf),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            say(f"{clock()} the recommended settings, merged into {conf}:")
            for line in added.splitlines()[1:]:
                say(f"       {line}")
        say(f"{clock()} Nova simulator with Keystone at {sim.base_url}: hosts {', '.join(hosts)};")
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
            for host in hosts:
                api.call(
                    "POST",
                    f"/v1/segments/{segment}/hosts",
                    {"host": {"name": host, "type": "COMPUTE", "control_attributes": "ssh"}},
                )
            say(f"{clock()} segment 'demo' (recovery_method auto) with hosts {', '.join(hosts)}")

            sim.power_off(FAILED_HOST)
            say(f"{clock()} {FAILED_HOST} loses power; Nova sees its nova-compute down")
            time.sleep(sim.service_down_time + 0.5)
            nid = report_failure(api, FAILED_HOST, "1.4" if recommended else "1.0")[
                "notification_uuid"
            ]
            reported = time.monotonic()
            say(
                f"{clock()} masakari-monitors reports it: POST /v1/notifications COMPUTE_HOST "
                f"STOPPED (notification {nid})"
            )
            status, last_running = watch(api, sim, clock, nid, names)
            elapsed = (last_running or time.monotonic()) - reported
            if recommended:
                storm = show_storm(api, sim, clock, conf, bindir, metrics_port)
                timeline = state / "timeline.html"
                subprocess.run(
                    [
                        str(bindir / "masakari-manage"),
                        "--config-file",
                        str(conf),
                        "notification",
                        "show",
                        nid,
                        "--html",
                        str(timeline),
                    ],
                    check=True,
                    capture_output=True,
                )
                say(f"{clock()} the first recovery's timeline page: {timeline.as_uri()}")
                say("        (masakari-manage notification show UUID --html FILE draws it)")
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
                    **({"storm": storm} if recommended else {}),
                    **({"timeline": str(timeline)} if timeline is not None else {}),
                }
            )
        )
    ok = status == "finished" and moved and running
    if recommended:
        ok = ok and storm.get("released_status") == "finished"
    return 0 if ok else 1


def report_failure(api: Api, host: str, version: str = "1.4") -> dict[str, Any]:
    """masakari-monitors' report of a powered-off host."""
    body = {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": host,
            "generated_time": datetime.datetime.now(datetime.UTC)
            .replace(tzinfo=None)
            .isoformat(timespec="seconds"),
            "payload": {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"},
        }
    }
    return dict(api.call("POST", "/v1/notifications", body, version=version)["notification"])


def wait_final(api: Api, nid: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = str(
            api.call("GET", f"/v1/notifications/{nid}", version="1.4")["notification"]["status"]
        )
        if status in FINAL or time.monotonic() > deadline:
            return status
        time.sleep(0.3)


def show_storm(
    api: Api,
    sim: NovaSimulator,
    clock: Clock,
    conf: pathlib.Path,
    bindir: pathlib.Path,
    metrics_port: int,
) -> dict[str, Any]:
    """Three more hosts of the six fail at once: the mass-failure guard lets recoveries through
    up to half the segment and holds the rest until an operator releases them."""
    say()
    say(f"{clock()} a storm: {', '.join(STORM_HOSTS)} drop at once (a switch, a partition?)")
    for host in STORM_HOSTS:
        sim.power_off(host)
    time.sleep(sim.service_down_time + 0.5)
    reports = {host: report_failure(api, host) for host in STORM_HOSTS}
    held = [h for h, n in reports.items() if n["status"] == "held"]
    for host, body in reports.items():
        reason = f" ({body['hold_reason']})" if body.get("hold_reason") else ""
        say(f"{clock()}   {host}: {body['status']}{reason}")
    for host, body in reports.items():
        if host not in held:
            wait_final(api, body["notification_uuid"])
    with contextlib.suppress(requests.RequestException):
        scrape = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
        gauge = next(
            (ln for ln in scrape.splitlines() if ln.startswith("masakari_held_notifications ")),
            None,
        )
        if gauge:
            say(f"{clock()}   the engine's metrics on loopback say: {gauge}")
    released_status = None
    for host in held:
        nid = reports[host]["notification_uuid"]
        say(f"{clock()} the operator checks {host} is really off and releases its report:")
        say(f"        masakari-manage notification release {nid}")
        subprocess.run(
            [str(bindir / "masakari-manage"), "--config-file", str(conf)]
            + ["notification", "release", nid],
            check=True,
            capture_output=True,
        )
        released_status = wait_final(api, nid)
        say(f"{clock()}   {host}'s notification: {released_status}")
    return {
        "held": held,
        "recovered": [h for h in STORM_HOSTS if h not in held],
        "released_status": released_status,
    }


def readable(message: str, names: dict[str, str]) -> str:
    """The engine's step messages name instances by uuid; the demo's have short names."""
    for sid, name in names.items():
        message = message.replace(sid, name)
    return message


def watch(
    api: Api,
    sim: NovaSimulator,
    clock: Clock,
    nid: str,
    names: dict[str, str],
    failed_host: str = FAILED_HOST,
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
            up = server["OS-EXT-SRV-ATTR:host"] != failed_host and server["status"] == "ACTIVE"
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
    parser.add_argument(
        "--recommended",
        action="store_true",
        help="with the recommended settings: also a storm held by the guard and released, "
        "and the timeline page (kept in --state-dir, default ./demo-state)",
    )
    args = parser.parse_args(argv)
    summary = pathlib.Path(args.summary) if args.summary else None
    if args.state_dir or args.recommended:
        # The timeline page must outlive the demo: its state is kept.
        state = pathlib.Path(args.state_dir or "demo-state").resolve()
        state.mkdir(parents=True, exist_ok=True)
        for old in state.glob("masakari.*"):
            old.unlink()
        return run(state, summary, args.recommended)
    with tempfile.TemporaryDirectory(prefix="masakari-demo-") as tmp:
        return run(pathlib.Path(tmp), summary)


if __name__ == "__main__":
    sys.exit(main())

"""API throughput and latency: masakari-api, and optionally the reference, in the same run.

    python benchmarks/api_bench.py [--reference-venv /work/ref-venv] [--requests 400]
                                   [--concurrency 4] [--metrics]

Each implementation gets a fresh SQLite database and auth_strategy = noauth2 (no Keystone
round trip in the numbers), one API worker, and its engine (the project's masakari-engine;
the reference's runs in the same process as its API, through the conformance harness's
reference_server.py). The reference's random pause before recording a notification is
switched off (notification_delay_max = 0) so that both do the same work.

Scenarios: GET /v1/segments with 1, 100 and 1000 rows, GET one segment, POST a segment,
POST a notification. Printed: requests/s, p50 and p99 latency (ms), and with a reference
the ratio project/reference of requests/s. With --metrics the project runs twice, with
[metrics] enabled off and on, and the ratio on/off is printed instead.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_SERVER = os.environ.get(
    "MASAKARI_REFERENCE_SERVER", "/work/shared/conformance/reference_server.py"
)
HEADERS = {"Content-Type": "application/json", "X-User-Id": "bench", "X-Project-Id": "bench"}
SEGMENTS = 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """One keep-alive connection."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(
        self, method: str, path: str, body: Any = None, version: str = "1.0"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {**HEADERS, "OpenStack-API-Version": f"instance-ha {version}"}
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
        text = resp.read()
        return resp.status, json.loads(text) if text else None


class Server:
    def __init__(self, name: str, reference_venv: str | None, extra: str = "") -> None:
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix=f"masakari-bench-{name}-")
        self.port = free_port()
        self.db_path = os.path.join(self.tmp, "masakari.db")
        self.conf = os.path.join(self.tmp, "masakari.conf")
        with open(self.conf, "w") as fh:
            fh.write(
                "[DEFAULT]\n"
                "auth_strategy = noauth2\n"
                "transport_url = fake://\n"
                "masakari_api_listen = 127.0.0.1\n"
                f"masakari_api_listen_port = {self.port}\n"
                "masakari_api_workers = 1\n"
                "notification_delay_max = 0\n"
                "debug = false\n"
                "[wsgi]\napi_paste_config =\n"
                f"[database]\nconnection = sqlite:///{self.db_path}\n"
                f"[taskflow]\nconnection = sqlite:///{self.tmp}/taskflow.db\n"
                f"[oslo_concurrency]\nlock_path = {self.tmp}\n"
                f"{extra}"
            )
        self.procs: list[subprocess.Popen[bytes]] = []
        log = open(os.path.join(self.tmp, "server.log"), "wb")
        if reference_venv is None:
            bindir = os.path.dirname(sys.executable)
            subprocess.run(
                [os.path.join(bindir, "masakari-manage"), "--config-file", self.conf, "db", "sync"],
                check=True,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for prog in ("masakari-api", "masakari-engine"):
                self.procs.append(self._start([os.path.join(bindir, prog)], log))
        else:
            python = os.path.join(reference_venv, "bin", "python")
            cmd = [python, REFERENCE_SERVER, "--port", str(self.port)]
            self.procs.append(self._start(cmd, log))
        self._wait()

    def _start(self, argv: list[str], log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv + ["--config-file", self.conf],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.tmp,
        )

    def _wait(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if Client(self.port).call("GET", "/v1/segments?limit=1")[0] == 200:
                    return
            except OSError:
                pass
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        with open(os.path.join(self.tmp, "server.log"), errors="replace") as fh:
            tail = fh.read()[-3000:]
        self.stop()
        raise RuntimeError(f"{self.name} did not start:\n{tail}")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)


def seed(server: Server) -> dict[str, str]:
    """1000 segments (the first one disabled, holding a host), for lists and shows."""
    client = Client(server.port)
    status, body = client.call(
        "POST",
        "/v1/segments",
        {
            "segment": {
                "name": "bench-0",
                "recovery_method": "auto",
                "service_type": "compute",
                "enabled": False,
            }
        },
        version="1.2",
    )
    assert status == 201, body
    first = body["segment"]["uuid"]
    for i in range(1, SEGMENTS):
        segment = {"name": f"bench-{i}", "recovery_method": "auto", "service_type": "compute"}
        client.call("POST", "/v1/segments", {"segment": segment})
    # The host goes straight into the database: creating it through the API needs Nova.
    with sqlite3.connect(server.db_path) as conn:
        conn.execute(
            "INSERT INTO hosts (created_at, deleted, uuid, name, reserved, type, "
            "control_attributes, failover_segment_id, on_maintenance) "
            "VALUES (datetime('now'), 0, ?, 'bench-host', 0, 'COMPUTE', '', ?, 0)",
            (str(uuid.uuid4()), first),
        )
    return {"segment": first}


Request = Callable[[int], tuple[str, str, Any]]


def scenarios(ids: dict[str, str]) -> list[tuple[str, Request, int]]:
    """(name, request builder taking a sequence number, expected status)."""
    run = uuid.uuid4().hex[:6]

    def notification(i: int) -> tuple[str, str, Any]:
        body = {
            "notification": {
                "type": "PROCESS",
                "hostname": "bench-host",
                "generated_time": f"2026-01-01T00:00:00.{i:06d}",
                "payload": {"event": "STOPPED", "process_name": f"p-{run}-{i}"},
            }
        }
        return "POST", "/v1/notifications", body

    return [
        ("GET list, 1 row", lambda i: ("GET", "/v1/segments?limit=1", None), 200),
        ("GET list, 100 rows", lambda i: ("GET", "/v1/segments?limit=100", None), 200),
        ("GET list, 1000 rows", lambda i: ("GET", "/v1/segments?limit=1000", None), 200),
        ("GET one", lambda i: ("GET", f"/v1/segments/{ids['segment']}", None), 200),
        (
            "POST segment",
            lambda i: (
                "POST",
                "/v1/segments",
                {
                    "segment": {
                        "name": f"new-{run}-{i}",
                        "recovery_method": "auto",
                        "service_type": "compute",
                    }
                },
            ),
            201,
        ),
        ("POST notification", notification, 202),
    ]


def measure(
    port: int, build: Request, expected: int, requests: int, concurrency: int
) -> dict[str, Any]:
    clients = [Client(port) for _ in range(concurrency)]
    counter = iter(range(requests))
    latencies: list[float] = []
    unexpected: list[int] = []

    def worker(client: Client) -> None:
        for i in counter:
            method, path, body = build(i)
            start = time.perf_counter()
            status, _ = client.call(method, path, body)
            latencies.append(time.perf_counter() - start)
            if status != expected:
                unexpected.append(status)

    # Warm-up: caches, connection setup, lazy imports.
    for i in range(min(20, requests)):
        clients[0].call(*build(requests + i))
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, clients))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "rps": len(ordered) / elapsed,
        "p50": statistics.median(ordered) * 1000,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "errors": len(unexpected),
        "unexpected": dict(collections.Counter(unexpected)),
    }


def run(
    name: str, reference_venv: str | None, requests: int, concurrency: int, extra: str = ""
) -> dict[str, Any]:
    print(f"starting {name}...", file=sys.stderr)
    server = Server(name, reference_venv, extra)
    try:
        ids = seed(server)
        results = {}
        for label, build, expected in scenarios(ids):
            count = max(requests // 4, 50) if "1000" in label else requests
            results[label] = measure(server.port, build, expected, count, concurrency)
            print(f"  {label}: {results[label]['rps']:.0f} req/s", file=sys.stderr)
        return results
    finally:
        server.stop()


def best(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per scenario, the run with more requests/s."""
    return {label: max(a[label], b[label], key=lambda r: r["rps"]) for label in a}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-venv", help="virtualenv of the reference (masakari 22.0.0)")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--metrics", action="store_true", help="compare the project with metrics off and on"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --metrics: alternate off and on this many times, keep each one's best",
    )
    args = parser.parse_args()
    project = run("project", None, args.requests, args.concurrency)
    reference = None
    if args.metrics:
        on = "[metrics]\nenabled = true\n"
        reference = project
        project = run("project+metrics", None, args.requests, args.concurrency, on)
        # On a shared machine one run's noise dwarfs the difference: best of several.
        for _ in range(args.rounds - 1):
            reference = best(reference, run("project", None, args.requests, args.concurrency))
            project = best(
                project, run("project+metrics", None, args.requests, args.concurrency, on)
            )
    elif args.reference_venv:
        reference = run("reference", args.reference_venv, args.requests, args.concurrency)
    header = f"{'scenario':<22}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
    if reference:
        base = "off" if args.metrics else "ref"
        header += f"{base + ' req/s':>11}{base + ' p50':>9}{base + ' p99':>9}{'ratio':>8}"
    print(header)
    for label, mine in project.items():
        line = f"{label:<22}{mine['rps']:>9.0f}{mine['p50']:>9.1f}{mine['p99']:>9.1f}"
        if reference:
            ref = reference[label]
            line += f"{ref['rps']:>11.0f}{ref['p50']:>9.1f}{ref['p99']:>9.1f}"
            line += f"{mine['rps'] / ref['rps']:>7.2f}x"
        if mine["errors"]:
            line += f"  (project: unexpected statuses {mine['unexpected']})"
        if reference and reference[label]["errors"]:
            line += f"  (reference: unexpected statuses {reference[label]['unexpected']})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

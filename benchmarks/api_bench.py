"""API throughput and latency: masakari-api and, in the same run, the reference.

    python -m benchmarks.api_bench [--reference-venv .ref-venv] [--auth keystone,noauth2]
                                   [--workers 1,4] [--requests 400] [--concurrency 4]
                                   [--rows 1000] [--no-ceiling] [--markdown] [--metrics]
                                   [--repeats 1]

Each (implementation, auth strategy, worker count) gets a fresh SQLite database and its
engine (the project's masakari-engine; the reference's runs in the same process as its API,
through the conformance harness's reference_server.py, which serves with 1 worker whatever
is asked). ``keystone`` is the deployers' setting: keystonemiddleware validates the token
against the Keystone of the Nova simulator (tests/fakes/nova.py), caching it in process as
it does without memcached; POST host asks the simulator's Nova for the compute service.

Scenarios, the issue's table: GET /v1/segments (3 rows), GET one host, GET the hosts of a
segment holding ``--rows`` hosts, GET ``--rows`` notifications, POST host (Nova check),
POST notification (the reference with its default random 0-5 s pause, so fewer requests:
``--slow-requests``). Rows beyond the API's own are bulk-inserted in the database.

The ceiling: the same gunicorn server and settings (benchmarks/wsgi_ceiling.py) serving
a WSGI application that answers a fixed small JSON body, no middleware: what no request
of the API can beat.

Printed per run: requests/s, p50 and p99 (ms); with the reference, the ratio of
requests/s (project / reference) and of p50 (reference / project). With ``--repeats``, the
reference and the project runs alternate and each figure is the median of the repeats;
the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
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
from collections.abc import Callable, Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests.fakes.nova import ADMIN_TOKEN, NovaSimulator  # noqa: E402

WARMUP = 20
REFERENCE_SERVER = os.environ.get(
    "MASAKARI_REFERENCE_SERVER", "/work/shared/conformance/reference_server.py"
)
NOAUTH_HEADERS = {"X-User-Id": "bench", "X-Project-Id": "bench"}
KEYSTONE_HEADERS = {"X-Auth-Token": ADMIN_TOKEN}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """One keep-alive connection."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port = port
        self.headers = {"Content-Type": "application/json", **headers}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(
        self, method: str, path: str, body: Any = None, version: str = "1.0"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "OpenStack-API-Version": f"instance-ha {version}"}
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
        text = resp.read()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text


def write_conf(path: str, sections: dict[str, dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        for section, options in sections.items():
            fh.write(f"[{section}]\n")
            for key, value in options.items():
                fh.write(f"{key} = {value}\n")


class Server:
    """masakari-api + masakari-engine, or the reference, on a fresh SQLite database."""

    def __init__(
        self,
        name: str,
        sim: NovaSimulator,
        auth: str,
        workers: int,
        reference_venv: str | None,
        argv: list[str] | None = None,
        db_url: str | None = None,
        sync: bool = True,
        extra: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """``db_url``: another database than a new SQLite file; ``sync``: create its schema
        (the reference's server does it at start, unless told not to)."""
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix=f"masakari-bench-{name}-")
        self.port = free_port()
        self.db_path = os.path.join(self.tmp, "masakari.db")
        self.conf = os.path.join(self.tmp, "masakari.conf")
        self.headers = KEYSTONE_HEADERS if auth == "keystone" else NOAUTH_HEADERS
        default: dict[str, Any] = {
            "auth_strategy": auth,
            "transport_url": "fake://",
            "masakari_api_listen": "127.0.0.1",
            "masakari_api_listen_port": self.port,
            "masakari_api_workers": workers,
            "debug": "false",
            "os_privileged_user_name": "masakari",
            "os_privileged_user_password": "secret",
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": sim.auth_url,
            "os_user_domain_name": "Default",
            "os_project_domain_name": "Default",
            "nova_catalog_admin_info": "compute:nova:publicURL",
        }
        write_conf(
            self.conf,
            {
                "DEFAULT": default,
                "wsgi": {"api_paste_config": ""},
                "database": {"connection": db_url or f"sqlite:///{self.db_path}"},
                "taskflow": {"connection": f"sqlite:///{self.tmp}/taskflow.db"},
                "oslo_concurrency": {"lock_path": self.tmp},
                "keystone_authtoken": {
                    "www_authenticate_uri": sim.auth_url,
                    "auth_type": "password",
                    **sim.authtoken_plugin_options(),
                },
                **(extra or {}),
            },
        )
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = open(os.path.join(self.tmp, "server.log"), "wb")
        bindir = os.path.dirname(sys.executable)
        if argv is not None:
            self.procs.append(self._start(argv))
            self._wait("/")
            return
        if reference_venv is None:
            if sync:
                subprocess.run(
                    [
                        os.path.join(bindir, "masakari-manage"),
                        "--config-file",
                        self.conf,
                        "db",
                        "sync",
                    ],
                    check=True,
                    stdout=self.log,
                    stderr=subprocess.STDOUT,
                )
            for prog in ("masakari-api", "masakari-engine"):
                self.procs.append(self._start([os.path.join(bindir, prog)]))
        else:
            python = os.path.join(os.path.abspath(reference_venv), "bin", "python")
            argv = [python, REFERENCE_SERVER, "--port", str(self.port)]
            self.procs.append(self._start(argv + ([] if sync else ["--no-db-sync"])))
        self._wait("/v1/segments?limit=1")

    def _start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv + ["--config-file", self.conf],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.tmp,
        )

    def client(self) -> Client:
        return Client(self.port, self.headers)

    def _wait(self, path: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if self.client().call("GET", path)[0] == 200:
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

    def pids(self) -> list[int]:
        """The server's processes: its own and their children (gunicorn's workers)."""
        found: list[int] = []
        for proc in self.procs:
            found.append(proc.pid)
            found.extend(children(proc.pid))
        return found

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            direct = [int(p) for p in fh.read().split()]
    except OSError:
        return []
    return direct + [c for p in direct for c in children(p)]


def rss_mib(pids: list[int]) -> float:
    """Resident memory of these processes together (MiB)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


# --- seeding -------------------------------------------------------------------------------


def seed(server: Server, rows: int) -> dict[str, str]:
    """3 segments, one host in the first (for GET one and POST notification), ``rows`` hosts
    in the second and ``rows`` finished notifications: the API makes the segments, the
    rest is inserted in bulk."""
    client = server.client()
    segments = []
    for i in range(3):
        body = {"segment": {"name": f"bench-{i}", "recovery_method": "auto", "service_type": "c"}}
        status, answer = client.call("POST", "/v1/segments", body)
        assert status == 201, answer
        segments.append(answer["segment"]["uuid"])
    host = str(uuid.uuid4())
    now = datetime.datetime(2026, 1, 1).isoformat(" ")
    with sqlite3.connect(server.db_path, timeout=60) as conn:
        insert_hosts(conn, [(host, "bench-host", segments[0])], now)
        insert_hosts(
            conn, ((str(uuid.uuid4()), f"many-{i}", segments[1]) for i in range(rows)), now
        )
        insert_notifications(conn, host, segments[0], rows, now)
    return {"segment": segments[0], "host": host, "many": segments[1]}


def insert_hosts(conn: Any, hosts: Any, now: str) -> None:
    conn.executemany(
        "INSERT INTO hosts (created_at, deleted, uuid, name, reserved, type, "
        "control_attributes, failover_segment_id, on_maintenance) "
        "VALUES (?, 0, ?, ?, 0, 'COMPUTE', 'SSH', ?, 0)",
        ((now, h, name, seg) for h, name, seg in hosts),
    )


def insert_notifications(conn: Any, host: str, segment: str, rows: int, now: str) -> None:
    payload = json.dumps({"event": "STOPPED", "process_name": "nova-compute"})
    conn.executemany(
        "INSERT INTO notifications (created_at, deleted, notification_uuid, generated_time, "
        "source_host_uuid, type, payload, status, failover_segment_uuid) "
        "VALUES (?, 0, ?, ?, ?, 'PROCESS', ?, 'finished', ?)",
        ((now, str(uuid.uuid4()), now, host, payload, segment) for _ in range(rows)),
    )


# --- scenarios -----------------------------------------------------------------------------

# (method, path, body) or (method, path, body, microversion)
Request = Callable[[int], tuple[Any, ...]]


def scenarios(ids: dict[str, str], rows: int) -> list[tuple[str, Request, int]]:
    """(name, request builder taking a sequence number, expected status)."""
    run = uuid.uuid4().hex[:6]

    def notification(i: int) -> tuple[str, str, Any]:
        body = {
            "notification": {
                "type": "PROCESS",
                "hostname": "bench-host",
                "generated_time": f"2026-01-01T00:00:00.{i % 1000000:06d}",
                "payload": {"event": "STARTED", "process_name": f"p-{run}-{i}"},
            }
        }
        return "POST", "/v1/notifications", body

    def host(i: int) -> tuple[str, str, Any]:
        body = {"host": {"name": f"new-{i}", "type": "COMPUTE", "control_attributes": "SSH"}}
        return "POST", f"/v1/segments/{ids['segment']}/hosts", body

    one_host = f"/v1/segments/{ids['segment']}/hosts/{ids['host']}"
    return [
        ("GET segments, 3 rows", lambda i: ("GET", "/v1/segments", None), 200),
        ("GET one host", lambda i: ("GET", one_host, None), 200),
        (
            f"GET hosts, {rows} rows",
            lambda i: ("GET", f"/v1/segments/{ids['many']}/hosts?limit={rows}", None),
            200,
        ),
        (
            f"GET notifications, {rows} rows",
            lambda i: ("GET", f"/v1/notifications?limit={rows}", None),
            200,
        ),
        ("POST host (Nova check)", host, 201),
        ("POST notification", notification, 202),
    ]


def measure(
    server: Server, build: Request, expected: int, requests: int, concurrency: int, first: int
) -> dict[str, Any]:
    clients = [server.client() for _ in range(concurrency)]
    counter = iter(range(first + WARMUP, first + WARMUP + requests))
    latencies: list[float] = []
    unexpected: list[int] = []
    peak = [0.0]

    def worker(client: Client) -> None:
        for i in counter:
            request = build(i)
            start = time.perf_counter()
            status, _ = client.call(*request)
            latencies.append(time.perf_counter() - start)
            if status != expected:
                unexpected.append(status)
            if i % 10 == 0:
                peak[0] = max(peak[0], rss_mib(server.pids()))

    # Warm-up: caches, connection setup, lazy imports (fewer for the long requests).
    for i in range(first, first + min(WARMUP, max(3, requests // 10))):
        clients[0].call(*build(i))
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, clients))
    elapsed = time.perf_counter() - started
    peak[0] = max(peak[0], rss_mib(server.pids()))
    ordered = sorted(latencies)
    return {
        "rps": len(ordered) / elapsed,
        "p50": statistics.median(ordered) * 1000,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "errors": len(unexpected),
        "unexpected": dict(collections.Counter(unexpected)),
        "rss": peak[0],
    }


METRICS_ON = {"metrics": {"enabled": "true"}}


def run(
    name: str,
    sim: NovaSimulator,
    auth: str,
    workers: int,
    reference_venv: str | None,
    args: argparse.Namespace,
    extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    print(f"{name}, {auth}, {workers} worker(s)...", file=sys.stderr)
    server = Server(name, sim, auth, workers, reference_venv, extra=extra)
    try:
        ids = seed(server, args.rows)
        time.sleep(1)
        results: dict[str, Any] = {"rss at rest": rss_mib(server.pids())}
        first = 0
        for label, build, expected in scenarios(ids, args.rows):
            count = args.requests
            if "rows" in label and "3 rows" not in label:
                count = max(args.requests // 10, 10)
            if reference_venv and label == "POST notification":
                count = args.slow_requests
            results[label] = measure(server, build, expected, count, args.concurrency, first)
            first += count + WARMUP
            r = results[label]
            print(f"  {label}: {r['rps']:.0f} req/s, p50 {r['p50']:.1f} ms", file=sys.stderr)
        return results
    finally:
        server.stop()


def ceiling(sim: NovaSimulator, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """The gunicorn server of masakari-api with a trivial application."""
    argv = [sys.executable, os.path.join(HERE, "wsgi_ceiling.py")]
    server = Server("ceiling", sim, "noauth2", workers, None, argv=argv)
    try:
        return measure(
            server, lambda i: ("GET", "/", None), 200, args.requests * 2, args.concurrency, 0
        )
    finally:
        server.stop()


# --- report --------------------------------------------------------------------------------


def table(
    project: dict[str, Any], reference: dict[str, Any] | None, markdown: bool
) -> Iterator[str]:
    head = ["scenario", "req/s", "p50 ms", "p99 ms"]
    if reference:
        head += ["ref req/s", "ref p50", "ref p99", "req/s ratio", "p50 ratio"]
    yield row(head, markdown)
    if markdown:
        yield "|" + "|".join([" --- "] + [" ---: "] * (len(head) - 1)) + "|"
    for label, mine in project.items():
        if label == "rss at rest":
            continue
        cells = [label, f"{mine['rps']:.0f}", f"{mine['p50']:.1f}", f"{mine['p99']:.1f}"]
        if reference:
            ref = reference[label]
            cells += [f"{ref['rps']:.0f}", f"{ref['p50']:.1f}", f"{ref['p99']:.1f}"]
            cells += [f"{mine['rps'] / ref['rps']:.1f}x", f"{ref['p50'] / mine['p50']:.1f}x"]
        notes = []
        if mine["errors"]:
            notes.append(f"project: unexpected {mine['unexpected']}")
        if reference and reference[label]["errors"]:
            notes.append(f"reference: unexpected {reference[label]['unexpected']}")
        yield row(cells, markdown) + ("  (" + "; ".join(notes) + ")" if notes else "")
    rss = f"RSS MiB (API+engine): project {project['rss at rest']:.0f} at rest, "
    rss += f"{max(v['rss'] for k, v in project.items() if k != 'rss at rest'):.0f} peak"
    if reference:
        rss += f"; reference {reference['rss at rest']:.0f} at rest, "
        rss += f"{max(v['rss'] for k, v in reference.items() if k != 'rss at rest'):.0f} peak"
    yield ""
    yield rss


def row(cells: list[str], markdown: bool) -> str:
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return f"{cells[0]:<30}" + "".join(f"{c:>12}" for c in cells[1:])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-venv", help="virtualenv of the reference (masakari 22.0.0)")
    parser.add_argument("--auth", default="keystone,noauth2", help="auth strategies to run")
    parser.add_argument("--workers", default="1,4", help="project API worker counts to run")
    parser.add_argument("--requests", type=int, default=400, help="per small scenario")
    parser.add_argument("--slow-requests", type=int, default=40, help="reference POST notification")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1000, help="rows of the big lists")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the bare WSGI ceiling")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each, alternating; medians are printed"
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="run the project with [metrics] enabled off, then on; the ratio is on/off",
    )
    return parser.parse_args(argv)


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per scenario, the median of each figure over repeated runs (errors added up, RSS at
    its highest)."""
    merged: dict[str, Any] = {"rss at rest": statistics.median(r["rss at rest"] for r in runs)}
    for label in runs[0]:
        if label == "rss at rest":
            continue
        figures = [r[label] for r in runs]
        unexpected: collections.Counter[int] = collections.Counter()
        for f in figures:
            unexpected.update(f["unexpected"])
        merged[label] = {
            "rps": statistics.median(f["rps"] for f in figures),
            "p50": statistics.median(f["p50"] for f in figures),
            "p99": statistics.median(f["p99"] for f in figures),
            "errors": sum(f["errors"] for f in figures),
            "unexpected": dict(unexpected),
            "rss": max(f["rss"] for f in figures),
        }
    return merged


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sim = NovaSimulator().start()
    # Nova compute services for POST host: the sequence numbers a run reaches (names reused
    # by each run, whose database is new).
    for i in range(args.requests * 6 + args.slow_requests + 200):
        sim.add_service(f"new-{i}")
    print(f"start: {load()}; {args.repeats} repeat(s), medians", flush=True)
    try:
        workers = [int(w) for w in args.workers.split(",")]
        for auth in args.auth.split(","):
            if args.metrics:
                for count in workers:
                    # In the table's reference columns: the project with metrics off.
                    reference = run("project", sim, auth, count, None, args)
                    project = run("project+metrics", sim, auth, count, None, args, METRICS_ON)
                    print(f"\n{auth}, {count} API worker(s), metrics on vs off (ref columns):")
                    for line in table(project, reference, args.markdown):
                        print(line)
                continue
            # Reference and project runs alternate, so that a change of the machine's load
            # falls on both.
            references: list[dict[str, Any]] = []
            projects: dict[int, list[dict[str, Any]]] = {count: [] for count in workers}
            for _ in range(args.repeats):
                if args.reference_venv:
                    references.append(run("reference", sim, auth, 1, args.reference_venv, args))
                for count in workers:
                    projects[count].append(run("project", sim, auth, count, None, args))
            reference = median_of(references) if references else None
            for count in workers:
                print(f"\n{auth}, project {count} API worker(s), reference 1 (eventlet):")
                for line in table(median_of(projects[count]), reference, args.markdown):
                    print(line)
                sys.stdout.flush()
        if not args.no_ceiling:
            for count in workers:
                results = [ceiling(sim, count, args) for _ in range(args.repeats)]
                print(
                    f"\nbare WSGI ceiling, {count} worker(s): "
                    f"{statistics.median(r['rps'] for r in results):.0f} req/s, "
                    f"p50 {statistics.median(r['p50'] for r in results):.1f} ms, "
                    f"p99 {statistics.median(r['p99'] for r in results):.1f} ms"
                )
    finally:
        sim.stop()
    print(f"\nend: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

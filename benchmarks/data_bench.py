"""Data at scale: list and filter latency, periodic-task queries and memory, on big tables.

    python -m benchmarks.data_bench [--reference-venv .ref-venv] [--backends sqlite,postgresql]
                                    [--hosts 10000] [--notifications 100000] [--vmoves 1000000]
                                    [--small 0.01] [--requests 20] [--without-indexes]
                                    [--markdown]

For each backend, one database (a SQLite file, or a throwaway PostgreSQL database on
MASAKARI_TEST_POSTGRESQL_URL's server) with masakari's schema (``masakari-manage db sync``:
the reference's schema plus the project's tables). Rows are bulk-inserted in two stages: first
``--small`` of each size (by default 1%: 100 hosts, 1,000 notifications, 10,000 vmoves), then
the rest. After each stage the project (masakari-api and masakari-engine, keystone auth
against the Nova simulator's Keystone, 1 API worker) and then the reference (its
reference_server.py, told not to migrate) are started on the database in turn, and each
list below is requested ``--requests`` times by one client: p50 in ms. The periodic tasks'
queries are timed in process against the same database (the project's own functions; the
reference's through its own code, run with its Python). RSS: API and engine processes
together, at rest after start and at peak during the lists. ``--without-indexes`` also
measures the project on the same rows without the project's list indexes (the schema one
migration back, then forward again): the indexes' effect in one run.

Rows: 10 segments holding the hosts evenly; notifications of 100 hosts of the first
segment, 10% of them COMPUTE_HOST, each of those with an equal share of the vmoves; every
notification finished (none for the engines to pick up), generated over a year.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.api_bench import Request, Server, measure, rss_mib  # noqa: E402
from tests.db.backends import SERVER_URLS, server_reachable, temporary_database  # noqa: E402
from tests.fakes.nova import NovaSimulator  # noqa: E402

SEGMENTS = 10
SOURCE_HOSTS = 100
START = datetime.datetime(2025, 1, 1)
YEAR = datetime.timedelta(days=365)
CHUNK = 10_000
# The schema before the project's list indexes (migration d4e6f8a0b2c4).
BEFORE_INDEXES = "a3d5f7c9e1b2"


class Population:
    """Rows inserted so far, and the ids the lists ask for."""

    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url)
        self.meta = sa.MetaData()
        self.meta.reflect(
            self.engine, only=("failover_segments", "hosts", "notifications", "vmoves")
        )
        self.segments: list[str] = []
        self.hosts: list[str] = []
        self.compute_notifications: list[str] = []
        self.counts = {"hosts": 0, "notifications": 0, "vmoves": 0}

    def table(self, name: str) -> sa.Table:
        return self.meta.tables[name]

    def insert(self, name: str, rows: Iterator[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row)
                if len(batch) == CHUNK:
                    conn.execute(self.table(name).insert(), batch)
                    batch = []
            if batch:
                conn.execute(self.table(name).insert(), batch)

    def grow(self, hosts: int, notifications: int, vmoves: int) -> None:
        """Insert rows up to these totals."""
        if not self.segments:
            self.segments = [str(uuid.uuid4()) for _ in range(SEGMENTS)]
            self.insert(
                "failover_segments",
                (
                    soft(
                        START,
                        uuid=s,
                        name=f"seg-{i}",
                        service_type="compute",
                        recovery_method="auto",
                        enabled=True,
                    )
                    for i, s in enumerate(self.segments)
                ),
            )
        new_hosts = [str(uuid.uuid4()) for _ in range(hosts - self.counts["hosts"])]
        first = self.counts["hosts"]
        self.insert(
            "hosts",
            (
                soft(
                    START,
                    uuid=h,
                    name=f"host-{first + i}",
                    reserved=False,
                    type="COMPUTE",
                    control_attributes="SSH",
                    failover_segment_id=self.segments[(first + i) % SEGMENTS],
                    on_maintenance=(first + i) % 50 == 0,
                )
                for i, h in enumerate(new_hosts)
            ),
        )
        self.hosts += new_hosts
        self.counts["hosts"] = hosts
        sources = [h for i, h in enumerate(self.hosts) if i % SEGMENTS == 0][:SOURCE_HOSTS]
        start = self.counts["notifications"]
        step = YEAR / max(notifications, 1)
        new_compute: list[str] = []

        def notification_rows() -> Iterator[dict[str, Any]]:
            for n in range(start, notifications):
                nid = str(uuid.uuid4())
                compute = n % 10 == 0
                if compute:
                    new_compute.append(nid)
                when = START + step * n
                yield soft(
                    when,
                    notification_uuid=nid,
                    generated_time=when,
                    source_host_uuid=sources[n % len(sources)],
                    type="COMPUTE_HOST" if compute else "PROCESS",
                    payload=json.dumps({"event": "STOPPED", "host_status": "NORMAL"}),
                    status="finished",
                    failover_segment_uuid=self.segments[0],
                    message=None,
                )

        self.insert("notifications", notification_rows())
        self.compute_notifications += new_compute
        self.counts["notifications"] = notifications
        # vmoves: spread over the new COMPUTE_HOST notifications.
        wanted = vmoves - self.counts["vmoves"]
        owners = new_compute or self.compute_notifications

        def vmove_rows() -> Iterator[dict[str, Any]]:
            for n in range(wanted):
                owner = owners[n % len(owners)]
                yield soft(
                    START,
                    uuid=str(uuid.uuid4()),
                    notification_uuid=owner,
                    instance_uuid=str(uuid.uuid4()),
                    instance_name=f"vm-{n}",
                    source_host="host-0",
                    dest_host="host-10",
                    start_time=START,
                    end_time=START,
                    type="evacuation",
                    status="succeeded" if n % 20 else "failed",
                    message=None,
                )

        self.insert("vmoves", vmove_rows())
        self.counts["vmoves"] = vmoves
        if self.engine.dialect.name == "postgresql":
            # What autovacuum does within a minute of a deployment's growth: without
            # statistics the planner guesses one row per table and picks poor plans.
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE")


def soft(when: datetime.datetime, **values: Any) -> dict[str, Any]:
    return {
        "created_at": when,
        "updated_at": None,
        "deleted_at": None,
        "deleted": 0,
        **values,
    }


def lists(pop: Population) -> list[tuple[str, Request]]:
    seg = pop.segments[0]
    source = pop.hosts[0]
    compute = pop.compute_notifications[0]
    since = (START + YEAR - datetime.timedelta(days=3)).isoformat()
    # A page deep in the default order: the marker is an id (the reference's pages).
    deep = deep_marker(pop)
    return [
        (
            "hosts of a segment, limit 100",
            lambda i: ("GET", f"/v1/segments/{seg}/hosts?limit=100", None),
        ),
        (
            "hosts on maintenance (filter)",
            lambda i: ("GET", f"/v1/segments/{seg}/hosts?on_maintenance=true&limit=100", None),
        ),
        ("notifications, limit 100", lambda i: ("GET", "/v1/notifications?limit=100", None)),
        ("notifications, default page", lambda i: ("GET", "/v1/notifications", None)),
        (
            "notifications, status=error (none)",
            lambda i: ("GET", "/v1/notifications?status=error&limit=100", None),
        ),
        (
            "notifications of a host",
            lambda i: ("GET", f"/v1/notifications?source_host_uuid={source}&limit=100", None),
        ),
        (
            "notifications, generated-since",
            lambda i: ("GET", f"/v1/notifications?generated-since={since}&limit=100", None),
        ),
        (
            "notifications by generated_time asc",
            lambda i: (
                "GET",
                "/v1/notifications?sort_key=generated_time&sort_dir=asc&limit=100",
                None,
            ),
        ),
        (
            "notifications, page at the middle",
            lambda i: ("GET", f"/v1/notifications?marker={deep}&limit=100", None),
        ),
        (
            "vmoves of a notification",
            lambda i: ("GET", f"/v1/notifications/{compute}/vmoves?limit=100", None, "1.3"),
        ),
        (
            "vmoves, status=failed (filter)",
            lambda i: ("GET", f"/v1/notifications/{compute}/vmoves?status=failed", None, "1.3"),
        ),
    ]


def deep_marker(pop: Population) -> int:
    table = pop.table("notifications")
    with pop.engine.connect() as conn:
        ids = conn.execute(sa.select(table.c.id).order_by(table.c.id)).scalars().all()
    return int(ids[len(ids) // 2])


# --- periodic tasks ---------------------------------------------------------------------------


def project_periodic(url: str, repeat: int) -> dict[str, float]:
    """ms per run of the engine's periodic queries (median of ``repeat``)."""
    from masakari.db import claims, queue
    from masakari.db.database import Database, transaction

    db = Database.from_url(url)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    tasks = {
        "retry: error and late new notifications": lambda: db_read(
            db, lambda s: queue.retry_candidates(s, now, 50)
        ),
        "retry: running without a claim": lambda: db_read(
            db, lambda s: queue.orphan_candidates(s, 50)
        ),
        "expiry: unfinished and too old": lambda: transaction(
            db, lambda s: claims.expire(s, now, 50)
        ),
        # From id 0: a starting engine's first poll (later polls start at the last id seen).
        "poll: new notifications, from id 0": lambda: db_read(
            db, lambda s: queue.new_after(s, 0, 50)
        ),
    }
    try:
        return {name: median_ms(fn, repeat) for name, fn in tasks.items()}
    finally:
        db.dispose()


def db_read(db: Any, fn: Any) -> Any:
    with db.reader() as session:
        return fn(session)


def median_ms(fn: Any, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]


REFERENCE_PERIODIC = """
import sys, time, json
from masakari import config, context, objects
config.parse_args(["bench", "--config-file", sys.argv[1]], init_rpc=False)
objects.register_all()
ctx = context.get_admin_context()
def run(statuses):
    return objects.NotificationList.get_all(ctx, filters={"status": statuses})
out = {}
for name, statuses in (("process_unfinished_notifications", ["error", "new"]),
                       ("check_expired_notifications", ["running", "error", "new"])):
    run(statuses)
    times = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter(); run(statuses); times.append((time.perf_counter() - t) * 1000)
    out[name] = sorted(times)[len(times) // 2]
print(json.dumps(out))
"""


def reference_periodic(venv: str, url: str, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "masakari.conf")
        with open(conf, "w") as fh:
            fh.write(f"[database]\nconnection = {url}\n")
        out = subprocess.run(
            [
                os.path.join(os.path.abspath(venv), "bin", "python"),
                "-c",
                REFERENCE_PERIODIC,
                conf,
                str(repeat),
            ],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- one stage ---------------------------------------------------------------------------


def stage(
    sim: NovaSimulator, url: str, pop: Population, args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    impls: list[tuple[str, str | None]] = [("project", None)]
    if args.without_indexes:
        impls.append((NO_INDEXES, None))
    if args.reference_venv:
        impls.append(("reference", args.reference_venv))
    for name, venv in impls:
        print(f"  {name}...", file=sys.stderr)
        migrate(url, BEFORE_INDEXES if name == NO_INDEXES else None)
        server = Server(name, sim, "keystone", 1, venv, db_url=url, sync=False)
        try:
            time.sleep(1)
            figures: dict[str, Any] = {"rss at rest": rss_mib(server.pids())}
            for label, build in lists(pop):
                figures[label] = measure(server, build, 200, args.requests, 1, 0)
                print(f"    {label}: p50 {figures[label]['p50']:.1f} ms", file=sys.stderr)
            figures["rss peak"] = max(v["rss"] for v in figures.values() if isinstance(v, dict))
        finally:
            server.stop()
        if venv:
            figures["periodic"] = reference_periodic(venv, url, args.periodic_repeat)
        else:
            figures["periodic"] = project_periodic(url, args.periodic_repeat)
        results[name] = figures
    return results


NO_INDEXES = "project without indexes"


@contextlib.contextmanager
def database(backend: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="masakari-data-bench-") as tmp:
        with temporary_database(backend, tmp) as url:
            yield url


def migrate(url: str, version: str | None = None) -> None:
    from masakari.db import migration
    from masakari.db.database import Database

    db = Database.from_url(url)
    try:
        migration.upgrade(db.engine, version)
    finally:
        db.dispose()


def report(backend: str, sizes: list[dict[str, int]], stages: list[Any], markdown: bool) -> None:
    small, big = stages
    impls = list(small)
    head = ["list (p50 ms)"]
    for size in sizes:
        head += [f"{impl} {size['notifications']:,} notif." for impl in impls]
    head += [f"{impl} big/small" for impl in impls]
    if "reference" in small:
        head += ["ratio ref/project (big)"]
    print(
        f"\n{backend}: hosts {sizes[0]['hosts']:,} -> {sizes[1]['hosts']:,}, "
        f"vmoves {sizes[0]['vmoves']:,} -> {sizes[1]['vmoves']:,}"
    )
    print(line(head, markdown))
    if markdown:
        print("|" + "|".join([" --- "] + [" ---: "] * (len(head) - 1)) + "|")
    for label in small["project"]:
        if not isinstance(small["project"][label], dict) or label == "periodic":
            continue
        cells = [label]
        for result in (small, big):
            cells += [f"{result[impl][label]['p50']:.1f}" for impl in impls]
        cells += [f"{big[i][label]['p50'] / small[i][label]['p50']:.2f}x" for i in impls]
        if "reference" in big:
            cells.append(f"{big['reference'][label]['p50'] / big['project'][label]['p50']:.1f}x")
        print(line(cells, markdown))
    print("\nperiodic task queries, median ms (small -> big):")
    for name in impls:
        for task, value in small[name]["periodic"].items():
            print(f"  {name}: {task}: {value:.1f} -> {big[name]['periodic'][task]:.1f}")
    print("\nRSS MiB of API + engine (at rest / peak during the lists), small -> big:")
    for name in impls:
        print(
            f"  {name}: {small[name]['rss at rest']:.0f} / {small[name]['rss peak']:.0f} -> "
            f"{big[name]['rss at rest']:.0f} / {big[name]['rss peak']:.0f}"
        )
    sys.stdout.flush()


def line(cells: list[str], markdown: bool) -> str:
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return f"{cells[0]:<38}" + "".join(f"{c:>{max(26, len(c) + 2)}}" for c in cells[1:])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-venv", help="virtualenv of the reference (masakari 22.0.0)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--notifications", type=int, default=100_000)
    parser.add_argument("--vmoves", type=int, default=1_000_000)
    parser.add_argument("--small", type=float, default=0.01, help="first stage, share of sizes")
    parser.add_argument("--requests", type=int, default=20, help="per list and stage")
    parser.add_argument("--periodic-repeat", type=int, default=5)
    parser.add_argument(
        "--without-indexes",
        action="store_true",
        help="also measure the project without its list indexes (migration d4e6f8a0b2c4)",
    )
    parser.add_argument("--markdown", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    full = {"hosts": args.hosts, "notifications": args.notifications, "vmoves": args.vmoves}
    small = {k: max(int(v * args.small), SEGMENTS * 10) for k, v in full.items()}
    sim = NovaSimulator().start()
    try:
        for backend in args.backends.split(","):
            if backend != "sqlite" and server_reachable(backend) is not None:
                print(f"{backend}: skipped, no server at {SERVER_URLS[backend]}", file=sys.stderr)
                continue
            with database(backend) as url:
                migrate(url)
                pop = Population(url)
                stages = []
                for size in (small, full):
                    started = time.monotonic()
                    pop.grow(**size)
                    print(
                        f"{backend}: {size} inserted in {time.monotonic() - started:.0f} s",
                        file=sys.stderr,
                    )
                    stages.append(stage(sim, url, pop, args))
                pop.engine.dispose()
                report(backend, [small, full], stages, args.markdown)
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

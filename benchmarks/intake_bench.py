"""Notification intake: many monitors report at once; how soon is everything accepted, done.

    .venv/bin/python -m benchmarks.intake_bench [--notifications 1000] [--hosts 100]
        [--clients 50] [--databases sqlite,postgresql] [--reference-python .ref-venv/bin/python]
        [--scenario burst|latency] [--repeats N] [--baseline-source DIR] [--project-source DIR]

One run per implementation and database: a Nova simulator with ``--hosts`` compute hosts of
one instance per notification; masakari (one API worker, one engine; or the reference's API
and engine in one process) with those hosts in a segment; then ``--notifications`` VM
notifications (instance ``STOPPED_FAILED``, ``--notifications / --hosts`` per host, each for
its own instance) are posted by ``--clients`` concurrent clients. The instances are not
HA-enabled: each recovery reads the instance once and finishes, so the figure is the
service's own cost per notification, not Nova's.

Measured from the first POST: when the last POST was answered (accepted: 202), and when
every notification had ended (read with list requests every 0.25 s). The reference's API
pauses each POST a random 0-5 s by default (``notification_delay_max``); both runs set it
to 0, as recovery_bench does.

``--scenario latency`` (docs/benchmarks.md, "Intake latency on SQLite"): each POST of
``--clients`` clients timed while the engine claims and ends each report (PROCESS STARTED,
no Nova call); req/s, p50, p90, p99. The sides (the reference, ``--baseline-source`` as
"before", the project) run in turn ``--repeats`` times, with the load average of each run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import datetime
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.recovery_bench import (  # noqa: E402
    DEFAULT_REFERENCE_SERVER,
    TERMINAL,
    Mode,
    Setup,
    Timings,
    build_conf,
    start,
)
from benchmarks.recovery_procs import Api, BenchError, Proc, write_conf  # noqa: E402
from tests.db import backends  # noqa: E402
from tests.fakes.nova import ADMIN_TOKEN, NovaSimulator  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

POLL = 0.25


@dataclasses.dataclass
class Result:
    impl: str
    database: str
    notifications: int
    accepted: float | None = None  # s from the first POST to the last 202
    processed: float | None = None  # s from the first POST to every notification ended
    refused: int = 0
    ended: int = 0
    error: str | None = None


@contextlib.contextmanager
def _database(name: str, tmp: Path) -> Iterator[str]:
    if name != "sqlite":
        reason = backends.server_reachable(name)
        if reason:
            raise BenchError(reason)
    with backends.temporary_database(name, str(tmp)) as url:
        yield url


def _vm_notification(host: str, instance: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return {
        "notification": {
            "type": "VM",
            "hostname": host,
            "generated_time": now,
            "payload": {
                "event": "LIFECYCLE",
                "instance_uuid": instance,
                "vir_domain_event": "STOPPED_FAILED",
            },
        }
    }


@contextlib.contextmanager
def _deployment(
    setup: Setup, impl: str, database: str, count: int, hosts: int, tmp: Path
) -> Iterator[tuple[Api, list[tuple[str, str]]]]:
    """The service running with ``hosts`` hosts in a segment; the (host, instance) to report."""
    mode = Mode(impl, reference=impl == "reference")
    (tmp / "locks").mkdir()
    procs: list[Proc] = []
    names = [f"compute-{h:03d}" for h in range(hosts)]
    try:
        with _database(database, tmp) as url, NovaSimulator() as sim:
            for name in names:
                sim.add_service(name)
            work = []
            for i in range(count):
                host = names[i % hosts]
                work.append((host, sim.add_server(host=host, name=f"vm-{i:04d}")))
            port = free_port()
            conf = build_conf(setup, mode, sim, tmp, port)
            conf["database"]["connection"] = url
            conf_file = tmp / "masakari.conf"
            write_conf(conf_file, conf)
            procs = start(setup, mode, conf_file, port, tmp)
            api = Api(port, ADMIN_TOKEN, timeout=120)
            api.wait_ready(procs, setup.start_timeout)
            seg = api.call(
                "POST",
                "/v1/segments",
                {
                    "segment": {
                        "name": "intake",
                        "recovery_method": "auto",
                        "service_type": "compute",
                    }
                },
            )["segment"]["uuid"]
            for name in names:
                api.call(
                    "POST",
                    f"/v1/segments/{seg}/hosts",
                    {"host": {"name": name, "type": "COMPUTE", "control_attributes": "ssh"}},
                )
            yield api, work
    finally:
        for p in reversed(procs):
            p.stop()


def _wait_ended(api: Api, nids: set[str], result: Result | Latency, t0: float) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ended = _ended(api, nids)
        result.ended = ended
        if ended == len(nids):
            result.processed = time.monotonic() - t0
            return
        time.sleep(POLL)


def _process_notification(host: str, i: int) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return {
        "notification": {
            "type": "PROCESS",
            "hostname": host,
            "generated_time": now,
            "payload": {"event": "STARTED", "process_name": f"nova-compute-{i}"},
        }
    }


def run_one(setup: Setup, impl: str, database: str, count: int, hosts: int, clients: int) -> Result:
    result = Result(impl, database, count)
    tmp = Path(tempfile.mkdtemp(prefix=f"intake-{impl}-{database}-", dir=setup.workdir))
    try:
        with _deployment(setup, impl, database, count, hosts, tmp) as (api, work):
            t0 = time.monotonic()

            def post(item: tuple[str, str]) -> tuple[int, str | None]:
                status, body = api.request("POST", "/v1/notifications", _vm_notification(*item))
                nid = body["notification"]["notification_uuid"] if status == 202 else None
                return status, nid

            with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
                answers = list(pool.map(post, work))
            result.accepted = time.monotonic() - t0
            nids = {nid for status, nid in answers if nid is not None}
            result.refused = count - len(nids)
            _wait_ended(api, nids, result, t0)
            if result.processed is None or result.refused:
                result.error = f"{result.ended}/{len(nids)} ended, {result.refused} refused"
    except BenchError as exc:
        result.error = str(exc)
    if result.error is None:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        result.error += f" (logs in {tmp})"
    return result


@dataclasses.dataclass
class Latency:
    """The latency scenario: each POST's answer time while the engine claims and recovers."""

    impl: str
    database: str
    notifications: int
    clients: int
    rps: float = 0.0
    p50: float = 0.0  # ms
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    processed: float | None = None
    refused: int = 0
    ended: int = 0
    error: str | None = None


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def run_latency(
    setup: Setup, impl: str, database: str, count: int, hosts: int, clients: int
) -> Latency:
    """``clients`` clients post one notification after the other, each timed.

    PROCESS STARTED reports: the engine claims each as it comes and ends it without calling
    Nova, so what runs beside the intake is the engine's own writes (claims, outcomes).
    """
    result = Latency(impl, database, count, clients)
    tmp = Path(tempfile.mkdtemp(prefix=f"latency-{impl}-{database}-", dir=setup.workdir))
    try:
        with _deployment(setup, impl, database, count, hosts, tmp) as (api, work):
            latencies: list[float] = []
            nids: set[str] = set()

            def post(item: tuple[int, tuple[str, str]]) -> None:
                i, (host, _instance) = item
                started = time.perf_counter()
                body = _process_notification(host, i)
                status, body = api.request("POST", "/v1/notifications", body)
                latencies.append(time.perf_counter() - started)
                if status == 202:
                    nids.add(body["notification"]["notification_uuid"])

            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
                list(pool.map(post, enumerate(work)))
            elapsed = time.monotonic() - t0
            ordered = sorted(latencies)
            result.rps = len(ordered) / elapsed
            result.p50, result.p90, result.p99 = (
                _percentile(ordered, q) * 1000 for q in (0.5, 0.9, 0.99)
            )
            result.max = ordered[-1] * 1000
            result.refused = count - len(nids)
            _wait_ended(api, nids, result, t0)
            if result.processed is None or result.refused:
                result.error = f"{result.ended}/{len(nids)} ended, {result.refused} refused"
    except BenchError as exc:
        result.error = str(exc)
    if result.error is None:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        result.error += f" (logs in {tmp})"
    return result


def _ended(api: Api, nids: set[str]) -> int:
    """How many of ``nids`` ended: one list request per page of 1000."""
    ended, marker = 0, None
    while True:
        path = "/v1/notifications?limit=1000" + (f"&marker={marker}" if marker else "")
        status, body = api.request("GET", path)
        if status != 200:
            return ended
        page = body.get("notifications") or []
        ended += sum(1 for n in page if n["notification_uuid"] in nids and n["status"] in TERMINAL)
        if len(page) < 1000:
            return ended
        marker = page[-1]["notification_uuid"]


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _latency_table(results: list[tuple[int, str, str, Latency]]) -> None:
    print()
    print(
        "| run | load (1/5/15 min) | impl | database | c | req/s | p50 ms | p90 ms | p99 ms "
        "| max ms | all processed s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run, load, label, r in results:
        print(
            f"| {run} | {load} | {label} | {r.database} | {r.clients} | {r.rps:.1f} "
            f"| {r.p50:.0f} | {r.p90:.0f} | {r.p99:.0f} | {r.max:.0f} | {_num(r.processed)} |"
        )


def main_latency(args: argparse.Namespace, setup: Setup, ref: Path | None) -> bool:
    """Each implementation in turn, ``--repeats`` times, alternating: the machine's load
    changes from run to run, so no side gets all the quiet minutes."""
    sides: list[tuple[str, str, Setup]] = []
    if ref:
        sides.append(("reference", "reference", setup))
    if args.baseline_source:
        base = dataclasses.replace(setup, project_source=args.baseline_source.absolute())
        sides.append(("before", "before", base))
    sides.append(("project", "project", setup))
    results: list[tuple[int, str, str, Latency]] = []
    for database in [d.strip() for d in args.databases.split(",") if d.strip()]:
        for run in range(1, args.repeats + 1):
            for label, impl, side in sides:
                load = _load()
                print(f"run {run}: {label} on {database} (load {load}) ...", flush=True)
                r = run_latency(side, impl, database, args.notifications, args.hosts, args.clients)
                results.append((run, load, label, r))
                print(
                    f"  {r.rps:.1f} req/s, p50 {r.p50:.0f} ms, p90 {r.p90:.0f} ms, "
                    f"p99 {r.p99:.0f} ms, max {r.max:.0f} ms"
                    + (f"\n  {r.error}" if r.error else ""),
                    flush=True,
                )
    _latency_table(results)
    return all(r.error is None for *_, r in results)


def main_burst(args: argparse.Namespace, setup: Setup, ref: Path | None) -> bool:
    impls = (["reference"] if ref else []) + ["project"]
    results: list[Result] = []
    for database in [d.strip() for d in args.databases.split(",") if d.strip()]:
        for impl in impls:
            print(f"running {impl} on {database} ...", flush=True)
            r = run_one(setup, impl, database, args.notifications, args.hosts, args.clients)
            results.append(r)
            print(
                f"  accepted {_num(r.accepted)} s, processed {_num(r.processed)} s"
                + (f"\n  {r.error}" if r.error else ""),
                flush=True,
            )
    print()
    print("| database | impl | notifications | all accepted s | all processed s | ratio |")
    print("|---|---|---|---|---|---|")
    for r in results:
        base = next(
            (x for x in results if x.impl == "reference" and x.database == r.database), None
        )
        ratio = (
            f"{base.processed / r.processed:.1f}x faster"
            if base and base.processed and r.processed and r is not base
            else ""
        )
        print(
            f"| {r.database} | {r.impl} | {r.notifications} | {_num(r.accepted)} | "
            f"{_num(r.processed)} | {ratio} |"
        )
    return all(r.error is None for r in results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=("burst", "latency"), default="burst")
    ap.add_argument("--notifications", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--clients", type=int, default=50, help="concurrent POSTs")
    ap.add_argument("--databases", default="sqlite,postgresql")
    ap.add_argument("--repeats", type=int, default=1, help="latency: runs of each side")
    ap.add_argument(
        "--baseline-source",
        type=Path,
        default=None,
        help="latency: also run this source tree (an older commit), labelled 'before'",
    )
    ap.add_argument(
        "--project-source",
        type=Path,
        default=None,
        help="run this source tree as the project instead of the installed one",
    )
    ap.add_argument("--reference-python", type=Path, default=None)
    ap.add_argument("--reference-server", type=Path, default=DEFAULT_REFERENCE_SERVER)
    ap.add_argument("--project-bin", type=Path, default=Path(sys.executable).parent)
    args = ap.parse_args(argv)
    ref = args.reference_python.absolute() if args.reference_python else None
    workdir = Path(tempfile.mkdtemp(prefix="intake-bench-"))
    setup = Setup(Timings(scale=1.0), 0, 3, workdir, args.project_bin, ref, args.reference_server)
    if args.project_source:
        setup = dataclasses.replace(setup, project_source=args.project_source.absolute())
    print(f"load average at the start: {_load()}", flush=True)
    run = main_latency if args.scenario == "latency" else main_burst
    ok = run(args, setup, ref)
    print(f"load average at the end: {_load()}", flush=True)
    if ok:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

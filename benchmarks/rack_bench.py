"""A rack failure against the Nova simulator: many hosts down at once, Nova the limit.

    .venv/bin/python -m benchmarks.rack_bench [--hosts 40] [--per-host 50]
        [--evacuate 5,20] [--nova-limit 100] [--time-scale 1] [--modes reference,default,capped]
        [--reference-python .ref-venv/bin/python]

One run per mode: a Nova simulator (tests/fakes/nova.py) with ``--hosts`` compute hosts of
``--per-host`` HA-enabled instances each and spare hosts; Nova runs at most ``--nova-limit``
evacuations at once (more are queued, as Nova's computes queue rebuilds) and each takes a
duration drawn from ``--evacuate`` seconds. The failed hosts are down in Nova before the
monitors' COMPUTE_HOST notifications (one per host) are posted all at once to the API.
``wait_period_after_service_update = 0``, as in issue 11's measurement.

Measured from the first POST: when the last instance runs on its new host (the simulator's
own end of the last evacuation), when every notification is finished, Nova's requests per
second over that time (all, and GETs), the peak of GETs in one second, and the most
evacuations Nova had in flight. The bound is the makespan of the same durations (the
simulator's seeded draws) on ``--nova-limit`` slots: Nova's own speed.

Modes:

- ``reference``: masakari 22.0.0 (``--reference-python``), its defaults.
- ``default``: this project, its defaults (``executor_thread_pool_size`` notifications at
  once, ``host_failure_recovery_threads`` evacuations per notification).
- ``batched``: ``evacuation_batched_polling = true`` only.
- ``capped``: ``max_evacuations_in_flight = --cap`` (the Nova limit by default) and batched
  polling.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import math
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
    notification,
    start,
)
from benchmarks.recovery_bound import evacuation_delays, makespan  # noqa: E402
from benchmarks.recovery_procs import Api, BenchError, Proc, write_conf  # noqa: E402
from tests.db import backends  # noqa: E402
from tests.fakes.nova import ADMIN_TOKEN, NovaSimulator  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPARES = 10
POLL = 0.5  # seconds between two looks at the notifications
TRACE = False

MODES: dict[str, tuple[Mode, dict[str, Any]]] = {
    "reference": (Mode("reference", reference=True), {}),
    "default": (Mode("default"), {}),
    "batched": (Mode("batched"), {"evacuation_batched_polling": True}),
    "capped": (Mode("capped"), {"evacuation_batched_polling": True}),
}


@dataclasses.dataclass
class Rack:
    hosts: int
    per_host: int
    evacuate: tuple[float, float]
    nova_limit: int
    cap: int
    seed: int
    scale: float

    @property
    def instances(self) -> int:
        return self.hosts * self.per_host

    @property
    def delay(self) -> tuple[float, float]:
        return self.evacuate[0] * self.scale, self.evacuate[1] * self.scale

    def bound(self) -> float:
        lo, hi = self.delay
        return makespan(evacuation_delays(self.instances, lo, hi, self.seed), self.nova_limit)


@dataclasses.dataclass
class Result:
    mode: str
    status: str = "not run"
    last_running: float | None = None  # s after the first POST
    all_finished: float | None = None
    bound: float = 0.0
    nova_requests: int = 0
    nova_gets: int = 0
    peak_gets_per_s: int = 0
    max_in_flight: int = 0
    first_evacuation: float | None = None
    moved: int = 0
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.last_running is None else self.last_running / self.bound

    @property
    def requests_per_s(self) -> float | None:
        span = self.all_finished or self.last_running
        return None if not span else self.nova_requests / span

    @property
    def gets_per_s(self) -> float | None:
        span = self.all_finished or self.last_running
        return None if not span else self.nova_gets / span


def _conf(
    setup: Setup,
    mode: Mode,
    extra: dict[str, Any],
    sim: NovaSimulator,
    tmp: Path,
    port: int,
    rack: Rack,
) -> dict[str, Any]:
    conf = build_conf(setup, mode, sim, tmp, port)
    default = conf["DEFAULT"]
    default["wait_period_after_service_update"] = 0
    default["wait_period_after_evacuation"] = max(
        default["wait_period_after_evacuation"],
        # queued in Nova behind every other evacuation, in the worst case
        math.ceil(rack.bound() * 1.5 + rack.delay[1]),
    )
    if not mode.reference:
        default.update(extra)
        if mode.name == "capped":
            default["max_evacuations_in_flight"] = rack.cap
        conf["host_failure"]["force_down_fenced_host"] = False
    return conf


def run_one(setup: Setup, name: str, rack: Rack, database: str) -> Result:
    result = Result(name, bound=rack.bound())
    tmp = Path(tempfile.mkdtemp(prefix=f"rack-{name}-", dir=setup.workdir))
    (tmp / "locks").mkdir()
    try:
        with _database(database, tmp) as url:
            _run(setup, name, rack, url, result, tmp)
    except BenchError as exc:
        result.status, result.error = "error", str(exc)
    if result.error is None:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        result.error += f" (logs in {tmp})"
    return result


@contextlib.contextmanager
def _database(name: str, tmp: Path) -> Iterator[str]:
    if name != "sqlite":
        reason = backends.server_reachable(name)
        if reason:
            raise BenchError(reason)
    with backends.temporary_database(name, str(tmp)) as url:
        yield url


def _run(setup: Setup, name: str, rack: Rack, url: str, result: Result, tmp: Path) -> None:
    mode, extra = MODES[name]
    procs: list[Proc] = []
    failed = [f"rack-{h:02d}" for h in range(rack.hosts)]
    with NovaSimulator(
        service_down_time=0.5,
        evacuate_delay=rack.delay,
        seed=rack.seed,
        evacuation_limit=rack.nova_limit,
    ) as sim:
        try:
            for host in failed + [f"spare-{i:02d}" for i in range(SPARES)]:
                sim.add_service(host)
            for host in failed:
                for i in range(rack.per_host):
                    sim.add_server(
                        host=host, name=f"{host}-vm-{i:02d}", metadata={"HA_Enabled": "True"}
                    )
            port = free_port()
            conf = tmp / "masakari.conf"
            values = _conf(setup, mode, extra, sim, tmp, port, rack)
            values["database"]["connection"] = url
            write_conf(conf, values)
            procs = start(setup, mode, conf, port, tmp)
            api = Api(port, ADMIN_TOKEN, timeout=120)
            api.wait_ready(procs, setup.start_timeout)
            seg = api.call(
                "POST",
                "/v1/segments",
                {"segment": {"name": "rack", "recovery_method": "auto", "service_type": "compute"}},
            )
            seg_uuid = seg["segment"]["uuid"]
            for host in failed:
                api.call(
                    "POST",
                    f"/v1/segments/{seg_uuid}/hosts",
                    {"host": {"name": host, "type": "COMPUTE", "control_attributes": "ssh"}},
                )
            for host in failed:
                sim.power_off(host)
            time.sleep(1.0)  # past the simulator's service_down_time: down in Nova
            sim.clear_calls()
            t0 = time.time()
            with concurrent.futures.ThreadPoolExecutor(max_workers=rack.hosts) as pool:
                posted = list(
                    pool.map(
                        lambda h: api.call("POST", "/v1/notifications", notification(h, "STOPPED")),
                        failed,
                    )
                )
            nids = {p["notification"]["notification_uuid"] for p in posted}
            deadline = time.monotonic() + 600 + 4 * result.bound
            statuses: dict[str, str] = {}
            while time.monotonic() < deadline:
                status, body = api.request("GET", "/v1/notifications?limit=1000")
                if status == 200:
                    statuses = {
                        n["notification_uuid"]: n["status"]
                        for n in body["notifications"]
                        if n["notification_uuid"] in nids
                    }
                    if len(statuses) == len(nids) and all(s in TERMINAL for s in statuses.values()):
                        result.all_finished = time.time() - t0
                        break
                time.sleep(POLL)
            done = sorted(set(statuses.values()))
            result.status = ",".join(done) if result.all_finished else f"timeout ({done})"
            _observe(result, sim, t0, failed, rack)
            if result.status != "finished" or result.moved != rack.instances:
                result.error = f"{result.status}, {result.moved}/{rack.instances} moved"
        except BenchError as exc:
            result.status, result.error = "error", str(exc)
        finally:
            for p in reversed(procs):
                p.stop()


def _observe(result: Result, sim: NovaSimulator, t0: float, failed: list[str], rack: Rack) -> None:
    with sim.lock:
        sim._tick()
        calls = [c for c in sim.calls if c.time >= t0]
        ends = list(sim.evacuation_ends)
        result.max_in_flight = sim.max_evacuations_in_flight
        hosts = {s.id: s.host for s in sim.servers}
    span_end = t0 + (result.all_finished or (time.time() - t0))
    counted = [c for c in calls if c.time <= span_end]
    result.nova_requests = len(counted)
    gets = [c for c in counted if c.method == "GET"]
    result.nova_gets = len(gets)
    buckets: dict[int, int] = {}
    for c in gets:
        buckets[int(c.time - t0)] = buckets.get(int(c.time - t0), 0) + 1
    result.peak_gets_per_s = max(buckets.values(), default=0)
    if ends:
        result.last_running = max(ends) - t0
    evacuations = [
        c.time - t0 for c in counted if isinstance(c.body, dict) and "evacuate" in c.body
    ]
    result.first_evacuation = min(evacuations, default=None)
    if TRACE:
        for c in counted:
            what = next(iter(c.body)) if isinstance(c.body, dict) and len(c.body) == 1 else ""
            print(f"  {c.time - t0:8.3f} {c.method} {c.path} {what} -> {c.status}")
    result.moved = sum(1 for host in hosts.values() if host not in failed)


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


HEADER = (
    "mode",
    "last running s",
    "all finished s",
    "bound s",
    "ratio",
    "Nova req/s",
    "GET/s",
    "peak GET/s",
    "max in flight",
    "moved",
)


def row(r: Result) -> list[str]:
    return [
        r.mode,
        _num(r.last_running),
        _num(r.all_finished),
        _num(r.bound),
        _num(r.ratio, ".2f"),
        _num(r.requests_per_s),
        _num(r.gets_per_s),
        str(r.peak_gets_per_s),
        str(r.max_in_flight),
        str(r.moved),
    ]


def markdown(results: list[Result]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row(r)) + " |" for r in results]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=40)
    ap.add_argument("--per-host", type=int, default=50)
    ap.add_argument("--evacuate", default="5,20", help="min,max seconds of one evacuation")
    ap.add_argument("--nova-limit", type=int, default=100, help="evacuations Nova runs at once")
    ap.add_argument(
        "--cap",
        type=int,
        default=None,
        help="max_evacuations_in_flight of the capped mode (--nova-limit)",
    )
    ap.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="factor on evacuation durations (verify_interval stays 1 s)",
    )
    ap.add_argument(
        "--modes",
        default=None,
        help="comma-separated among reference, default, batched, capped "
        "(default: all, the reference when --reference-python is given)",
    )
    ap.add_argument("--reference-python", type=Path, default=None)
    ap.add_argument("--reference-server", type=Path, default=DEFAULT_REFERENCE_SERVER)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--database", default="postgresql", choices=("sqlite", "postgresql"))
    ap.add_argument("--threads", type=int, default=3, help="host_failure_recovery_threads")
    ap.add_argument("--project-bin", type=Path, default=Path(sys.executable).parent)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--trace", action="store_true", help="print each run's Nova calls")
    args = ap.parse_args(argv)
    if args.reference_python is not None:  # the runs start in their own directories
        args.reference_python = args.reference_python.absolute()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    global TRACE
    TRACE = args.trace
    lo, hi = (float(x) for x in args.evacuate.split(","))
    rack = Rack(
        args.hosts,
        args.per_host,
        (lo, hi),
        args.nova_limit,
        args.cap or args.nova_limit,
        args.seed,
        args.time_scale,
    )
    names = (
        [x.strip() for x in args.modes.split(",") if x.strip()]
        if args.modes
        else (["reference"] if args.reference_python else []) + ["default", "batched", "capped"]
    )
    if any(n not in MODES for n in names) or ("reference" in names and not args.reference_python):
        print(f"bad --modes {names} (the reference needs --reference-python)", file=sys.stderr)
        return 2
    own = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="rack-bench-")) if own else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    setup = Setup(
        Timings(scale=1.0),
        args.seed,
        args.threads,
        workdir,
        args.project_bin,
        args.reference_python,
        args.reference_server,
    )
    print(
        f"{rack.hosts} hosts x {rack.per_host} instances, evacuations {rack.delay[0]:g}-"
        f"{rack.delay[1]:g} s, Nova limit {rack.nova_limit}, cap {rack.cap}, seed {rack.seed}, "
        f"{args.database}; "
        f"bound {rack.bound():.1f} s",
        flush=True,
    )
    results = []
    for name in names:
        print(f"running {name} ...", flush=True)
        r = run_one(setup, name, rack, args.database)
        results.append(r)
        print(
            "  "
            + "  ".join(f"{h}={v}" for h, v in zip(HEADER, row(r), strict=True))
            + (f"\n  {r.error}" if r.error else ""),
            flush=True,
        )
    ref = next((r for r in results if r.mode == "reference" and r.last_running), None)
    print()
    print(markdown(results))
    if ref is not None:
        for r in results:
            if r is not ref and r.last_running:
                print(
                    f"{r.mode}: last instance running at {r.last_running / ref.last_running:.2f}"
                    f"x the reference's time, all finished at "
                    f"{(r.all_finished or 0) / (ref.all_finished or 1):.2f}x"
                )
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=2))
    ok = all(r.error is None for r in results)
    if own and ok:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Host-failure recovery time against the real Nova: the project and masakari 22.0.0 side by side.

    .venv/bin/python -m benchmarks.real_recovery [--cloud STATE] [--servers 4] [--stopped 1]
        [--runs 1] [--fast] [--report-at-once] [--flows default,recommended,forced-down]
        [--reference-python .ref-venv/bin/python] [--json FILE] [--keep DIR]

Needs a running cloud (tools/openstack.sh up; STATE defaults to MASAKARI_REAL_OPENSTACK) and
the reference in a virtualenv of its own (``python3 -m venv .ref-venv && .ref-venv/bin/pip
install masakari==22.0.0 PyMySQL psycopg2-binary``, as CI installs it), which runs through the
conformance suite's reference_server.py (API and engine in one process). Both read the same
masakari.conf (tests/support/openstack/masakari.py): keystone auth, Nova found in Keystone's
catalog as the masakari user, SQLite databases; the masakari timings at their defaults
(wait_period_after_service_update 180 s) unless ``--fast`` lowers that one to 15 s (Nova
counts a compute down 10 s after its last heartbeat on this cloud).

Each run of a case: the cloud put back to clean (Cloud.reset), ``--servers`` servers booted on
compute-1 (``--stopped`` of them then stopped), a fresh masakari with a segment of the three
computes, compute-1's nova-compute killed (-9), masakari-monitors' report (COMPUTE_HOST,
STOPPED, host_status NORMAL, cluster_status OFFLINE) posted, then Nova and masakari polled
every 0.5 s. Measured from just before the report's POST:

- first evacuation: the first server Nova shows evacuating (a task_state, another host, or
  an ``evacuate`` instance action);
- all recovered: every server ACTIVE (SHUTOFF for a stopped one) on another host, no
  task_state;
- finished: masakari's GET /notifications/{uuid} answers ``finished``.

Cases (flows), each for the project and the reference unless said:

- default: the report once Nova counts compute-1 down, as a monitor reports after its cluster
  fenced the host; with ``--report-at-once`` also reported right after the kill, while Nova
  still counts the host up: the disable then blocks for Nova's rpc_response_timeout;
- recommended: the project with etc/masakari/masakari.conf.recommended (metrics off),
  reported once Nova counts the host down; the reference has no such settings, its default
  flow is the comparison;
- forced-down: the project with the recommended settings and [host_failure]
  force_down_fenced_host (the drill's), reported at once: the service is forced down, no
  wait; the reference cannot (n/a).

Printed per case: median (min-max) over ``--runs`` of each time, and the load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.openstack.cloud import Cloud  # noqa: E402
from tests.support.openstack.masakari import (  # noqa: E402
    Masakari,
    ReferenceMasakari,
    recommended,
)

REPO = Path(__file__).resolve().parents[1]
FAILED = "compute-1"
POLL = 0.5
FAST_WAIT = 15
# Longest a case may take from the report: the 180 s wait, the 60 s blocked disable, and
# evacuations of a loaded 2-core machine.
TIMEOUT = 600
MEASURES = ("first evacuation", "all recovered", "finished")


@dataclasses.dataclass(frozen=True)
class Case:
    flow: str
    impl: str  # "project" or "reference"
    sections: Mapping[str, Mapping[str, Any]]
    # Reported once Nova counts the host down (a fenced host), else right after the kill.
    wait_down: bool


def cases(flows: list[str], at_once: bool) -> list[Case]:
    made = []
    for flow in flows:
        if flow == "default":
            made += [Case("default", impl, {}, True) for impl in ("project", "reference")]
            if at_once:
                made += [
                    Case("default, reported at once", impl, {}, False)
                    for impl in ("project", "reference")
                ]
        elif flow == "recommended":
            made.append(Case("recommended", "project", recommended(), True))
        elif flow == "forced-down":
            forced = recommended(host_failure={"force_down_fenced_host": True})
            made.append(Case("forced-down hand-off", "project", forced, False))
        else:
            raise SystemExit(f"unknown flow {flow!r}")
    return made


def ordered(todo: list[Case], run: int) -> list[Case]:
    """The cases of one run, each flow's together; which implementation goes first alternates
    from run to run, as the machine's load drifts."""
    flows = list(dict.fromkeys(c.flow for c in todo))
    first = "project" if run % 2 == 0 else "reference"
    return sorted(todo, key=lambda c: (flows.index(c.flow), c.impl != first))


def boot(cloud: Cloud, servers: int, stopped: int) -> dict[str, str]:
    """``servers`` servers on the failing host, the last ``stopped`` of them stopped; the
    status each must have once recovered, by id."""
    ids = [cloud.boot(f"bench-{n}", FAILED, wait=False) for n in range(servers)]
    for server in ids:
        cloud.wait_server(server, lambda s: s["status"] == "ACTIVE", 300)
    expected = {}
    for n, server in enumerate(ids):
        if n >= servers - stopped:
            cloud.nova.post(f"/servers/{server}/action", json={"os-stop": None})
            expected[server] = "SHUTOFF"
        else:
            expected[server] = "ACTIVE"
    for server in [i for i, status in expected.items() if status == "SHUTOFF"]:
        cloud.wait_server(server, lambda s: s["status"] == "SHUTOFF", 120)
    return expected


def deployment(case: Case, cloud: Cloud, state: Path, args: argparse.Namespace) -> Masakari:
    # Defaults, as a deployer runs either; --fast shortens only the post-disable sleep.
    timings = {"wait_period_after_service_update": FAST_WAIT} if args.fast else {}
    if case.impl == "reference":
        return ReferenceMasakari(
            args.reference_python, cloud, state, case.sections, timings=timings
        )
    return Masakari(cloud, state, case.sections, timings=timings)


def evacuating(cloud: Cloud, server: dict[str, Any]) -> bool:
    if server.get("OS-EXT-STS:task_state") or server["OS-EXT-SRV-ATTR:host"] != FAILED:
        return True
    # Between two polls a fake-driver evacuation may start and end: its action stays.
    listed = cloud.nova.get(f"/servers/{server['id']}/os-instance-actions").json()
    return any(a["action"] == "evacuate" for a in listed["instanceActions"])


def recovered(server: dict[str, Any], status: str) -> bool:
    return (
        server["status"] == status
        and server["OS-EXT-SRV-ATTR:host"] != FAILED
        and not server.get("OS-EXT-STS:task_state")
    )


def measure(cloud: Cloud, masakari: Masakari, expected: dict[str, str]) -> dict[str, Any]:
    """Posts the report and polls until every server recovered and the notification ended."""
    found: dict[str, Any] = {}
    started = time.monotonic()
    nid = masakari.report_host_down(FAILED)
    found["report answered"] = time.monotonic() - started
    status = ""
    while time.monotonic() - started < TIMEOUT:
        now = time.monotonic() - started
        servers = {
            s["id"]: s
            for s in cloud.nova.get("/servers/detail?all_tenants=1").json()["servers"]
            if s["id"] in expected
        }
        if "first evacuation" not in found and any(evacuating(cloud, s) for s in servers.values()):
            found["first evacuation"] = now
        if "all recovered" not in found and all(
            recovered(servers[i], st) for i, st in expected.items() if i in servers
        ):
            found["all recovered"] = now
        status = masakari.notification(nid)["status"]
        if status in ("finished", "error", "failed", "ignored"):
            found.setdefault(status, now)
            if "all recovered" in found or status != "finished":
                break
        time.sleep(POLL)
    found["status"] = status
    return found


def run_case(case: Case, cloud: Cloud, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cloud.reset()
    expected = boot(cloud, args.servers, args.stopped)
    state = Path(tempfile.mkdtemp(prefix=f"{case.impl}-", dir=workdir))
    masakari = deployment(case, cloud, state, args)
    load = os.getloadavg()[0]
    masakari.start()
    try:
        masakari.segment("bench", list(cloud.layout.computes))
        killed = time.monotonic()
        cloud.kill_compute(FAILED)
        if case.wait_down:
            cloud.wait_computes([FAILED], "down", timeout=60)
        down = time.monotonic() - killed
        result = measure(cloud, masakari, expected)
    finally:
        masakari.stop()
    result.update(load=load, **({"kill to down": down} if case.wait_down else {}))
    if result["status"] == "finished" and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        result["logs"] = str(state)
    return result


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def table(results: dict[tuple[str, str], list[dict[str, Any]]], flows: list[str]) -> str:
    rows = [
        f"{'flow':<28} {'impl':<10} "
        + " ".join(f"{m + ' s':<22}" for m in MEASURES)
        + f"{'runs':<6} load (1 min)"
    ]

    def row(flow: str, impl: str, runs: list[dict[str, Any]] | None, note: str = "") -> None:
        if runs is None:
            rows.append(
                f"{flow:<28} {impl:<10} " + " ".join(f"{'n/a':<22}" for _ in MEASURES) + note
            )
            return
        cells = [spread([r[m] for r in runs if m in r]) for m in MEASURES]
        ok = sum(r["status"] == "finished" for r in runs)
        loads = spread([r["load"] for r in runs])
        rows.append(
            f"{flow:<28} {impl:<10} "
            + " ".join(f"{c:<22}" for c in cells)
            + f"{ok}/{len(runs):<4} {loads}{note}"
        )

    for flow in flows:
        for impl in ("project", "reference"):
            if (flow, impl) in results:
                row(flow, impl, results[(flow, impl)])
            elif impl == "reference" and flow == "recommended":
                row(flow, impl, results.get(("default", impl)), "  (its default flow)")
            elif impl == "reference":
                row(flow, impl, None, "(no such setting)")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cloud",
        type=Path,
        default=os.environ.get("MASAKARI_REAL_OPENSTACK"),
        help="the running cloud's state directory (MASAKARI_REAL_OPENSTACK)",
    )
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--stopped", type=int, default=1, help="of --servers, stopped ones")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--fast",
        action="store_true",
        help=f"wait_period_after_service_update {FAST_WAIT} s instead of the default 180 s",
    )
    parser.add_argument("--report-at-once", action="store_true")
    parser.add_argument("--flows", default="default,recommended,forced-down")
    parser.add_argument(
        "--reference-python",
        type=Path,
        default=Path(os.environ.get("MASAKARI_REF_PYTHON", REPO / ".ref-venv" / "bin" / "python")),
    )
    parser.add_argument("--json", type=Path, help="every run's figures, written there")
    parser.add_argument("--keep", type=Path, help="keep every run's masakari state and logs")
    args = parser.parse_args(argv)
    if args.cloud is None:
        parser.error("no cloud: --cloud STATE or MASAKARI_REAL_OPENSTACK (tools/openstack.sh up)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cloud = Cloud.load(args.cloud.resolve())
    down = [name for name, pid in cloud.status().items() if pid is None and "compute" not in name]
    if down:
        print(f"the cloud in {args.cloud} is not running: {down}", file=sys.stderr)
        return 1
    flows = args.flows.split(",")
    todo = cases(flows, args.report_at_once)
    if any(c.impl == "reference" for c in todo) and not args.reference_python.exists():
        print(f"no reference at {args.reference_python} (--reference-python)", file=sys.stderr)
        return 1
    wait = FAST_WAIT if args.fast else 180
    print(
        f"wait_period_after_service_update {wait} s ({'--fast' if args.fast else 'the default'}),"
        f" other masakari timings at their defaults; {args.servers} servers on {FAILED}"
        f" ({args.stopped} stopped); Nova rpc_response_timeout "
        f"{cloud.layout.rpc_response_timeout} s; {os.cpu_count()} cores",
        flush=True,
    )
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="real-recovery-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in range(args.runs):
        for case in ordered(todo, run):
            result = run_case(case, cloud, args, workdir)
            results.setdefault((case.flow, case.impl), []).append(result)
            figures = ", ".join(
                f"{k} {v:.1f} s" for k, v in result.items() if isinstance(v, float) and k != "load"
            )
            print(
                f"run {run + 1} {case.flow} / {case.impl}: {result['status']}: {figures}"
                f" (load {result['load']:.1f})"
                + (f" logs {result['logs']}" if "logs" in result else ""),
                flush=True,
            )
    cloud.reset()
    shown = [c.flow for c in todo if c.impl == "project"]
    print()
    print(table(results, list(dict.fromkeys(shown))))
    print("load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "settings": {"wait_period_after_service_update": wait, **vars(args)},
                    "results": {f"{f} / {i}": r for (f, i), r in results.items()},
                },
                indent=2,
                default=str,
            )
        )
    failed = [k for k, runs in results.items() if any(r["status"] != "finished" for r in runs)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

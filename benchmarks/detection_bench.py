"""Report-free detection of a dead host: the failure detector against masakari-monitors.

    .venv/bin/python -m benchmarks.detection_bench [--scale 0.1] [--runs 10] [--hosts 20]
        [--poll 10] [--grace 30] [--report-interval 10] [--down-polls 1]
        [--monitor-interval 60] [--monitor-samples 1] [--db-url URL]

One masakari-engine process with ``[detection] enabled`` (the real command, on a throwaway
SQLite file unless ``--db-url``) watches ``--hosts`` hosts of the Nova simulator, each
nova-compute writing its heartbeat every ``--report-interval`` seconds at a phase of its own
(Nova's ``report_interval``). Each run powers one host off at a random moment (its
heartbeat stops; Nova keeps its last ``updated_at``) and measures, from that moment, until
the detector's notification is in the database. The bound: ``grace + down_polls x poll``
after the last heartbeat, which came at most ``report_interval`` before the power-off.

Beside it, masakari-monitors' host monitor at its defaults (``[host] monitoring_interval``
60 s, ``monitoring_samples`` 1: a report once that many consecutive samples, one per
interval, found the node offline), modelled on the same power-off moments: its loop runs at
a random phase, and pacemaker is taken to see the node offline at once (in a real cluster,
corosync's token timeout and STONITH add to it). What it measures is the monitor's own
polling delay: ``interval x (samples - 1)`` plus the wait for the next sample.

``--scale`` multiplies every time (the detector's, Nova's, the monitor model's) so that the
benchmark is short; the results are given back in unscaled seconds (a fixed cost of a few
tens of milliseconds, the engine's database write and poll start, is scaled up with them:
the scaled runs overstate the detector's delay, never understate it).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from benchmarks.recovery_procs import BenchError, Proc, run_checked, write_conf  # noqa: E402
from masakari.db.database import Database  # noqa: E402
from masakari.db.models import Host, Notification, Segment  # noqa: E402
from tests.fakes.nova import NovaSimulator  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _conf(sim: NovaSimulator, db_url: str, args: Any) -> dict[str, dict[str, Any]]:
    s = args.scale
    return {
        "DEFAULT": {
            "host": "bench",
            "os_privileged_user_name": "engine",
            "os_privileged_user_password": "secret",
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": sim.auth_url,
            "nova_catalog_admin_info": "compute:nova:publicURL",
            "engine_claim_timeout": max(3, round(20 * s)),
            "engine_claim_renew_interval": 5 * s,
            "engine_claim_margin": 5 * s,
        },
        "detection": {
            "enabled": True,
            "poll_interval": args.poll * s,
            "grace_period": args.grace * s,
            "down_polls": args.down_polls,
            # One host at a time: no gate should act.
            "max_reports_per_poll": 0,
        },
        # The detector's report is the figure; recovering it is not measured here.
        "verdict": {"wait": 3600},
        "database": {"connection": db_url},
        "keystone_authtoken": {"auth_type": "password"},
    }


def _cloud(db: Database, sim: NovaSimulator, hosts: int) -> list[str]:
    names = [f"compute-{i}" for i in range(1, hosts + 1)]
    with db.writer() as s:
        s.add(
            Segment(uuid="seg-bench", name="bench", service_type="compute", recovery_method="auto")
        )
        s.flush()
        for i, name in enumerate(names):
            sim.add_service(name)
            s.add(
                Host(
                    uuid=f"host-{i}",
                    name=name,
                    type="COMPUTE",
                    control_attributes="ssh",
                    failover_segment_id="seg-bench",
                )
            )
    return names


def _reported(db: Database, host_uuid: str) -> bool:
    with db.reader() as s:
        found = s.scalar(
            sa.select(Notification.id).where(Notification.source_host_uuid == host_uuid)
        )
    return found is not None


def detector_runs(args: Any, workdir: Path) -> list[tuple[float, float]]:
    """(seconds from power-off to the report, seconds from the last heartbeat), unscaled."""
    db_url = args.db_url or f"sqlite:///{workdir}/masakari.sqlite"
    rng = random.Random(args.seed)
    results = []
    with NovaSimulator(report_interval=args.report_interval * args.scale) as sim:
        conf_file = workdir / "masakari.conf"
        write_conf(conf_file, _conf(sim, db_url, args))
        manage = [sys.executable, "-m", "masakari.cmd.manage", "--config-file", str(conf_file)]
        run_checked([*manage, "db", "sync"], cwd=REPO, timeout=120)
        db = Database.from_url(db_url)
        names = _cloud(db, sim, args.hosts)
        engine = Proc(
            [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
            workdir / "engine.log",
            REPO,
        )
        try:
            # Started, and a few polls in: the detector sees every host up.
            time.sleep(max(3.0, 3 * args.poll * args.scale))
            for run in range(args.runs):
                host = names[run % len(names)]
                time.sleep(rng.uniform(0, args.report_interval * args.scale))
                if not engine.alive():
                    raise BenchError("masakari-engine exited:\n" + engine.tail())
                since_beat = sim.heartbeat_age(host)
                off = time.monotonic()
                sim.power_off(host)
                deadline = off + 10 * (args.grace + args.poll * (args.down_polls + 1)) * args.scale
                while not _reported(db, f"host-{names.index(host)}"):
                    if time.monotonic() > deadline:
                        raise BenchError(f"{host} was not reported:\n" + engine.tail())
                    time.sleep(0.005)
                took = (time.monotonic() - off) / args.scale
                results.append((took, took + since_beat / args.scale))
                sim.power_on(host)
        finally:
            engine.stop(grace=5)
            db.dispose()
    return results


def monitor_model(args: Any, runs: int) -> list[float]:
    """masakari-monitors' host monitor at its loop's random phase: seconds from the node
    going offline to its report, ``samples`` consecutive offline samples needed."""
    rng = random.Random(args.seed + 1)
    interval, samples = args.monitor_interval, args.monitor_samples
    return [rng.uniform(0, interval) + interval * (samples - 1) for _ in range(runs)]


def _row(name: str, values: list[float], bound: str) -> str:
    return (
        f"| {name} | {len(values)} | {min(values):.1f} | {statistics.median(values):.1f} | "
        f"{max(values):.1f} | {bound} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--poll", type=float, default=10.0)
    parser.add_argument("--grace", type=float, default=30.0)
    parser.add_argument("--down-polls", type=int, default=1)
    parser.add_argument("--report-interval", type=float, default=10.0)
    parser.add_argument("--monitor-interval", type=float, default=60.0)
    parser.add_argument("--monitor-samples", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db-url", help="an empty database (default: a SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="detection-") as tmp:
        measured = detector_runs(args, Path(tmp))
    from_off = [m[0] for m in measured]
    from_beat = [m[1] for m in measured]
    model = monitor_model(args, args.runs)
    bound = args.grace + args.down_polls * args.poll
    worst_monitor = args.monitor_interval * args.monitor_samples
    print(
        f"scale {args.scale:g}: poll {args.poll:g} s, grace {args.grace:g} s, down_polls "
        f"{args.down_polls}, Nova report_interval {args.report_interval:g} s, {args.hosts} "
        f"hosts; masakari-monitors {args.monitor_interval:g} s x {args.monitor_samples}"
    )
    print("| detection | runs | min s | median s | max s | bound s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print(_row("detector, from the power-off", from_off, f"{bound:g}"))
    print(_row("detector, from the last heartbeat", from_beat, f"{bound:g}"))
    print(_row("masakari-monitors (model), from offline", model, f"{worst_monitor:g}"))
    # Half a second of real time for the machine (a poll's own requests, scheduling): at a
    # scale of 0.1 it reads as 5 s.
    slack = 0.5 / args.scale
    over = [t for t in from_off if t > bound + slack]
    print(
        f"detector runs over the bound (+{slack:g} s of scaled machine time): "
        f"{len(over)} of {len(from_off)}"
    )
    return 0 if not over else 1


if __name__ == "__main__":
    sys.exit(main())

"""Host fencing's hand-off: report -> power Off confirmed -> first evacuation, beside the
default flow's sleep.

    .venv/bin/python -m benchmarks.fence_bench [--runs 5] [--bmc-delays 0,0.5]
        [--instances 10] [--default-wait 180] [--modes fenced,monitor,default]
        [--load 0] [--warm-session]

One masakari-engine (in this process, on a throwaway SQLite database) recovers a host
failure of the Nova simulator (tests/fakes/nova.py, real clock, Nova's service_down_time
60 s) whose host holds N HA instances; the failure is written as the API writes it and the
engine is woken as the API's wake-up cast does. Modes:

- ``fenced``: host fencing on, the host's one driver an IPMI BMC (pyghmi's BMC server on
  loopback, tests/fakes/ipmi_bmc.py, answering each command after ``--bmc-delays``
  seconds), all [fencing] options at their defaults but the readiness checks: FenceHostTask
  powers the host off, reads it Off, and the service is forced down and evacuated at once.
  The host fails once the engine is up (its IPMI worker process started): the power off
  logs in to the BMC, unless ``--warm-session``, where the readiness check at the engine's
  start (``check_interval`` at its default) made the session first, as in a deployment
  that has run for a while;
- ``monitor``: no host fencing, ``[host_failure] force_down_fenced_host`` on: the same
  hand-off on the monitor's word (no proof), for the cost of the proof;
- ``default``: the reference's flow: disable, sleep ``wait_period_after_service_update``
  (``--default-wait``, 180 s as shipped), then evacuate once Nova sees the host down.

Measured per run, from the report's ``generated_time``: when the power Off was confirmed
(the confirming status read's end, from its fence attempt row), and when the first
evacuation request reached Nova (the simulator's record). The driver time is the sum of the
fence calls' durations (the IPMI driver's calls to its long-lived pyghmi worker, the login
included when the session is made then); the rest is the engine's own: the goal is at most
1 s in all. ``--load N`` runs N processes that burn a CPU each meanwhile (a busy machine).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from masakari import conf as masakari_conf  # noqa: E402
from masakari.db import migration  # noqa: E402
from masakari.db.database import Database  # noqa: E402
from masakari.db.models import FenceAttempt, Host, Notification, Segment  # noqa: E402
from masakari.engine.fencing import HostFencing  # noqa: E402
from masakari.engine.service import EngineService  # noqa: E402
from masakari.fencing import ipmi  # noqa: E402
from tests.fakes.ipmi_bmc import FakeBMC  # noqa: E402
from tests.fakes.nova import NovaSimulator  # noqa: E402

USER, PASSWORD = "admin", "bench-bmc-pw"
FAILED = "compute-0"
SPARES = ("compute-1", "compute-2")


def _utc(epoch: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).replace(tzinfo=None)


def _epoch(value: datetime.datetime) -> float:
    return value.replace(tzinfo=datetime.UTC).timestamp()


def one_run(
    mode: str, bmc_delay: float, instances: int, default_wait: float, warm_session: bool = False
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fence-bench-") as tmp, NovaSimulator() as sim:
        db = Database.from_url(f"sqlite:///{tmp}/masakari.db")
        migration.upgrade(db.engine)
        sim.add_service(FAILED)
        for spare in SPARES:
            sim.add_service(spare)
        for _ in range(instances):
            sim.add_server(host=FAILED, metadata={"HA_Enabled": "True"})
        seg, host = str(uuid.uuid4()), str(uuid.uuid4())
        with db.writer() as s:
            s.add(Segment(uuid=seg, name="bench", service_type="compute", recovery_method="auto"))
            s.add(
                Host(
                    uuid=host,
                    name=FAILED,
                    type="COMPUTE",
                    control_attributes="ssh",
                    failover_segment_id=seg,
                )
            )
        options: dict[str, Any] = {
            **sim.conf_overrides(),
            "wait_period_after_service_update": default_wait,
            "wait_period_after_evacuation": 60,
        }
        bmc = FakeBMC(USER, PASSWORD)
        bmc.delay = bmc_delay
        sim.tie_power(FAILED, bmc)
        if mode == "fenced":
            path = Path(tmp) / "fencing.yaml"
            entry = {
                "driver": "ipmi",
                "address": bmc.address,
                "port": bmc.port,
                "username": USER,
                "password": PASSWORD,
            }
            path.write_text(json.dumps({"version": 1, "hosts": {FAILED: [entry]}}))
            path.chmod(0o600)
            options["fencing.config_file"] = str(path)
            if not warm_session:
                options["fencing.check_interval"] = 0
        elif mode == "monitor":
            options["host_failure.force_down_fenced_host"] = True
        conf = masakari_conf.for_tests(**options)
        engine = EngineService(
            conf, db, sim.client(timeout=30), fencing=HostFencing.from_conf(conf)
        )
        engine.start()
        try:
            if mode == "fenced":
                if not ipmi.SESSIONS.wait_ready(60):
                    raise RuntimeError("the IPMI worker did not start within 60 s")
                if warm_session:
                    _wait_for(lambda: bmc.logins > 0 and "status" in bmc.commands, 60)
            else:
                # The monitor fenced it (monitor mode) or it simply died (default mode).
                bmc.power = "off"
            nid = str(uuid.uuid4())
            reported = time.time()
            with db.writer() as s:
                s.add(
                    Notification(
                        notification_uuid=nid,
                        generated_time=_utc(reported),
                        source_host_uuid=host,
                        type="COMPUTE_HOST",
                        payload=json.dumps(
                            {
                                "event": "STOPPED",
                                "host_status": "NORMAL",
                                "cluster_status": "OFFLINE",
                            }
                        ),
                        status="new",
                        failover_segment_uuid=seg,
                    )
                )
            engine.wake()  # the API's wake-up cast
            deadline = time.monotonic() + default_wait + 120
            first = None
            while first is None and time.monotonic() < deadline:
                evacs = [
                    c.time
                    for c in sim.calls
                    if c.method == "POST" and isinstance(c.body, dict) and "evacuate" in c.body
                ]
                first = min(evacs) if evacs else None
                time.sleep(0.01)
            if first is None:
                raise RuntimeError(f"{mode}: no evacuation within {default_wait + 120:g} s")
            with db.reader() as s:
                rows = s.scalars(
                    sa.select(FenceAttempt).where(FenceAttempt.notification_uuid == nid)
                ).all()
            off_at = None
            driver = 0.0
            for row in rows:
                driver += row.duration or 0.0
                if (row.action, row.result) == ("status", "off"):
                    off_at = _epoch(row.started_at) + (row.duration or 0.0)
            return {
                "mode": mode,
                "bmc_delay": bmc_delay,
                "to_off": None if off_at is None else off_at - reported,
                "to_first_evacuation": first - reported,
                "driver": driver,
                "engine": first - reported - driver,
            }
        finally:
            engine.stop(grace=2)
            bmc.close()
            db.dispose()


def _wait_for(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {timeout:g} s")
        time.sleep(0.01)


@contextlib.contextmanager
def _burning(cpus: int) -> Any:
    """``cpus`` processes spinning meanwhile: the busy machine the hand-off must bear."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpus)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _fmt(values: list[float | None]) -> str:
    real = [v for v in values if v is not None]
    if not real:
        return f"{'-':>15}"
    return f"{statistics.median(real):7.3f} /{max(real):6.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fence_bench")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bmc-delays", default="0,0.5", help="the fake BMC's answer delays (s)")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--default-wait", type=float, default=180.0)
    parser.add_argument("--modes", default="fenced,monitor,default")
    parser.add_argument("--load", type=int, default=0, help="CPU-burning processes meanwhile")
    parser.add_argument(
        "--warm-session",
        action="store_true",
        help="fenced: the readiness check at start logs in first (the default check_interval)",
    )
    args = parser.parse_args(argv)
    # The engine's own log lines (a run stopped once measured) would interleave the table.
    logging.basicConfig(level=logging.ERROR)
    delays = [float(d) for d in args.bmc_delays.split(",")]
    modes = args.modes.split(",")
    print(
        f"{args.instances} instances; {args.runs} run(s) each; {args.load} CPU burner(s); "
        f"session {'warm' if args.warm_session else 'made by the power off'}; "
        "median / max seconds from the report"
    )
    print(
        f"{'mode':8} {'BMC delay':>9} {'-> Off confirmed':>16} {'-> 1st evacuation':>17} "
        f"{'driver calls':>15} {'engine':>15}"
    )
    with _burning(args.load):
        for mode in modes:
            for delay in delays if mode == "fenced" else [0.0]:
                _report(mode, delay, args)
    return 0


def _report(mode: str, delay: float, args: argparse.Namespace) -> None:
    runs = args.runs if mode != "default" else 1
    results = [
        one_run(mode, delay, args.instances, args.default_wait, args.warm_session)
        for _ in range(runs)
    ]
    print(
        f"{mode:8} {delay if mode == 'fenced' else '-':>9} "
        f"{_fmt([r['to_off'] for r in results]):>16} "
        f"{_fmt([r['to_first_evacuation'] for r in results]):>17} "
        f"{_fmt([r['driver'] if mode == 'fenced' else None for r in results]):>15} "
        f"{_fmt([r['engine'] for r in results]):>15}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())

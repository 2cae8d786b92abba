"""Takeover time after an engine dies or freezes mid-recovery, with the default claim options.

    .venv/bin/python -m benchmarks.takeover_bench [--db-url URL] [--runs 2]
        [--faults kill,freeze]

Two masakari-engine processes (A, then B) on one database (default: a throwaway SQLite
file; pass a PostgreSQL or MariaDB URL of an empty database to measure there) and the Nova
simulator. A host failure with 6 instances is posted; once engine A has claimed it and
started evacuating (evacuations take 10 s each), A is killed (SIGKILL) or frozen (SIGSTOP,
released only at the end). Measured from the fault:

- takeover: until engine B owns the claim (polled every 50 ms);
- first Nova call: until engine B's first request reaches Nova;
- recovered: until the notification is ``finished``.

Bounds with the defaults (engine_claim_timeout 20 s, renewal every 5 s, sweep every 5 s):
the claim expires 15 to 20 s after the fault (20 s after the last renewal, which came up to
5 s before it), and another engine takes it at its next sweep: takeover 15 to 25 s.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from benchmarks.recovery_procs import Proc, run_checked, write_conf  # noqa: E402
from masakari.db.database import Database  # noqa: E402
from masakari.db.models import Host, Notification, NotificationClaim, Segment  # noqa: E402
from tests.fakes.nova import NovaSimulator  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
INSTANCES = 6
EVACUATION = 10.0


def _conf(sim: NovaSimulator, db_url: str, user: str) -> dict[str, dict[str, Any]]:
    # Only what points at the simulator and the database: every claim option at its default.
    return {
        "DEFAULT": {
            "host": user,
            "os_privileged_user_name": user,
            "os_privileged_user_password": "secret",
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": sim.auth_url,
            "nova_catalog_admin_info": "compute:nova:publicURL",
            "wait_period_after_service_update": 0,
            "host_failure_recovery_threads": 2,
        },
        "database": {"connection": db_url},
        "keystone_authtoken": {"auth_type": "password"},
    }


def _failure(db: Database, sim: NovaSimulator) -> str:
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    sim.set_evacuate_delay(EVACUATION)
    for _ in range(INSTANCES):
        sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg, host, nid = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    with db.writer() as s:
        s.add(Segment(uuid=seg, name="seg", service_type="compute", recovery_method="auto"))
        s.flush()
        s.add(
            Host(
                uuid=host,
                name="compute-1",
                type="COMPUTE",
                control_attributes="ssh",
                failover_segment_id=seg,
            )
        )
        s.flush()
        s.add(
            Notification(
                notification_uuid=nid,
                generated_time=datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
                source_host_uuid=host,
                type="COMPUTE_HOST",
                payload=json.dumps({"event": "STOPPED", "host_status": "NORMAL"}),
                status="new",
                failover_segment_uuid=seg,
            )
        )
    return nid


def _owner(db: Database, nid: str) -> str:
    with db.reader() as s:
        owner = s.scalar(
            sa.select(NotificationClaim.owner).where(NotificationClaim.notification_uuid == nid)
        )
    return owner or ""


def _status(db: Database, nid: str) -> str:
    with db.reader() as s:
        return str(
            s.scalar(sa.select(Notification.status).where(Notification.notification_uuid == nid))
        )


def _wait(predicate: Any, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.time()
        time.sleep(0.05)
    raise RuntimeError("timed out")


def one_run(db_url: str, fault: str, workdir: Path) -> dict[str, float]:
    db = Database.from_url(db_url)
    with NovaSimulator() as sim:
        conf_file = workdir / "masakari.conf"
        write_conf(conf_file, _conf(sim, db_url, "engine-a"))
        run_checked(
            [
                sys.executable,
                "-m",
                "masakari.cmd.manage",
                "--config-file",
                str(conf_file),
                "db",
                "sync",
            ],
            cwd=REPO,
            timeout=120,
        )
        nid = _failure(db, sim)
        engine_a = Proc(
            [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
            workdir / f"{fault}-a.log",
            REPO,
        )
        b_conf = workdir / "engine-b.conf"
        write_conf(b_conf, _conf(sim, db_url, "engine-b"))
        engine_b: Proc | None = None
        try:
            _wait(
                lambda: any(
                    c.method == "POST" and "evacuate" in (c.body or {})
                    for c in sim.calls_by("engine-a")
                ),
                60,
            )
            engine_b = Proc(
                [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(b_conf)],
                workdir / f"{fault}-b.log",
                REPO,
            )
            time.sleep(2.0)  # B is up and polling before the fault
            fault_at = time.time()
            os.killpg(engine_a.p.pid, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
            taken = _wait(lambda: _owner(db, nid).startswith("engine-b"), 120)
            done = _wait(lambda: _status(db, nid) == "finished", 300)
            first_b = min(c.time for c in sim.calls_by("engine-b"))
        finally:
            try:
                os.killpg(engine_a.p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            engine_a.stop(grace=5)
            if engine_b is not None:
                engine_b.stop(grace=5)
            db.dispose()
    return {
        "takeover": taken - fault_at,
        "first_nova_call": first_b - fault_at,
        "recovered": done - fault_at,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-url", help="an empty database (default: a SQLite file)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--faults", default="kill,freeze")
    args = parser.parse_args()
    print("fault   run  takeover s  first Nova call by B s  recovered s")
    for fault in args.faults.split(","):
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="takeover-") as tmp:
                url = args.db_url or f"sqlite:///{tmp}/masakari.sqlite"
                if args.db_url:
                    _reset(url)
                numbers = one_run(url, fault, Path(tmp))
            print(
                f"{fault:<7} {run + 1:>3}  {numbers['takeover']:>10.1f}  "
                f"{numbers['first_nova_call']:>22.1f}  {numbers['recovered']:>11.1f}",
                flush=True,
            )
    return 0


def _reset(url: str) -> None:
    """Drop every table of the given (throwaway) database, so that each run starts empty."""
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine)
    meta.drop_all(engine)
    engine.dispose()


if __name__ == "__main__":
    sys.exit(main())

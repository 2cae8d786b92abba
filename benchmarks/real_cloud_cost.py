"""What the real control plane costs at rest: resident memory and idle CPU of its processes.

    .venv/bin/python -m benchmarks.real_cloud_cost [--cloud STATE] [--seconds 30]

The processes are those of tools/openstack.sh up (STATE/pids/*.pid: Keystone, Placement,
Glance and nova-api under gunicorn, the neutron stand-in, nova-conductor, nova-scheduler, one
nova-compute per host) and their children (gunicorn workers, oslo.service workers). The
machine's MariaDB and RabbitMQ, shared with whatever else runs there, are left out.

Printed per process and in total: RSS (what ``ps`` shows; shared pages of forked workers
counted in each), PSS (shared pages divided among their sharers: what the processes add to
the machine together), and CPU used over ``--seconds`` with no request made (periodic tasks,
heartbeats every 2 s), as a percentage of one core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.api_bench import rss_mib  # noqa: E402
from benchmarks.metrics_cost import cpu_seconds  # noqa: E402


def pss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def sessions() -> dict[int, list[int]]:
    """Every process's pid by the session it is in."""
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Fields after the command name (which may hold spaces): the session is the 4th.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found.setdefault(int(fields[3]), []).append(int(entry.name))
    return found


def processes(state: Path) -> dict[str, list[int]]:
    """Each control-plane process's pid and its descendants', by name (those running).

    Each process leads a session of its own (processes.start): its session holds its
    workers, which /proc's children lists miss when a thread other than the main one forked
    them (oslo.service's)."""
    by_session = sessions()
    found = {}
    for pid_file in sorted((state / "pids").glob("*.pid")):
        pid = int(pid_file.read_text())
        if pid in by_session:
            found[pid_file.stem] = sorted(by_session[pid])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cloud", type=Path, default=os.environ.get("MASAKARI_REAL_OPENSTACK"), help="STATE"
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    if args.cloud is None:
        parser.error("no cloud: --cloud STATE or MASAKARI_REAL_OPENSTACK")
    procs = processes(args.cloud)
    if not procs:
        print(f"no process of the cloud in {args.cloud} runs", file=sys.stderr)
        return 1
    before = {name: cpu_seconds(pids) for name, pids in procs.items()}
    time.sleep(args.seconds)
    cpu = {name: (cpu_seconds(pids) - before[name]) / args.seconds for name, pids in procs.items()}
    print(f"{'process':<24} {'procs':>5} {'RSS MiB':>9} {'PSS MiB':>9} {'idle CPU %':>11}")
    for name, pids in procs.items():
        print(
            f"{name:<24} {len(pids):>5} {rss_mib(pids):>9.0f} {pss_mib(pids):>9.0f}"
            f" {cpu[name] * 100:>11.1f}"
        )
    everything = [pid for pids in procs.values() for pid in pids]
    print(
        f"{'total':<24} {len(everything):>5} {rss_mib(everything):>9.0f}"
        f" {pss_mib(everything):>9.0f} {sum(cpu.values()) * 100:>11.1f}"
    )
    print(
        f"idle CPU over {args.seconds:.0f} s, % of one core ({os.cpu_count()} cores); "
        "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

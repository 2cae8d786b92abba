"""What Prometheus metrics cost the API: api_bench's scenarios with [metrics] off and on.

    python -m benchmarks.metrics_cost [--pairs 4] [--auth keystone] [--workers 1]
                                      [--requests 400] [--rows 1000] [--concurrency 4]

Each pair runs every scenario of benchmarks/api_bench.py against a fresh masakari-api and
engine with metrics off and against another with metrics on. The order alternates (off
then on, on then off, ...): the Nova simulator and Keystone are shared by all runs, and a
run warms them for the next, as a changing machine load favours whichever side runs in it.

Throughput on a shared machine moves by tens of percent from run to run, whatever the
setting; so each scenario also counts the CPU time masakari-api's processes (gunicorn's
and its worker's) used, per request: what the requests cost, not how long they waited for
a core. The engine is left out: it polls on a timer, so its CPU grows with wall time.

Printed per scenario: the on/off ratio of requests/s of each pair, their median and spread
(1.00 is no cost; below 1 metrics slow the API down), the median ratio of p50 latencies
(off/on, same sense), the median CPU milliseconds per request off and on and their ratio
(on/off: above 1 metrics cost CPU), and the load average when each run started.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any

from benchmarks import api_bench
from tests.fakes.nova import NovaSimulator


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time these processes used so far."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                # Fields after the command name (which may hold spaces): utime is the 12th.
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _measure_with_cpu(
    server: api_bench.Server,
    build: api_bench.Request,
    expected: int,
    requests: int,
    concurrency: int,
    first: int,
) -> dict[str, Any]:
    api = server.procs[0].pid  # masakari-api, started before the engine
    pids = [api, *api_bench.children(api)]
    before = cpu_seconds(pids)
    result = MEASURE(server, build, expected, requests, concurrency, first)
    # measure() sends its warm-up requests first, in the same span.
    sent = requests + min(api_bench.WARMUP, max(3, requests // 10))
    result["cpu_ms"] = (cpu_seconds(pids) - before) * 1000 / sent
    return result


MEASURE = api_bench.measure


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4, help="off/on pairs, order alternating")
    parser.add_argument("--auth", default="keystone")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--requests", type=int, default=400, help="per small scenario")
    parser.add_argument("--rows", type=int, default=1000, help="rows of the big lists")
    parser.add_argument("--concurrency", type=int, default=4)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # api_bench.run() measures each scenario through this module-level name: counting CPU
    # around it leaves api_bench itself as it is.
    api_bench.measure = _measure_with_cpu
    bench_args = api_bench.parse_args(
        [
            f"--requests={args.requests}",
            f"--rows={args.rows}",
            f"--concurrency={args.concurrency}",
        ]
    )
    sim = NovaSimulator().start()
    # Compute services for POST host, as api_bench.main registers them.
    for i in range(bench_args.requests * 6 + bench_args.slow_requests + 200):
        sim.add_service(f"new-{i}")
    pairs: list[dict[str, dict[str, Any]]] = []
    loads: list[str] = []
    try:
        for pair in range(args.pairs):
            order = ("off", "on") if pair % 2 == 0 else ("on", "off")
            results: dict[str, dict[str, Any]] = {}
            for side in order:
                loads.append(f"{side} {os.getloadavg()[0]:.1f}")
                extra = api_bench.METRICS_ON if side == "on" else None
                name = "project+metrics" if side == "on" else "project"
                results[side] = api_bench.run(
                    name, sim, args.auth, args.workers, None, bench_args, extra
                )
            pairs.append(results)
    finally:
        sim.stop()
    for line in report(pairs):
        print(line)
    print(f"\nload average (1 min) at each run start: {', '.join(loads)}")
    return 0


def report(pairs: list[dict[str, dict[str, Any]]]) -> list[str]:
    scenarios = [label for label in pairs[0]["off"] if label != "rss at rest"]
    head = ["scenario", *(f"pair {i + 1}" for i in range(len(pairs)))]
    head += ["median", "min", "max", "p50", "cpu off", "cpu on", "cpu"]
    lines = [
        _row(head),
        _row(["req/s on/off; p50 off/on;"] + [""] * (len(head) - 4) + ["ms", "ms", "on/off"]),
    ]
    every_cpu: list[float] = []
    every: list[float] = []
    for label in scenarios:
        rps = [p["on"][label]["rps"] / p["off"][label]["rps"] for p in pairs]
        p50 = [p["off"][label]["p50"] / p["on"][label]["p50"] for p in pairs]
        every += rps
        cells = [label, *(f"{r:.2f}" for r in rps)]
        cells += [f"{statistics.median(rps):.2f}", f"{min(rps):.2f}", f"{max(rps):.2f}"]
        cpu_off = statistics.median(p["off"][label]["cpu_ms"] for p in pairs)
        cpu_on = statistics.median(p["on"][label]["cpu_ms"] for p in pairs)
        every_cpu += [p["on"][label]["cpu_ms"] / p["off"][label]["cpu_ms"] for p in pairs]
        cells += [f"{statistics.median(p50):.2f}", f"{cpu_off:.1f}", f"{cpu_on:.1f}"]
        lines.append(_row([*cells, f"{cpu_on / cpu_off:.2f}"]))
    lines += ["", _row(["CPU per request, on/off", *(f"pair {i + 1}" for i in range(len(pairs)))])]
    for label in scenarios:
        cpu = [p["on"][label]["cpu_ms"] / p["off"][label]["cpu_ms"] for p in pairs]
        lines.append(_row([label, *(f"{c:.2f}" for c in cpu)]))
    lines.append(
        f"\nall scenarios and pairs: median req/s ratio {statistics.median(every):.2f}, "
        f"{min(every):.2f}-{max(every):.2f}; median CPU ratio on/off "
        f"{statistics.median(every_cpu):.2f}, {min(every_cpu):.2f}-{max(every_cpu):.2f}"
    )
    return lines


def _row(cells: list[str]) -> str:
    return f"{cells[0]:<30}" + "".join(f"{c:>10}" for c in cells[1:])


if __name__ == "__main__":
    sys.exit(main())

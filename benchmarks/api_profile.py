"""Where one API request's time goes: the application in process, keystone auth on.

    python -m benchmarks.api_profile [segments|host|hosts|notifications|create-host]
                                     [--requests 300] [--rows 1000]
                                     [--profiler cprofile|pyinstrument|none]

The application is built as masakari-api builds it from a masakari.conf (the functional
tests' Deployment: SQLite, keystonemiddleware against the Nova simulator's Keystone, the
admin token), without the HTTP server: what is left is the request path itself. Prints
the mean time per request, then the profile (pyinstrument when installed and asked for:
it samples, so its shares are closer to the truth than cProfile's).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import os
import pstats
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from masakari.db import models  # noqa: E402
from tests.support.deployment import Deployment, host_body, segment_body  # noqa: E402

# One request of a scenario: its sequence number -> (method, path, body).
Request = Callable[[int], tuple[str, str, Any]]


def seed(d: Deployment, rows: int) -> dict[str, Request]:
    seg = d.request("POST", "/v1/segments", segment_body("s0")).json["segment"]["uuid"]
    for i in range(2):
        d.request("POST", "/v1/segments", segment_body(f"s{i + 1}"))
    now = datetime.datetime(2026, 1, 1)
    host = str(uuid.uuid4())
    with d.db.writer() as session:
        for i in range(rows):
            session.add(
                models.Host(
                    uuid=host if i == 0 else str(uuid.uuid4()),
                    name=f"h{i}",
                    type="COMPUTE",
                    control_attributes="SSH",
                    failover_segment_id=seg,
                    reserved=False,
                    on_maintenance=False,
                    created_at=now,
                )
            )
            session.add(
                models.Notification(
                    notification_uuid=str(uuid.uuid4()),
                    generated_time=now,
                    source_host_uuid=host,
                    type="PROCESS",
                    payload='{"event": "STOPPED", "process_name": "nova-compute"}',
                    status="finished",
                    failover_segment_uuid=seg,
                    created_at=now,
                )
            )
    # POST host asks the simulator's Nova for the compute service, as a deployment does.
    return {
        "segments": lambda i: ("GET", "/v1/segments", None),
        "host": lambda i: ("GET", f"/v1/segments/{seg}/hosts/{host}", None),
        "hosts": lambda i: ("GET", f"/v1/segments/{seg}/hosts", None),
        "notifications": lambda i: ("GET", "/v1/notifications", None),
        "create-host": lambda i: ("POST", f"/v1/segments/{seg}/hosts", host_body(f"new-{i}")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "path", nargs="?", default="host", help="segments|host|hosts|notifications|create-host"
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--profiler", default="pyinstrument")
    args = parser.parse_args(argv)
    with Deployment() as d:
        build = seed(d, args.rows)[args.path]
        total = 5 + args.requests * 2
        if args.path == "create-host":
            for i in range(total):
                d.sim.add_service(f"new-{i}")
        counter = iter(range(total))

        def run(count: int) -> None:
            for _ in range(count):
                method, path, body = build(next(counter))
                assert d.request(method, path, body).status_int < 300

        run(5)
        start = time.perf_counter()
        run(args.requests)
        mean = (time.perf_counter() - start) / args.requests * 1000
        method, path, _ = build(0)
        print(f"{method} {path}: {mean:.2f} ms per request (no profiler)")
        if args.profiler == "none":
            return 0
        if args.profiler == "pyinstrument":
            try:
                from pyinstrument import Profiler
            except ImportError:
                print("pyinstrument is not installed: cProfile instead", file=sys.stderr)
            else:
                sampler = Profiler(interval=0.0002)
                sampler.start()
                run(args.requests)
                sampler.stop()
                print(sampler.output_text())
                return 0
        profile = cProfile.Profile()
        profile.enable()
        run(args.requests)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())

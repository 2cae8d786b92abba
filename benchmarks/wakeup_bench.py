"""Time from the API's 202 to an engine taking the notification, with and without the
wake-up cast (transport_url), for an engine polling every --poll seconds.

    python benchmarks/wakeup_bench.py [--poll 5] [--count 8]
        [--transport-url rabbit://guest:guest@127.0.0.1:5672/]

In-process: the API as masakari-api builds it (keystone auth against the Nova simulator),
one engine, SQLite. Each notification (a VM failure of an instance of its own) is posted once
the previous one is done and the engine idle again; the time is measured from the 202 to the
first read of its row in another status than new. Printed: p50 and max in ms, per mode.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from masakari.engine.service import EngineService  # noqa: E402
from masakari.ha import notifications as notifications_api  # noqa: E402
from tests.support.deployment import Deployment, host_body, segment_body  # noqa: E402


def measure(transport_url: str | None, poll: float, count: int) -> list[float]:
    default = {
        "engine_poll_interval": poll,
        "notification_delay_max": 0,
        "masakari_topic": f"ha_engine_bench_{uuid.uuid4().hex[:8]}",
    }
    if transport_url:
        default["transport_url"] = transport_url
    with Deployment({"DEFAULT": default}) as dep:
        seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).status_int == 201
        engine = EngineService(dep.conf, dep.db, dep.sim.client(timeout=5), sweep_interval=poll)
        engine.start()
        time.sleep(3)  # past the engine's first round, its listener subscribed
        delays = []
        try:
            for _ in range(count):
                server = dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
                now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
                body = {
                    "notification": {
                        "type": "VM",
                        "hostname": "compute-1",
                        "generated_time": now.isoformat(),
                        "payload": {
                            "event": "LIFECYCLE",
                            "instance_uuid": server,
                            "vir_domain_event": "STOPPED_FAILED",
                        },
                    }
                }
                resp = dep.request("POST", "/v1/notifications", body)
                accepted = time.monotonic()
                assert resp.status_int == 202, resp.text
                nid = resp.json["notification"]["notification_uuid"]
                while notifications_api.get(dep.db, nid).status == "new":
                    time.sleep(0.005)
                delays.append(time.monotonic() - accepted)
                while notifications_api.get(dep.db, nid).status == "running":
                    time.sleep(0.05)
                # The end of a recovery wakes the engine (another notification of the host
                # may wait): post the next one once it is idle again.
                time.sleep(1.0)
        finally:
            engine.stop(grace=2)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poll", type=float, default=5.0)
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--transport-url", default="rabbit://guest:guest@127.0.0.1:5672/")
    args = parser.parse_args()
    for name, url in (("poll only", None), ("with the cast", args.transport_url)):
        delays = [d * 1000 for d in measure(url, args.poll, args.count)]
        print(
            f"{name:>14}: engine_poll_interval {args.poll:g} s, {len(delays)} notifications: "
            f"202 -> taken p50 {statistics.median(delays):.0f} ms, max {max(delays):.0f} ms"
        )


if __name__ == "__main__":
    main()

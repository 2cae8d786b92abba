"""The shapes of the versioned notifications an implementation sends for one scenario.

``record(impl)`` runs the conformance runner (MASAKARI_SHARED_DIR/conformance/run.py) on
data/versioned-notifications.yaml against ``impl`` (``reference`` or ``project``) with
[oslo_messaging_notifications] sending to the RabbitMQ on loopback, on an exchange of its
own, and returns, per event type: how many were sent, their priority, the service that
published them (the publisher id's binary; its host is the machine's name), the payload's
object name, namespace, version, envelope and data keys, the nested FailoverSegment's
object name, version, envelope and data keys, and the data of every message, uuids, ids and
times replaced by placeholders (``values``, sorted: the engine's and the API's messages may
interleave differently).

The reference's shapes are committed in data/reference_notification_shapes.json, made with

    MASAKARI_REF_PYTHON=/work/ref-venv/bin/python \\
        .venv/bin/python -m tests.functional.observability.notification_shapes

(RabbitMQ on 127.0.0.1:5672, guest/guest); test_notification_shapes.py records the
project's the same way and compares.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "data" / "versioned-notifications.yaml"
FIXTURE = HERE / "data" / "reference_notification_shapes.json"
RABBIT_URL = os.environ.get("MASAKARI_TEST_RABBIT_URL", "rabbit://guest:guest@127.0.0.1:5672/")
REPO = HERE.parents[2]


def runner() -> Path:
    shared = Path(os.environ.get("MASAKARI_SHARED_DIR", REPO.parent / "shared"))
    return shared / "conformance" / "run.py"


class _Endpoint:
    def __init__(self) -> None:
        self.received: queue.Queue[tuple[str, str, str, Any]] = queue.Queue()

    def _put(self, priority: str, publisher_id: str, event_type: str, payload: Any) -> None:
        self.received.put((priority, publisher_id, event_type, payload))

    def info(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any):
        self._put("INFO", publisher_id, event_type, payload)

    def warn(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any):
        self._put("WARN", publisher_id, event_type, payload)

    def error(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any):
        self._put("ERROR", publisher_id, event_type, payload)


def _shape(priority: str, publisher_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    data = payload.get("masakari_object.data", {})
    nested = data.get("failover_segment")
    return {
        "priority": priority,
        # "<binary>:<host>": both implementations name the machine alike, the binary is
        # what a consumer routes on.
        "publisher": publisher_id.partition(":")[0],
        "object": payload.get("masakari_object.name"),
        "namespace": payload.get("masakari_object.namespace"),
        "version": payload.get("masakari_object.version"),
        # masakari_object.changes appears where the object had unsaved changes.
        "envelope": sorted(payload),
        "keys": sorted(data),
        "failover_segment": (
            {
                "object": nested.get("masakari_object.name"),
                "version": nested.get("masakari_object.version"),
                "envelope": sorted(nested),
                "keys": sorted(nested.get("masakari_object.data", {})),
            }
            if isinstance(nested, dict)
            else None
        ),
    }


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _placeheld(value: Any, key: str | None = None) -> Any:
    """``value`` with what differs from run to run (uuids, ids, times, tracebacks) replaced."""
    if isinstance(value, dict):
        return {k: _placeheld(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeheld(v) for v in value]
    if key == "traceback" and isinstance(value, str):
        return "<traceback>"
    if key == "id" and isinstance(value, int):
        return "<id>"
    if isinstance(value, str) and _UUID.match(value):
        return "<uuid>"
    if isinstance(value, str) and _TIME.match(value):
        return "<time>" + value[19:]  # what follows the seconds: "Z", or microseconds
    return value


def _values(payload: dict[str, Any]) -> str:
    return json.dumps(_placeheld(payload.get("masakari_object.data", {})), sort_keys=True)


def record(impl: str, timeout: float = 240.0) -> dict[str, dict[str, Any]]:
    """Run the scenario against ``impl``; the shapes of what it sent, by event type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import oslo_messaging
        from oslo_config import cfg

    exchange = f"masakari-shapes-{uuid.uuid4().hex[:8]}"
    conf = cfg.ConfigOpts()
    conf([], project="masakari-shapes", default_config_files=[])
    transport = oslo_messaging.get_notification_transport(conf, url=RABBIT_URL)
    endpoint = _Endpoint()
    listener = oslo_messaging.get_notification_listener(
        transport,
        [oslo_messaging.Target(topic="versioned_notifications", exchange=exchange)],
        [endpoint],
        executor="threading",
        pool=exchange,
    )
    listener.start()
    try:
        with tempfile.TemporaryDirectory(prefix="masakari-shapes-") as tmp:
            scenario = yaml.safe_load(SCENARIO.read_text())
            scenario["config"] = {
                "DEFAULT": {"control_exchange": exchange},
                "oslo_messaging_notifications": {
                    "driver": "messagingv2",
                    "transport_url": RABBIT_URL,
                },
            }
            scenarios = Path(tmp) / "scenarios"
            scenarios.mkdir()
            (scenarios / SCENARIO.name).write_text(yaml.safe_dump(scenario))
            done = subprocess.run(
                [
                    sys.executable,
                    str(runner()),
                    "--impl",
                    impl,
                    "--scenarios",
                    str(scenarios),
                    "--record",
                    str(Path(tmp) / "golden"),
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                # The runner starts masakari-api and masakari-engine from PATH.
                env={
                    **os.environ,
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                },
            )
            if done.returncode != 0:
                raise RuntimeError(f"the runner failed:\n{done.stdout}\n{done.stderr}")
        time.sleep(1.0)  # the last messages' way through the broker
        messages = []
        while True:
            try:
                messages.append(endpoint.received.get(timeout=1.0))
            except queue.Empty:
                break
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
    shapes: dict[str, dict[str, Any]] = {}
    values: dict[str, list[str]] = {}
    for priority, publisher_id, event_type, payload in messages:
        values.setdefault(event_type, []).append(_values(payload))
        shape = _shape(priority, publisher_id, payload)
        if event_type in shapes:
            shapes[event_type]["count"] += 1
            # Every message of a type has the same shape; a differing one is kept apart.
            if {k: v for k, v in shapes[event_type].items() if k != "count"} != shape:
                shapes.setdefault(event_type + " (other shape)", {**shape, "count": 0})
                shapes[event_type + " (other shape)"]["count"] += 1
        else:
            shapes[event_type] = {**shape, "count": 1}
    for event_type, data in values.items():
        shapes[event_type]["values"] = [json.loads(d) for d in sorted(data)]
    return shapes


def main() -> int:
    shapes = record("reference")
    document = {
        "how": (
            "Recorded by tests/functional/observability/notification_shapes.py from masakari "
            "22.0.0 (MASAKARI_REF_PYTHON) running data/versioned-notifications.yaml through "
            "the shared conformance runner, messages read from RabbitMQ"
        ),
        "events": shapes,
    }
    FIXTURE.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    print(f"{len(shapes)} event types written to {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

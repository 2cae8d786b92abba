"""A host failure reported through the API, recovered by the engine, read back through the API."""

from __future__ import annotations

import datetime
import time

from masakari.engine.service import EngineService
from tests.functional.api.support import Deployment, host_body, segment_body

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "3",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}


def test_host_failure_round_trip():
    with Deployment({"DEFAULT": FAST}) as dep:
        dep.sim.power_off("compute-1")
        dep.sim.service_down_time = 0
        vm = dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).status_int == 201
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()
        body = {
            "notification": {
                "type": "COMPUTE_HOST",
                "hostname": "compute-1",
                "generated_time": now,
                "payload": {"event": "STOPPED", "host_status": "NORMAL"},
            }
        }
        resp = dep.request("POST", "/v1/notifications", body)
        assert resp.status_int == 202
        nid = resp.json["notification"]["notification_uuid"]

        engine = EngineService(dep.conf, dep.db, dep.sim.client(timeout=5))
        engine.start()
        try:
            deadline = time.monotonic() + 30
            while True:
                shown = dep.request("GET", f"/v1/notifications/{nid}", version="1.1")
                if shown.json["notification"]["status"] not in ("new", "running"):
                    break
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            engine.stop(grace=2)

        notification = shown.json["notification"]
        assert notification["status"] == "finished"
        details = notification["recovery_workflow_details"]
        assert [(d["name"], d["state"], d["progress"]) for d in details] == [
            ("DisableComputeServiceTask", "SUCCESS", 1.0),
            ("PrepareHAEnabledInstancesTask", "SUCCESS", 1.0),
            ("EvacuateInstancesTask", "SUCCESS", 1.0),
        ]
        assert details[2]["progress_details"][-1]["message"] == "Evacuation process completed!"
        assert details[2]["progress_details"][-1]["progress"] == "1.0"
        moves = dep.request("GET", f"/v1/notifications/{nid}/vmoves", version="1.3").json
        assert [(m["instance_uuid"], m["status"]) for m in moves["vmoves"]] == [(vm, "succeeded")]
        host = dep.request("GET", f"/v1/segments/{seg}/hosts").json["hosts"][0]
        assert host["on_maintenance"] is True
        # The host is on maintenance: the monitor's next report is refused.
        assert dep.request("POST", "/v1/notifications", body).status_int == 409

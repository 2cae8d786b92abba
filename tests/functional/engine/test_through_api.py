"""A host failure reported through the API, recovered by the engine, read back through the API."""

from __future__ import annotations

import datetime

from tests.support.deployment import (
    HOST_DOWN,
    Deployment,
    engine,
    host_down,
    report,
    segment_with_host,
    until_settled,
)

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "3",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}


def test_host_failure_round_trip():
    with Deployment({"DEFAULT": FAST}) as dep:
        host_down(dep)
        vm = dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        seg = segment_with_host(dep)
        nid = report(dep)
        with engine(dep):
            notification = until_settled(dep, nid, version="1.1")

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
        again = {
            "notification": {
                "type": "COMPUTE_HOST",
                "hostname": "compute-1",
                "generated_time": datetime.datetime.now(datetime.UTC)
                .replace(tzinfo=None)
                .isoformat(),
                "payload": HOST_DOWN,
            }
        }
        assert dep.request("POST", "/v1/notifications", again).status_int == 409

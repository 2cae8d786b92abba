"""Host failures through the database against the Nova simulator, one test per method."""

from __future__ import annotations

from tests.functional.engine.conftest import (
    HOST_DOWN,
    add_host,
    add_segment,
    details,
    host_row,
    notify,
    vmoves,
    wait_status,
)


def test_auto_evacuates_every_instance(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    ha = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    plain = sim.add_server(host="compute-1")
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert sim.server(ha)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert sim.server(plain)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert [(a, n, s) for a, n, s, _ in details(db, nid)] == [
        (1, "DisableComputeServiceTask", "SUCCESS"),
        (1, "PrepareHAEnabledInstancesTask", "SUCCESS"),
        (1, "EvacuateInstancesTask", "SUCCESS"),
    ]
    evacuate = details(db, nid)[2][3]
    # HA instances are evacuated first.
    assert evacuate[0].endswith(f"instance uuids are: '{ha},{plain}'")
    assert {v.status for v in vmoves(db, nid)} == {"succeeded"}
    assert host_row(db, h1).on_maintenance
    assert sim.service("compute-1")["status"] == "disabled"

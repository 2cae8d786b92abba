"""Host failures through the database against the Nova simulator, one test per method."""

from __future__ import annotations

from masakari.compute.retry import Policy
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    details,
    host_row,
    make_conf,
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


def _states(db, nid):
    return [(a, n, s) for a, n, s, _ in details(db, nid)]


def test_reserved_host_newest_first_with_aggregates(db, sim, engine_factory):
    conf = make_conf(sim, **{"host_failure.add_reserved_host_to_aggregate": True})
    sim.add_service("compute-1", state="down")
    sim.add_service("reserved-1", status="disabled")
    sim.add_service("reserved-2", status="disabled")
    sim.add_aggregate(1, "agg-a", ["compute-1"])
    sim.add_aggregate(2, "agg-b", ["compute-1", "reserved-2"])
    vm = sim.add_server(host="compute-1", vm_state="error", metadata={"HA_Enabled": "yes"})
    seg = add_segment(db, "reserved_host")
    h1 = add_host(db, seg, "compute-1")
    r1 = add_host(db, seg, "reserved-1", reserved=True)
    r2 = add_host(db, seg, "reserved-2", reserved=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    server = sim.server(vm)
    assert server["OS-EXT-SRV-ATTR:host"] == "reserved-2"
    assert server["OS-EXT-STS:vm_state"] == "error"
    assert not server["locked"]
    assert sim.aggregate(1)["hosts"] == ["compute-1", "reserved-2"]
    assert sim.service("reserved-2")["status"] == "enabled"
    assert sim.service("reserved-1")["status"] == "disabled"
    assert host_row(db, r1).reserved and not host_row(db, r2).reserved
    messages = details(db, nid)[2][3]
    assert "Enabling reserved host: 'reserved-2'" in messages
    assert "Host 'reserved-2' already has been added to aggregate 'agg-b'." in messages


def test_reserved_next_candidate_counts_only_this_attempt(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("reserved-1", status="disabled")
    sim.add_service("reserved-2", status="disabled")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="POST", action="evacuate", times=1)
    seg = add_segment(db, "reserved_host")
    h1 = add_host(db, seg, "compute-1")
    r1 = add_host(db, seg, "reserved-1", reserved=True)
    r2 = add_host(db, seg, "reserved-2", reserved=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    # The reference ends in error here: it counts the failed move of the first candidate.
    assert wait_status(db, nid) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "reserved-1"
    assert [v.status for v in vmoves(db, nid)] == ["failed", "succeeded"]
    assert not host_row(db, r1).reserved and not host_row(db, r2).reserved
    assert _states(db, nid) == [
        (1, "DisableComputeServiceTask", "SUCCESS"),
        (1, "PrepareHAEnabledInstancesTask", "SUCCESS"),
        (1, "EvacuateInstancesTask", "SUCCESS"),
    ]
    evacuate = details(db, nid)[2][3]
    assert evacuate.count("Enabling reserved host: 'reserved-2'") == 1
    assert evacuate[-1] == "Evacuation process completed!"


def test_no_reserved_host_is_an_error(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "reserved_host")
    h1 = add_host(db, seg, "compute-1")
    add_host(db, seg, "reserved-1", reserved=True, on_maintenance=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    assert details(db, nid) == []
    assert host_row(db, h1).on_maintenance


def test_auto_priority_falls_back_to_reserved_host(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("reserved-1", status="disabled")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="GET", path="/servers/detail", times=1)
    seg = add_segment(db, "auto_priority")
    h1 = add_host(db, seg, "compute-1")
    add_host(db, seg, "reserved-1", reserved=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "reserved-1"
    assert _states(db, nid) == [
        (1, "DisableComputeServiceTask", "REVERTED"),
        (1, "PrepareHAEnabledInstancesTask", "REVERTED"),
        (2, "DisableComputeServiceTask", "SUCCESS"),
        (2, "PrepareHAEnabledInstancesTask", "SUCCESS"),
        (2, "EvacuateInstancesTask", "SUCCESS"),
    ]


def test_auto_priority_fallback_ignores_moves_of_the_auto_attempt(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("reserved-1", status="disabled")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.state_fault("never_move", vm, times=1)
    seg = add_segment(db, "auto_priority")
    h1 = add_host(db, seg, "compute-1")
    add_host(db, seg, "reserved-1", reserved=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    # No valid auto destination: the instance never moves, the reserved host then takes it.
    assert wait_status(db, nid) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "reserved-1"
    moves = vmoves(db, nid)
    assert [(v.status, v.message) for v in moves] == [
        ("failed", "Failed reason: timeout."),
        ("succeeded", None),
    ]


def test_rh_priority_without_reserved_host_runs_auto(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "rh_priority")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert [a for a, *_ in details(db, nid)] == [1, 1, 1]


def test_nothing_to_evacuate_finishes_with_reverted_tasks(db, sim, engine_factory):
    conf = make_conf(sim, **{"host_failure.evacuate_all_instances": False})
    sim.add_service("compute-1", state="down")
    sim.add_server(host="compute-1")
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert _states(db, nid) == [
        (1, "DisableComputeServiceTask", "REVERTED"),
        (1, "PrepareHAEnabledInstancesTask", "REVERTED"),
    ]
    assert details(db, nid)[1][3][-1] == (
        "Skipped host 'compute-1' recovery as no instances needs to be evacuated"
    )


def test_rh_nothing_to_evacuate_reads_the_list_per_reserved_host(db, sim, engine_factory):
    conf = make_conf(sim, **{"host_failure.evacuate_all_instances": False})
    sim.add_service("compute-1", state="down")
    sim.add_server(host="compute-1")
    seg = add_segment(db, "reserved_host")
    h1 = add_host(db, seg, "compute-1")
    r1 = add_host(db, seg, "reserved-1", reserved=True)
    add_host(db, seg, "reserved-2", reserved=True)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    lists = [c for c in sim.nova_calls() if c["path"] == "/servers/detail"]
    assert len(lists) == 2
    assert _states(db, nid) == [
        (1, "DisableComputeServiceTask", "SUCCESS"),
        (1, "PrepareHAEnabledInstancesTask", "REVERTED"),
    ]
    assert host_row(db, r1).reserved


def test_evacuation_that_never_arrives_times_out(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    stuck = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    ok = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.state_fault("never_move", stuck)
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    by_instance = {v.instance_uuid: v for v in vmoves(db, nid)}
    assert by_instance[stuck].status == "failed"
    assert by_instance[stuck].message == "Failed reason: timeout."
    assert by_instance[ok].status == "succeeded"
    assert not sim.server(stuck)["locked"]
    assert [s for _, _, s, _ in details(db, nid)] == ["REVERTED"] * 3


def test_nova_error_text_is_recorded_in_the_vmove(db, sim, conf, engine_factory):
    sim.add_service("compute-1")  # still up: Nova refuses the evacuation
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    (move,) = vmoves(db, nid)
    assert move.message.startswith("Invalid input received: ")
    assert "(HTTP 400)" in move.message
    assert not sim.server(vm)["locked"]


def test_instance_states_before_evacuation(db, sim, conf, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    locked = sim.add_server(host="compute-1", locked=True, metadata={"HA_Enabled": "1"})
    paused = sim.add_server(host="compute-1", vm_state="paused", metadata={"HA_Enabled": "1"})
    busy = sim.add_server(host="compute-1", task_state="rebooting", metadata={"HA_Enabled": "1"})
    stopped = sim.add_server(host="compute-1", vm_state="stopped")
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    final = {sid: sim.server(sid) for sid in (locked, paused, busy, stopped)}
    assert {sid: s["OS-EXT-SRV-ATTR:host"] for sid, s in final.items()} == dict.fromkeys(
        final, "compute-2"
    )
    assert final[locked]["locked"] and not final[paused]["locked"]
    assert final[paused]["OS-EXT-STS:vm_state"] == "stopped"
    assert final[busy]["OS-EXT-STS:vm_state"] == "active"
    assert final[stopped]["OS-EXT-STS:vm_state"] == "stopped"
    resets = [
        c for c in sim.nova_calls() if isinstance(c["body"], dict) and "os-resetState" in c["body"]
    ]
    assert {c["path"] for c in resets} == {f"/servers/{paused}/action", f"/servers/{busy}/action"}


def test_force_down_fenced_host_evacuates_without_waiting(db, sim, engine_factory):
    conf = make_conf(
        sim,
        wait_period_after_service_update=600,
        **{"host_failure.force_down_fenced_host": True},
    )
    sim.add_service("compute-1", state="up")  # looks alive to Nova until forced down
    sim.add_service("compute-2")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid, timeout=15) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    puts = [c["body"] for c in sim.nova_calls() if c["method"] == "PUT"]
    assert puts == [
        {"forced_down": True},
        {"status": "disabled", "disabled_reason": "Masakari detected host failed."},
    ]
    assert "Forced down compute service on host: 'compute-1'" in details(db, nid)[0][3]


def test_nova_timeout_ends_in_error(db, sim, engine_factory):
    conf = make_conf(sim, nova_api_timeout=1)
    sim.add_service("compute-1", state="down")
    sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.slow(3, method="GET", path="/servers/detail")
    seg = add_segment(db, "auto")
    h1 = add_host(db, seg, "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf, nova=sim.client(timeout=1, policy=Policy(retries=0)))
    assert wait_status(db, nid, timeout=20) == "error"
    assert details(db, nid)[1][2] == "REVERTED"


def test_evacuations_nova_finds_no_host_for_fail_without_waiting(db, sim, engine_factory):
    """The only other host is disabled: Nova accepts each evacuation and puts the instance
    in error on its host. An active one fails on its state; one that was in error on Nova's
    record of the failed evacuation; both well before wait_period_after_evacuation, and the
    notification ends in error with the instances unlocked where they were."""
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2", status="disabled", disabled_reason="maintenance")
    active = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    broken = sim.add_server(host="compute-1", vm_state="error", metadata={"HA_Enabled": "True"})
    h1 = add_host(db, add_segment(db, "auto"), "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(make_conf(sim, wait_period_after_evacuation=600))
    assert wait_status(db, nid) == "error"
    assert {(v.instance_uuid, v.status, v.message) for v in vmoves(db, nid)} == {
        (active, "failed", f"Failed to evacuate instance {active}"),
        (broken, "failed", f"Failed to evacuate instance {broken}"),
    }
    for server in (active, broken):
        shown = sim.server(server)
        assert (shown["OS-EXT-SRV-ATTR:host"], shown["status"], shown["locked"]) == (
            "compute-1",
            "ERROR",
            False,
        )
    assert [(n, s) for _, n, s, _ in details(db, nid)][-1] == ("EvacuateInstancesTask", "REVERTED")

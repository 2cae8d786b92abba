"""Recovery plans against the simulator: the plan made before a failure predicts what the
engine then does for it (instances, order, targets, left behind), read from what Nova
received and what the database holds."""

from __future__ import annotations

from typing import Any

from masakari import metrics
from masakari.compute.placement import PlacementClient
from masakari.ha import plans
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor
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

SMALL = Flavor("m1.small", vcpus=1, ram=2048, disk=20)
MEDIUM = Flavor("m1.medium", vcpus=2, ram=4096, disk=40)
LARGE = Flavor("m1.large", vcpus=4, ram=8192, disk=80)
# One evacuation at a time: the scheduler then sees them in the plan's order.
AWARE = {
    "host_failure.order_by_priority": True,
    "host_failure.capacity_aware_targets": True,
    "host_failure_recovery_threads": 1,
}


def _plan(sim: NovaSimulator, conf: Any, db: Any, host_uuid: str) -> dict[str, Any]:
    nova = sim.client()
    return plans.for_host(
        conf, db, nova, PlacementClient(nova.session), host_row(db, host_uuid)
    ).view()


def _counted(name: str) -> float:
    """An engine counter (this process's registry), for the scheduler target."""
    metrics.instruments()
    return metrics.OWN.get_sample_value(name, {"target": "scheduler"}) or 0.0


def _evacuations(sim: NovaSimulator) -> list[tuple[str, Any]]:
    """(instance, evacuate body) in the order Nova received them."""
    return [
        (c["path"].split("/")[2], c["body"]["evacuate"])
        for c in sim.nova_calls()
        if c["method"] == "POST" and isinstance(c["body"], dict) and "evacuate" in c["body"]
    ]


def _mixed_failure(sim: NovaSimulator, sized: bool = True) -> dict[str, str]:
    """compute-1 fails with six instances of three flavors; 16 vCPUs needed and, when
    ``sized``, 11 free elsewhere."""
    sim.add_service("compute-1", state="down", vcpus=16)
    sim.add_service("compute-2", vcpus=9 if sized else None)
    sim.add_service("compute-3", vcpus=2 if sized else None)
    vms = {}
    for name, flavor, metadata in [
        ("ha-low", LARGE, {"HA_Enabled": "True", "HA_Priority": "5"}),
        ("plain-high", MEDIUM, {"HA_Priority": "9"}),
        ("ha-none", SMALL, {"HA_Enabled": "True"}),
        ("ha-high", LARGE, {"HA_Enabled": "True", "HA_Priority": "10"}),
        ("plain-none", SMALL, {"HA_Priority": "not a number"}),
        ("plain-big", LARGE, {}),
    ]:
        vms[name] = sim.add_server(host="compute-1", name=name, flavor=flavor, metadata=metadata)
    return vms


def test_auto_plan_predicts_the_recovery(db, sim, engine_factory):
    conf = make_conf(sim, **AWARE)
    vms = _mixed_failure(sim)
    seg = add_segment(db, "auto")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "compute-2")
    add_host(db, seg, "compute-3")

    plan = _plan(sim, conf, db, failed)
    names = {v: k for k, v in vms.items()}
    assert [names[i["instance_id"]] for i in plan["instances"]] == [
        "ha-high",
        "ha-low",
        "ha-none",
        "plain-high",
        "plain-none",
        "plain-big",
    ]
    assert [i["target"] for i in plan["instances"]] == ["scheduler"] * 4 + [None, None]
    assert [names[i] for i in plan["left_behind"]] == ["plain-none", "plain-big"]
    assert plan["verdict"] == "partial"
    assert sim.nova_calls() and not _evacuations(sim)  # the plan changed nothing

    shortfalls = _counted("masakari_capacity_shortfalls_total")
    left = _counted("masakari_instances_left_behind_total")
    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    assert _counted("masakari_capacity_shortfalls_total") == shortfalls + 1
    assert _counted("masakari_instances_left_behind_total") == left + 2
    sent = [i["instance_id"] for i in plan["instances"] if i["target"]]
    assert _evacuations(sim) == [(i, {}) for i in sent]  # same order, scheduler's choice
    rows = {v.instance_uuid: v for v in vmoves(db, nid)}
    assert sorted(i for i, v in rows.items() if v.status == "failed") == sorted(plan["left_behind"])
    assert all(rows[i].status == "succeeded" for i in sent)
    assert "No target has room for" in rows[plan["left_behind"][0]].message
    for instance in plan["left_behind"]:
        assert sim.server(instance)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    messages = details(db, nid)[2][3]
    warning = next(i for i, m in enumerate(messages) if m.startswith("Not enough capacity"))
    assert warning < next(i for i, m in enumerate(messages) if m.startswith("Start evacuation"))


def test_defaults_keep_the_reference_order_and_send_everything(db, sim, engine_factory):
    conf = make_conf(sim, host_failure_recovery_threads=1)
    vms = _mixed_failure(sim, sized=False)
    seg = add_segment(db, "auto")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "compute-2")
    add_host(db, seg, "compute-3")
    plan = _plan(sim, conf, db, failed)
    names = {v: k for k, v in vms.items()}
    # HA first, each group oldest first, as the reference's rows come out
    assert [names[i["instance_id"]] for i in plan["instances"]] == [
        "ha-low",
        "ha-none",
        "ha-high",
        "plain-high",
        "plain-none",
        "plain-big",
    ]
    assert all(i["target"] == "scheduler" for i in plan["instances"])
    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert [i for i, _ in _evacuations(sim)] == [i["instance_id"] for i in plan["instances"]]


def test_reserved_host_that_fits_is_chosen_over_a_full_first_one(db, sim, engine_factory):
    conf = make_conf(sim, **AWARE)
    sim.add_service("compute-1", state="down")
    sim.add_service("spare-small", status="disabled", vcpus=2)
    sim.add_service("spare-big", status="disabled", vcpus=16)
    vms = [
        sim.add_server(host="compute-1", flavor=LARGE, metadata={"HA_Enabled": "True"}),
        sim.add_server(host="compute-1", flavor=MEDIUM, metadata={"HA_Priority": "3"}),
    ]
    seg = add_segment(db, "reserved_host")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "spare-big", reserved=True)
    add_host(db, seg, "spare-small", reserved=True)  # newest: first in the reference's order

    plan = _plan(sim, conf, db, failed)
    assert plan["reserved_hosts"] == ["spare-big", "spare-small"]
    assert [(i["instance_id"], i["target"]) for i in plan["instances"]] == [
        (vms[0], "spare-big"),
        (vms[1], "spare-big"),
    ]
    assert plan["verdict"] == "fits"

    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert _evacuations(sim) == [(vms[0], {"host": "spare-big"}), (vms[1], {"host": "spare-big"})]
    assert sim.service("spare-small")["status"] == "disabled"
    assert {v.dest_host for v in vmoves(db, nid)} == {"spare-big"}


def test_reserved_host_fallback_at_defaults(db, sim, engine_factory):
    """Without capacity_aware_targets the newest spare is tried first even when full: Nova
    fails the evacuation there, and the next spare takes it. The plan lists both attempts."""
    conf = make_conf(sim, host_failure_recovery_threads=1)
    sim.add_service("compute-1", state="down")
    sim.add_service("spare-small", status="disabled", vcpus=2)
    sim.add_service("spare-big", status="disabled", vcpus=16)
    vm = sim.add_server(host="compute-1", flavor=LARGE, metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "reserved_host")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "spare-big", reserved=True)
    add_host(db, seg, "spare-small", reserved=True)
    plan = _plan(sim, conf, db, failed)
    assert plan["reserved_hosts"] == ["spare-small", "spare-big"]
    step = plan["instances"][0]
    assert (step["target"], step["fits"], step["attempts"]) == (
        "spare-big",
        True,
        ["spare-small", "spare-big"],
    )
    assert [(c["host"], c["sent"], c["fits"]) for c in plan["reserved_host_attempts"]] == [
        ("spare-small", [vm], []),
        ("spare-big", [vm], [vm]),
    ]

    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert _evacuations(sim) == [(vm, {"host": h}) for h in step["attempts"]]
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "spare-big"


def _sent_in_order(plan: dict[str, Any]) -> list[tuple[str, Any]]:
    """The evacuations the plan predicts, as Nova should receive them."""
    return [(i, {"host": c["host"]}) for c in plan["reserved_host_attempts"] for i in c["sent"]]


def test_reserved_host_fallback_when_no_spare_holds_everything(db, sim, engine_factory):
    """Aware of capacity, with no spare holding both instances: the first spare takes what
    fits, the flow fails over to the next one for the rest, as the plan says."""
    conf = make_conf(sim, **AWARE)
    sim.add_service("compute-1", state="down")
    sim.add_service("spare-a", status="disabled", vcpus=6)
    sim.add_service("spare-b", status="disabled", vcpus=5)
    vms = [
        sim.add_server(host="compute-1", flavor=LARGE, metadata={"HA_Priority": "9"}),
        sim.add_server(host="compute-1", flavor=LARGE, metadata={"HA_Priority": "1"}),
    ]
    seg = add_segment(db, "reserved_host")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "spare-b", reserved=True)
    add_host(db, seg, "spare-a", reserved=True)

    plan = _plan(sim, conf, db, failed)
    assert plan["reserved_hosts"] == ["spare-a", "spare-b"]
    assert [(i["instance_id"], i["target"], i["attempts"]) for i in plan["instances"]] == [
        (vms[0], "spare-a", ["spare-a"]),
        (vms[1], "spare-b", ["spare-b"]),
    ]
    assert plan["verdict"] == "fits"
    assert "room for 1 of 2" in plan["reserved_host_attempts"][0]["reason"]

    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert _evacuations(sim) == _sent_in_order(plan)
    assert {sim.server(v)["OS-EXT-SRV-ATTR:host"] for v in vms} == {"spare-a", "spare-b"}


def test_reserved_host_without_nova_compute_is_passed_over(db, sim, engine_factory):
    conf = make_conf(sim, host_failure_recovery_threads=1)
    sim.add_service("compute-1", state="down")
    sim.add_service("spare", status="disabled")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = add_segment(db, "reserved_host")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "spare", reserved=True)
    add_host(db, seg, "ghost", reserved=True)  # newest: tried first

    plan = _plan(sim, conf, db, failed)
    attempts = plan["reserved_host_attempts"]
    assert [(c["host"], c["sent"]) for c in attempts] == [("ghost", []), ("spare", [vm])]
    assert "no nova-compute" in attempts[0]["reason"]
    assert plan["instances"][0]["target"] == "spare"

    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert _evacuations(sim) == _sent_in_order(plan) == [(vm, {"host": "spare"})]

"""Ordering groups against the simulator: a later group's first evacuation request reaches
Nova only once every instance of the group before it is ACTIVE on its new host (threads,
the evacuation cap, batched polling), and the plan shows the groups the engine then follows; a group
that does not settle in group_start_timeout lets the next one go, and the progress says so."""

from __future__ import annotations

from typing import Any

import pytest

from masakari.compute.placement import PlacementClient
from masakari.ha import plans
from tests.fakes.nova import NovaSimulator
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

GROUPED = {
    "host_failure.order_in_groups": True,
    # Enough threads to send every evacuation at once, were it not for the groups.
    "host_failure_recovery_threads": 4,
    "wait_period_after_evacuation": 10,
    "verify_interval": 0.2,
}


def _failure(db: Any, sim: NovaSimulator) -> tuple[str, dict[str, str]]:
    """compute-1 fails with db (group 1), two apps (group 2) and a batch job (no group)."""
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    vms = {
        name: sim.add_server(host="compute-1", name=name, metadata=metadata)
        for name, metadata in [
            ("batch", {"HA_Enabled": "True"}),
            ("app-1", {"HA_Group": "2"}),
            ("db", {"HA_Group": "1"}),
            ("app-2", {"HA_Group": "2", "HA_Enabled": "True"}),
        ]
    }
    seg = add_segment(db, "auto")
    failed = add_host(db, seg, "compute-1")
    add_host(db, seg, "compute-2")
    return failed, vms


def _evacuate_times(sim: NovaSimulator) -> dict[str, float]:
    """When Nova received each server's (first) evacuate request."""
    sent: dict[str, float] = {}
    with sim.lock:
        for call in sim.calls:
            if call.method == "POST" and isinstance(call.body, dict) and "evacuate" in call.body:
                sent.setdefault(call.path.split("/")[2], call.time)
    return sent


@pytest.mark.parametrize(
    ("cap", "batched"), [(0, False), (2, False), (0, True)], ids=["threads", "capped", "batched"]
)
def test_a_group_starts_once_the_previous_one_is_active(db, sim, engine_factory, cap, batched):
    sim.set_evacuate_delay(1.5)
    conf = make_conf(
        sim, **GROUPED, max_evacuations_in_flight=cap, evacuation_batched_polling=batched
    )
    failed, vms = _failure(db, sim)
    names = {v: k for k, v in vms.items()}

    plan = plans.for_host(
        conf, db, sim.client(), PlacementClient(sim.client().session), host_row(db, failed)
    ).view()
    assert [(g["group"], [names[i] for i in g["instances"]]) for g in plan["groups"]] == [
        (1, ["db"]),
        (2, ["app-2", "app-1"]),  # HA-enabled first inside the group
        (None, ["batch"]),
    ]
    assert [i["group"] for i in plan["instances"]] == [1, 2, 2, None]

    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    sent = {names[i]: t for i, t in _evacuate_times(sim).items()}
    active = {names[i]: t for i, t in sim.arrivals.items()}
    assert set(active) == set(vms)
    assert min(sent["app-1"], sent["app-2"]) >= active["db"]
    assert sent["batch"] >= max(active["app-1"], active["app-2"])
    # Inside a group the evacuations are sent together, not one after the other.
    assert max(sent["app-1"], sent["app-2"]) < min(active["app-1"], active["app-2"])
    assert {v.status for v in vmoves(db, nid)} == {"succeeded"}
    messages = details(db, nid)[2][3]
    starts = [m for m in messages if m.startswith("Starting ordering")]
    assert starts == [
        f"Starting ordering group 1: '{vms['db']}'",
        f"Starting ordering group 2: '{vms['app-2']},{vms['app-1']}'",
        f"Starting ordering the instances without a group: '{vms['batch']}'",
    ]


def test_the_next_group_goes_when_the_previous_one_times_out(db, sim, engine_factory):
    conf = make_conf(sim, **GROUPED, **{"host_failure.group_start_timeout": 1})
    failed, vms = _failure(db, sim)
    # db's evacuation is accepted and never happens: group 1 never settles.
    sim.state_fault("never_move", vms["db"])
    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    sent = _evacuate_times(sim)
    # After the timeout, well before db's evacuation gives up (10 s).
    assert 1.0 <= sent[vms["app-1"]] - sent[vms["db"]] < 8.0
    assert vms["db"] not in sim.arrivals
    # The apps arrived long before db's evacuation gave up (wait_period_after_evacuation).
    rows = {v.instance_uuid: v for v in vmoves(db, nid)}
    assert rows[vms["db"]].status == "failed"
    assert all(rows[vms[n]].status == "succeeded" for n in ("app-1", "app-2", "batch"))
    assert rows[vms["app-1"]].end_time < rows[vms["db"]].end_time
    messages = details(db, nid)[2][3]
    late = f"Ordering group 1 not settled after 1 s, still evacuating '{vms['db']}': "
    assert late + "starting group 2 anyway" in messages


def test_groups_off_by_default_send_everything_at_once(db, sim, engine_factory):
    # Long enough that a loaded machine still sends all four before the first one arrives.
    sim.set_evacuate_delay(3.0)
    conf = make_conf(sim, host_failure_recovery_threads=4, wait_period_after_evacuation=10)
    failed, vms = _failure(db, sim)
    plan = plans.for_host(
        conf, db, sim.client(), PlacementClient(sim.client().session), host_row(db, failed)
    ).view()
    assert plan["groups"] == [] and plan["options"]["order_in_groups"] is False
    nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    sent = _evacuate_times(sim)
    assert max(sent.values()) < min(sim.arrivals.values())
    assert not any(m.startswith("Starting ordering") for m in details(db, nid)[2][3])

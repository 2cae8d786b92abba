"""The recovery plan is the engine's decision: for failed hosts, instances, metadata and
[host_failure] options drawn at random, the evacuations a plan lists are exactly those the
engine then sends to the simulator, in order, to the same targets; and what the plan says
stays is never evacuated."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from masakari.compute.placement import PlacementClient
from masakari.db import migration
from masakari.db.database import Database
from masakari.engine.service import EngineService
from masakari.ha import plans
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    host_row,
    make_conf,
    notify,
    wait_status,
)

SMALL = Flavor("m1.small", vcpus=1, ram=512, disk=1)
LARGE = Flavor("m1.large", vcpus=3, ram=512, disk=1)
# Enough for CI on a loaded machine (about 3 s an example); raise it locally to dig.
EXAMPLES = 25


@dataclasses.dataclass(frozen=True)
class Vm:
    ha: bool
    priority: str | None
    group: str | None
    project: str
    image: bool
    large: bool
    error: bool


@dataclasses.dataclass(frozen=True)
class World:
    method: str
    vms: list[Vm]
    room: list[int]  # vCPUs of the peer (auto) or of each spare, oldest first
    in_rack_b: bool  # the failed host is in aggregate rack-b
    anti_affinity: int  # the first n instances are in one anti-affinity group (0, 2, 3)
    options: dict[str, Any]


vms = st.builds(
    Vm,
    ha=st.booleans(),
    priority=st.sampled_from([None, "1", "5", "high"]),
    group=st.sampled_from([None, "1", "2"]),
    project=st.sampled_from(["p1", "p2"]),
    image=st.booleans(),
    large=st.booleans(),
    error=st.booleans(),
)

options = st.fixed_dictionaries(
    {
        "host_failure.evacuate_all_instances": st.booleans(),
        "host_failure.ignore_instances_in_error_state": st.booleans(),
        "host_failure.order_by_priority": st.booleans(),
        "host_failure.order_in_groups": st.booleans(),
        "host_failure.capacity_aware_targets": st.booleans(),
        "host_failure.no_shared_storage": st.booleans(),
        "host_failure.check_server_groups": st.booleans(),
        "host_failure.scope_exclude_projects": st.sampled_from([[], ["p2"]]),
        "host_failure.scope_exclude_aggregates": st.sampled_from([[], ["rack-b"]]),
    }
)


@st.composite
def worlds(draw: Any) -> World:
    method = draw(st.sampled_from(["auto", "reserved_host"]))
    spares = 1 if method == "auto" else draw(st.integers(1, 2))
    return World(
        method=method,
        vms=draw(st.lists(vms, min_size=1, max_size=5)),
        room=draw(st.lists(st.sampled_from([1, 3, 4, 8]), min_size=spares, max_size=spares)),
        in_rack_b=draw(st.booleans()),
        anti_affinity=draw(st.sampled_from([0, 2, 3])),
        options=draw(options),
    )


@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    """A migrated SQLite file, copied for each example (migrating takes longer than a run)."""
    folder = Path(tempfile.mkdtemp(prefix="plan-property-"))
    path = folder / "template.db"
    database = Database.from_url(f"sqlite:///{path}")
    migration.upgrade(database.engine)
    database.dispose()
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _build(sim: NovaSimulator, db: Database, world: World) -> tuple[str, dict[str, Vm]]:
    """The cloud and the rows: compute-1 fails; its peer (auto) or its spares take over."""
    sim.add_service("compute-1", state="down", vcpus=64)
    segment = add_segment(db, world.method)
    failed = add_host(db, segment, "compute-1")
    for n, vcpus in enumerate(world.room):
        name = "compute-2" if world.method == "auto" else f"spare-{n}"
        status = "enabled" if world.method == "auto" else "disabled"
        sim.add_service(name, status=status, vcpus=vcpus)
        add_host(db, segment, name, reserved=world.method != "auto")
    sim.add_aggregate(1, "rack-b" if world.in_rack_b else "rack-a", ["compute-1"])
    made: dict[str, Vm] = {}
    for vm in world.vms:
        metadata = {"HA_Enabled": "True"} if vm.ha else {}
        if vm.priority is not None:
            metadata["HA_Priority"] = vm.priority
        if vm.group is not None:
            metadata["HA_Group"] = vm.group
        sid = sim.add_server(
            host="compute-1",
            vm_state="error" if vm.error else "active",
            metadata=metadata,
            tenant_id=vm.project,
            flavor=LARGE if vm.large else SMALL,
            image="img-1" if vm.image else None,
        )
        made[sid] = vm
    if world.anti_affinity and len(made) >= world.anti_affinity:
        sim.add_server_group("anti-affinity", list(made)[: world.anti_affinity])
    return failed, made


def _evacuations(sim: NovaSimulator) -> list[tuple[str, str | None]]:
    """(instance, requested host) in the order Nova received them."""
    return [
        (c["path"].split("/")[2], c["body"]["evacuate"].get("host"))
        for c in sim.nova_calls()
        if c["method"] == "POST" and isinstance(c["body"], dict) and "evacuate" in c["body"]
    ]


def _planned(view: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The evacuations the plan says the engine sends, in order."""
    if view["recovery_method"] == "auto":
        return [(i["instance_id"], None) for i in view["instances"] if i["attempts"]]
    return [(iid, c["host"]) for c in view["reserved_host_attempts"] for iid in c["sent"]]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(world=worlds())
def test_the_plan_is_what_the_engine_sends(template: Path, world: World) -> None:
    folder = Path(tempfile.mkdtemp(prefix="plan-example-"))
    shutil.copy(template, folder / "masakari.db")
    db = Database.from_url(f"sqlite:///{folder / 'masakari.db'}")
    try:
        with NovaSimulator() as sim:
            conf = make_conf(
                sim,
                # One evacuation at a time: Nova then receives them in the engine's order.
                host_failure_recovery_threads=1,
                # The simulator leaves an instance no host has room for where it was: its
                # confirmation gives up after this; and a loaded machine keeps its claim.
                wait_period_after_evacuation=1,
                engine_claim_timeout=60,
                **world.options,
            )
            failed, _made = _build(sim, db, world)
            nova = sim.client()
            view = plans.for_host(
                conf, db, nova, PlacementClient(nova.session), host_row(db, failed)
            ).view()
            assert not _evacuations(sim)  # planning changed nothing
            nid = notify(db, failed, "COMPUTE_HOST", HOST_DOWN)
            engine = EngineService(conf, db, sim.client(timeout=5))
            engine.start()
            try:
                wait_status(db, nid)
            finally:
                engine.stop(grace=2)
            sent = _evacuations(sim)
            assert sent == _planned(view), view
            staying = {i["instance_id"] for i in view["not_evacuated"]}
            assert not staying & {iid for iid, _ in sent}
            for step in view["instances"]:
                if step["fits"] and step["target"] != "scheduler":
                    where = sim.server(step["instance_id"])["OS-EXT-SRV-ATTR:host"]
                    assert where == step["target"]
    finally:
        db.dispose()
        shutil.rmtree(folder, ignore_errors=True)

"""Failover room held in Placement ([capacity] hold_room), against the Nova simulator's
Placement: what each inventory reserves after each step, what the database records, and
what a host failure's recovery then finds."""

from __future__ import annotations

import collections
from typing import Any

import sqlalchemy as sa

from masakari import metrics
from masakari.compute.placement import PlacementClient, ProviderInventory
from masakari.db import room_holds
from masakari.db.database import Database
from masakari.db.models import Notification
from masakari.engine import room, tolerance
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
    wait_for,
    wait_status,
)

LARGE = Flavor("m1.large", vcpus=4, ram=8192, disk=80)
HOSTS = ("h-1", "h-2", "h-3")
HOLD = {"capacity.hold_room": True, "capacity.failures_to_tolerate": 1}


def _cloud(sim: NovaSimulator, db: Database, base: int = 0) -> tuple[str, dict[str, str]]:
    """Three hosts of 8 VCPU, each running one 4-VCPU server: any one fits on the others.
    Returns the segment and the uuids of the hosts (by name) and servers (vm-NAME)."""
    seg = add_segment(db, "auto", name="held")
    hosts = {}
    for name in HOSTS:
        sim.add_service(name, vcpus=8, memory_mb=32768, disk_gb=400)
        hosts[f"vm-{name}"] = sim.add_server(host=name, name=f"vm-{name}", flavor=LARGE)
        hosts[name] = add_host(db, seg, name)
        if base:
            with sim.lock:
                sim.placement.set_reserved(name, "MEMORY_MB", base)
    return seg, hosts


def _reserved(sim: NovaSimulator, host: str, rc: str = "VCPU") -> int:
    with sim.lock:
        rp = sim.placement.by_name(host)
        assert rp is not None
        return rp.inventories[rc].reserved


def _room(sim: NovaSimulator, conf: Any, db: Database, placement: Any = None) -> room.Room:
    nova = sim.client()
    return room.Room(conf, db, nova, placement or PlacementClient(nova.session))


def _hold(sim: NovaSimulator, conf: Any, db: Database, placement: Any = None) -> room.Pass:
    ((seg, hosts),) = tolerance.segments(db)
    return _room(sim, conf, db, placement).hold(seg, hosts)


def _records(db: Database) -> dict[tuple[str, str], tuple[int, int, int | None, int | None]]:
    with db.reader() as session:
        return {
            (r.host_name, r.resource_class): (r.base_reserved, r.held, r.written, r.pending)
            for r in room_holds.rows(session)
        }


def test_the_room_one_failure_needs_is_reserved_and_boots_that_break_it_are_refused(sim, db):
    _cloud(sim, db)
    conf = make_conf(sim, **HOLD)
    done = _hold(sim, conf, db)
    # Each host's failure puts its 4 VCPU (8 GB, 80 GB) on the first other host with room:
    # h-1 fails onto h-2, h-2 and h-3 onto h-1. Nothing needs to stay free on h-3.
    assert done.state == room.HELD
    assert done.held == {
        "h-1": {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80},
        "h-2": {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80},
    }
    assert [_reserved(sim, h) for h in HOSTS] == [4, 4, 0]
    assert _reserved(sim, "h-1", "MEMORY_MB") == 8192
    # Nova's scheduler (the simulator's Placement) refuses a boot into the held room ...
    assert not sim.placement.fits("h-1", LARGE.resources())
    assert not sim.placement.fits("h-2", LARGE.resources())
    # ... and takes one where it leaves the failover room whole.
    assert sim.placement.fits("h-3", LARGE.resources())
    # The room held counts as free for failover: one failure is still tolerated.
    nova = sim.client()
    (found,) = tolerance.of_segments(conf, db, nova, PlacementClient(nova.session))
    assert (found.k, found.target) == (1, 1)
    # A second pass changes nothing in Placement.
    before = sim.placement.by_name("h-1").generation
    assert _hold(sim, conf, db).held == done.held
    assert sim.placement.by_name("h-1").generation == before


def test_turned_off_gives_back_exactly_what_placement_had(sim, db):
    _cloud(sim, db, base=512)  # nova-compute's own reserved_host_memory_mb
    _hold(sim, make_conf(sim, **HOLD), db)
    assert [_reserved(sim, h, "MEMORY_MB") for h in HOSTS] == [8704, 8704, 512]
    assert _records(db)[("h-1", "MEMORY_MB")] == (512, 8192, 8704, None)
    off = make_conf(sim, **{"capacity.failures_to_tolerate": 1})
    passes = _room(sim, off, db).hold_all()
    assert [p.state for p in passes] == [room.OFF]
    assert [_reserved(sim, h, "MEMORY_MB") for h in HOSTS] == [512, 512, 512]
    assert [_reserved(sim, h) for h in HOSTS] == [0, 0, 0]
    assert _records(db) == {}
    # And nothing more is read once nothing is held.
    calls = len(sim.placement.calls)
    assert _room(sim, off, db).hold_all() == []
    assert len(sim.placement.calls) == calls


def test_a_target_lowered_to_zero_gives_the_room_back(sim, db):
    _cloud(sim, db)
    _hold(sim, make_conf(sim, **HOLD), db)
    done = _hold(sim, make_conf(sim, **{"capacity.hold_room": True}), db)
    assert (done.state, done.held) == (room.OFF, {})
    assert [_reserved(sim, h) for h in HOSTS] == [0, 0, 0]


def test_an_amount_nova_compute_wrote_since_becomes_the_base(sim, db):
    _cloud(sim, db)
    conf = make_conf(sim, **HOLD)
    _hold(sim, conf, db)
    # nova-compute refreshes its inventory and writes its own reserved amount back.
    with sim.lock:
        sim.placement.set_reserved("h-2", "MEMORY_MB", 1024)
    _hold(sim, conf, db)
    assert _reserved(sim, "h-2", "MEMORY_MB") == 1024 + 8192
    assert _records(db)[("h-2", "MEMORY_MB")] == (1024, 8192, 9216, None)
    _room(sim, make_conf(sim), db).hold_all()
    assert _reserved(sim, "h-2", "MEMORY_MB") == 1024  # nova-compute's, not the first base


def test_a_write_whose_record_was_lost_is_not_held_twice(sim, db):
    """The engine died after Placement took its write and before it recorded it: the
    pending amount is known as its own."""
    seg, _ = _cloud(sim, db)
    conf = make_conf(sim, **HOLD)
    nova = sim.client()
    placement = PlacementClient(nova.session)
    found = placement.inventory("h-1")
    assert found is not None
    with db.writer() as session:
        assert room_holds.intend(session, seg, "h-1", found.uuid, "VCPU", 0, 4)
    placement.set_reserved(found, "VCPU", 4)  # then killed: no record of the write
    _hold(sim, conf, db)
    assert _reserved(sim, "h-1") == 4
    assert _records(db)[("h-1", "VCPU")] == (0, 4, 4, None)
    # Died before the write: the record's pending amount was never written.
    with db.writer() as session:
        assert room_holds.intend(session, seg, "h-2", found.uuid.replace("a", "b"), "X", 0, 9)
    _room(sim, make_conf(sim), db).hold_all()
    assert [_reserved(sim, h) for h in HOSTS] == [0, 0, 0]
    assert _records(db) == {}


class _Racing:
    """Placement where nova-compute writes the inventory between masakari's read and its
    write, ``times`` times: the write is refused (409) and read again."""

    def __init__(self, sim: NovaSimulator, client: PlacementClient, times: int) -> None:
        self.sim, self.client, self.times = sim, client, times
        self.reads: collections.Counter[str] = collections.Counter()

    def host_capacity(self, name: str) -> Any:
        return self.client.host_capacity(name)

    def inventory(self, name: str) -> ProviderInventory | None:
        self.reads[name] += 1
        return self.client.inventory(name)

    def set_reserved(self, found: ProviderInventory, rc: str, reserved: int) -> int:
        if self.times and rc == "MEMORY_MB":
            self.times -= 1
            with self.sim.lock:
                self.sim.placement.set_reserved(found.name, rc, 1024)
        return self.client.set_reserved(found, rc, reserved)


def test_a_write_refused_for_a_newer_generation_is_read_again(sim, db):
    _cloud(sim, db)
    nova = sim.client()
    racing = _Racing(sim, PlacementClient(nova.session), times=2)
    _hold(sim, make_conf(sim, **HOLD), db, racing)
    assert _reserved(sim, "h-1", "MEMORY_MB") == 1024 + 8192  # on nova-compute's, once
    assert racing.times == 0
    # Each host's inventories read once for its three classes (each write answers with the
    # generation the next one names), and again only after each refused write.
    assert racing.reads == {"h-1": 3, "h-2": 1}
    assert [_reserved(sim, h) for h in HOSTS] == [4, 4, 0]


def test_nothing_is_written_while_a_host_failure_of_the_segment_is_recovered(sim, db):
    seg, hosts = _cloud(sim, db)
    conf = make_conf(sim, **HOLD)
    nid = notify(db, hosts["h-3"], "COMPUTE_HOST", HOST_DOWN)
    with db.writer() as session:
        session.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == nid)
            .values(status="running")
        )
    done = _hold(sim, conf, db)
    assert (done.state, done.released_for) == (room.RELEASED, nid)
    assert [_reserved(sim, h) for h in HOSTS] == [0, 0, 0]
    assert _records(db) == {}
    # Released for a recovery: a holder that judged before is refused at its record.
    with db.writer() as session:
        room_holds.release_for(session, seg, nid)
    with db.writer() as session:
        assert not room_holds.intend(session, seg, "h-1", "p", "VCPU", 0, 4)


def test_a_host_failure_uses_the_room_then_it_is_held_again(sim, db, engine_factory):
    seg, hosts = _cloud(sim, db)
    engine_factory(make_conf(sim, **HOLD, **{"capacity.hold_interval": 5}))
    gauge = {"segment": "held", "resource_class": "VCPU"}
    wait_for(
        lambda: metrics.OWN.get_sample_value("masakari_segment_room_held", gauge) == 8,
        10,
        "room held at the engine's start",
    )
    assert [_reserved(sim, h) for h in HOSTS] == [4, 4, 0]
    # A boot the room allows fills h-3; then h-2's free room is only the held one.
    sim.add_server(host="h-3", name="late", flavor=LARGE)
    sim.power_off("h-1")
    sim.stale("h-1", 120)
    nid = notify(db, hosts["h-1"], "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(db, nid) == "finished"
    # Released first, then evacuated into it: h-1's server runs on h-2.
    moved = sim.server(hosts["vm-h-1"])
    assert (moved["OS-EXT-SRV-ATTR:host"], moved["status"]) == ("h-2", "ACTIVE")
    # Held again once the recovery is over, for what is left: h-2 and h-3 are full, so no
    # failure of either fits anywhere and nothing is held; h-1 is on maintenance.

    def settled() -> bool:
        with db.reader() as session:
            state = room_holds.segment_state(session, seg)
        return state is not None and state.released_for is None

    wait_for(settled, 15, "the release ended")
    assert [_reserved(sim, h) for h in HOSTS] == [0, 0, 0]

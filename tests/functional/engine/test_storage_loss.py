"""Quarantine's storage signal: I/O error reports of several instances of one host, judged by
the engine a lost storage path: quarantined (conservative) or recorded as a host failure and
evacuated (aggressive), per segment; off, every report restarts its instance in place."""

from __future__ import annotations

import datetime
import json
import threading
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.db.models import Notification
from masakari.engine.service import EngineService
from masakari.ha import quarantines
from masakari.metrics import quarantine as quarantine_metrics
from masakari.signals.storage_loss import HOST_FAILURE
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    add_host,
    add_segment,
    make_conf,
    notify,
    quarantine_ended,
    spawn_engine,
    wait_for,
    wait_status,
    with_signals,
    write_engine_conf,
)
from tests.support.fencing_drills import Events

WINDOW = 300
JUDGE = {"quarantine.storage_error_instances": 3, "quarantine.storage_error_window": WINDOW}


def io_error(instance: str) -> dict[str, str]:
    return {"event": "IO_ERROR", "vir_domain_event": "IO_ERROR_REPORT", "instance_uuid": instance}


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def reports(db: Database, host: str, servers: list[str], ages: list[float]) -> list[str]:
    """One I/O error report per server, generated ``ages`` seconds ago."""
    t = now()
    return [
        notify(db, host, "VM", io_error(s), generated_time=t - datetime.timedelta(seconds=age))
        for s, age in zip(servers, ages, strict=True)
    ]


def host_failures(db: Database, host: str) -> list[Notification]:
    with db.reader() as s:
        found = s.scalars(
            sa.select(Notification).where(
                Notification.type == "COMPUTE_HOST", Notification.source_host_uuid == host
            )
        ).all()
        for row in found:
            s.expunge(row)
        return list(found)


def restarts(sim: NovaSimulator) -> list[Any]:
    return [c["body"] for c in sim.nova_calls() if c["body"] in ({"os-stop": None},)]


def judgements(action: str, outcome: str) -> float:
    counter = quarantine_metrics.instruments().storage_judgements
    return counter.labels(action, outcome)._value.get()


@pytest.fixture
def cloud(db: Database, sim: NovaSimulator) -> tuple[str, str, list[str]]:
    """compute-1 with five HA instances, compute-2 empty: (segment, compute-1's uuid,
    servers)."""
    sim.add_service("compute-1")
    sim.add_service("compute-2")
    segment = add_segment(db, name="ceph-racks")
    host = add_host(db, segment, "compute-1")
    add_host(db, segment, "compute-2")
    servers = [sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"}) for _ in range(5)]
    return segment, host, servers


def test_off_every_io_error_restarts_its_instance(
    db: Database, sim: NovaSimulator, engine_factory: Any, cloud: Any
) -> None:
    _, host, servers = cloud
    nids = reports(db, host, servers[:3], [3, 2, 1])
    conf = make_conf(sim, **{"quarantine.enabled": True})
    engine_factory(conf, **with_signals(conf, db))
    assert [wait_status(db, n) for n in nids] == ["finished"] * 3
    assert len(restarts(sim)) == 3
    assert quarantines.list_(db) == [] and host_failures(db, host) == []


def test_conservative_quarantines_the_host_and_moves_its_instances(
    db: Database, sim: NovaSimulator, engine_factory: Any, cloud: Any
) -> None:
    _, host, servers = cloud
    # One report long before the window, then three within it, then one more.
    old = reports(db, host, servers[4:5], [WINDOW + 60])
    nids = reports(db, host, servers[:4], [30, 20, 10, 5])
    requested = judgements("conservative", "requested")
    conf = make_conf(sim, **JUDGE, **{"quarantine.enabled": True, "quarantine.poll_interval": 1})
    engine_factory(conf, **with_signals(conf, db))

    statuses = [wait_status(db, n) for n in old + nids]
    # The first two (and the old one) are restarted in place: too few to judge the host.
    assert statuses == ["finished", "finished", "finished", "ignored", "ignored"]
    assert len(restarts(sim)) == 3
    (row,) = quarantines.list_(db)
    assert (row.source, row.host_name, row.signal) == ("storage", "compute-1", "storage:compute-1")
    assert row.reason.startswith("storage path lost: 3 instances reported I/O errors within 300 s")
    with db.reader() as s:
        message = s.scalars(
            sa.select(Notification.message).where(Notification.notification_uuid == nids[2])
        ).one()
    assert message.startswith("Host compute-1 judged: storage path lost")
    assert f"quarantine {row.uuid} requested" in message
    assert judgements("conservative", "requested") == requested + 1
    assert host_failures(db, host) == []

    # The quarantine runs: every instance live-migrated to compute-2.
    wait_for(
        lambda: quarantines.get(db, row.uuid)[0].status == "done", 60, "the quarantine is done"
    )
    assert {sim.server(s)["OS-EXT-SRV-ATTR:host"] for s in servers} == {"compute-2"}


def test_aggressive_per_segment_records_one_host_failure_that_is_evacuated(
    db: Database, sim: NovaSimulator, engine_factory: Any, cloud: Any
) -> None:
    _, host, servers = cloud
    # Two reports judged at once (the third and the fourth): one host failure, one duplicate.
    nids = reports(db, host, servers[:4], [30, 20, 10, 5])
    conf = make_conf(
        sim,
        **JUDGE,
        **{
            "quarantine.segment_storage_loss_action": {"ceph-racks": "aggressive"},
            # Nova evacuates only from a host it counts down: forced down, as host fencing
            # does once it proved the host off.
            "host_failure.force_down_fenced_host": True,
        },
    )
    wired = with_signals(conf, db)
    events = Events()
    wired["judge_instance"].notifier = events
    engine_factory(conf, **wired)

    statuses = [wait_status(db, n) for n in nids]
    assert statuses == ["finished", "finished", "ignored", "ignored"]
    (failure,) = host_failures(db, host)
    assert json.loads(failure.payload or "") == HOST_FAILURE
    assert wait_status(db, failure.notification_uuid, timeout=60) == "finished"
    assert {sim.server(s)["OS-EXT-SRV-ATTR:host"] for s in servers} == {"compute-2"}
    assert quarantines.list_(db) == []  # quarantine is off: the aggressive action needs none
    # Announced as the API's create announces a monitor's report.
    (created,) = [p for e, p, _ in events.sent if e == "notification.create.end"]
    assert created["masakari_object.data"]["notification_uuid"] == failure.notification_uuid


def test_conservative_with_quarantine_off_restarts_in_place(
    db: Database, sim: NovaSimulator, engine_factory: Any, cloud: Any
) -> None:
    _, host, servers = cloud
    nids = reports(db, host, servers[:3], [3, 2, 1])
    refused = judgements("conservative", "refused")
    conf = make_conf(sim, **JUDGE)
    engine_factory(conf, **with_signals(conf, db))
    assert [wait_status(db, n) for n in nids] == ["finished"] * 3
    assert len(restarts(sim)) == 3
    assert judgements("conservative", "refused") == refused + 1


def _stuck_cloud(
    db: Database, sim: NovaSimulator, room_vcpus: int | None
) -> tuple[str, list[str], str, str]:
    """compute-1 with three instances that live-migrate, one whose live migration Nova fails
    and one stopped (both HA-enabled), compute-2 with ``room_vcpus`` (None: unlimited):
    (compute-1's uuid, the movable, the failing, the stopped)."""
    sim.add_service("compute-1")
    sim.add_service("compute-2", vcpus=room_vcpus)
    segment = add_segment(db, name="ceph-racks")
    host = add_host(db, segment, "compute-1")
    add_host(db, segment, "compute-2")
    ha = {"HA_Enabled": "True"}
    movable = [sim.add_server(host="compute-1", metadata=ha) for _ in range(3)]
    failing = sim.add_server(host="compute-1", metadata=ha)
    stopped = sim.add_server(host="compute-1", metadata=ha, vm_state="stopped")
    sim.fail_live_migrations([failing])
    return host, movable, failing, stopped


FALLBACK = {
    **JUDGE,
    "quarantine.enabled": True,
    "quarantine.poll_interval": 1,
    # Nova evacuates only from a host it counts down (as in the aggressive test above).
    "host_failure.force_down_fenced_host": True,
}


def test_conservative_falls_back_to_a_host_failure_when_the_room_is_there(
    db: Database, sim: NovaSimulator, engine_factory: Any
) -> None:
    host, movable, failing, stopped = _stuck_cloud(db, sim, None)
    reports(db, host, movable, [30, 20, 10])
    conf = make_conf(sim, **FALLBACK)
    engine_factory(conf, **with_signals(conf, db))

    row = wait_for(lambda: next(iter(quarantines.list_(db)), None), 60, "the host judged")
    ended = quarantine_ended(db, row.uuid, timeout=60)
    (failure,) = host_failures(db, host)
    assert ended.status == "superseded", ended.detail
    assert ended.detail.startswith("Some instances stay on the host (3 moved, 1 failed, 1 left).")
    assert f"host failure notification {failure.notification_uuid} recorded" in ended.detail
    assert json.loads(failure.payload or "") == HOST_FAILURE
    assert wait_status(db, failure.notification_uuid, timeout=60) == "finished"
    # Every instance on compute-2, none moved twice: the three by their live migration only
    # (the first two reports restarted theirs in place, before the host was judged), the two
    # left by the evacuation.
    every = [*movable, failing, stopped]
    assert {sim.server(s)["OS-EXT-SRV-ATTR:host"] for s in every} == {"compute-2"}

    def moves(server: str) -> list[str]:
        return [a for a in sim.actions(server) if a in ("os-migrateLive", "evacuate")]

    assert [moves(s) for s in movable] == [["os-migrateLive"]] * 3
    assert moves(failing) == ["os-migrateLive", "evacuate"]
    assert moves(stopped) == ["evacuate"]


def test_conservative_leaves_what_stays_without_the_room(
    db: Database, sim: NovaSimulator, engine_factory: Any
) -> None:
    # compute-2 takes the three that live-migrate and one more: not both left.
    host, movable, failing, stopped = _stuck_cloud(db, sim, 4)
    reports(db, host, movable, [30, 20, 10])
    no_room = quarantine_metrics.instruments().fallbacks.labels("no_room")._value.get()
    conf = make_conf(sim, **FALLBACK)
    engine_factory(conf, **with_signals(conf, db))

    row = wait_for(lambda: next(iter(quarantines.list_(db)), None), 60, "the host judged")
    ended = quarantine_ended(db, row.uuid, timeout=60)
    assert ended.status == "partial", ended.detail
    assert "Not fenced: the recovery of the host would leave 1 of the 2 instance(s)" in (
        ended.detail
    )
    assert host_failures(db, host) == []
    assert sim.service("compute-1")["forced_down"] is False
    assert {sim.server(s)["OS-EXT-SRV-ATTR:host"] for s in (failing, stopped)} == {"compute-1"}
    assert "evacuate" not in sim.actions()
    assert quarantine_metrics.instruments().fallbacks.labels("no_room")._value.get() == no_room + 1


def test_without_the_fallback_what_stays_is_left(
    db: Database, sim: NovaSimulator, engine_factory: Any
) -> None:
    host, movable, failing, stopped = _stuck_cloud(db, sim, None)
    reports(db, host, movable, [30, 20, 10])
    conf = make_conf(sim, **FALLBACK, **{"quarantine.storage_loss_fallback": False})
    engine_factory(conf, **with_signals(conf, db))

    row = wait_for(lambda: next(iter(quarantines.list_(db)), None), 60, "the host judged")
    ended = quarantine_ended(db, row.uuid, timeout=60)
    assert (ended.status, ended.detail) == (
        "partial",
        "Some instances stay on the host (3 moved, 1 failed, 1 left).",
    )
    assert host_failures(db, host) == []
    assert "evacuate" not in sim.actions()


@pytest.mark.parametrize("server_db", ["postgresql", "mysql"], indirect=True)
def test_engines_judging_one_burst_request_one_quarantine(
    server_db: Database, sim: NovaSimulator
) -> None:
    """Four engines take four reports at once: each of the last three judges the host; one
    quarantine is recorded, the two other judgements find it."""
    segment = add_segment(server_db)
    host = add_host(server_db, segment, "compute-1")
    sim.add_service("compute-1")
    servers = [sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"}) for _ in range(4)]
    conf = make_conf(
        sim,
        **{
            "quarantine.storage_error_instances": 2,
            "quarantine.enabled": True,
            "quarantine.poll_interval": 3600,
        },
    )
    db = Database.from_url(server_db.engine.url.render_as_string(hide_password=False))
    engines = [
        EngineService(
            conf,
            db,
            NovaClient(sim.session(), timeout=5),
            sweep_interval=0.3,
            **with_signals(conf, db),
        )
        for _ in range(4)
    ]
    try:
        requested, already = (
            judgements("conservative", "requested"),
            judgements("conservative", "already"),
        )
        nids = reports(server_db, host, servers, [4, 3, 2, 1])
        barrier = threading.Barrier(len(engines))

        def start(engine: EngineService) -> None:
            barrier.wait()
            engine.start()

        threads = [threading.Thread(target=start, args=(e,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = sorted(wait_status(server_db, n) for n in nids)
    finally:
        for engine in engines:
            engine.stop(grace=2)
        db.dispose()
    assert statuses == ["finished", "ignored", "ignored", "ignored"]
    (row,) = quarantines.list_(server_db)
    assert (row.source, row.signal, row.status) == ("storage", "storage:compute-1", "requested")
    assert judgements("conservative", "requested") == requested + 1
    assert judgements("conservative", "already") == already + 2


def test_masakari_engine_wires_the_judgement(
    db: Database, sim: NovaSimulator, cloud: Any, tmp_path: Any
) -> None:
    """masakari-engine (the process, as deployed) gives its runs the storage judge."""
    _, host, servers = cloud
    conf_file = tmp_path / "engine.conf"
    write_engine_conf(conf_file, sim, db.engine.url.render_as_string(hide_password=False))
    with open(conf_file, "a", encoding="utf-8") as fh:
        fh.write(
            "[quarantine]\nenabled = true\npoll_interval = 3600\nstorage_error_instances = 2\n"
        )
    nids = reports(db, host, servers[:2], [2, 1])
    proc = spawn_engine(conf_file, tmp_path / "engine.log")
    try:
        statuses = [wait_status(db, n, timeout=60) for n in nids]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert statuses == ["finished", "ignored"], (tmp_path / "engine.log").read_text()
    (row,) = quarantines.list_(db)
    assert (row.source, row.status) == ("storage", "requested")

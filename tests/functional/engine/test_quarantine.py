"""Quarantines run by the engine against the Nova simulator: the host disabled with its
reason (never forced down), on maintenance, its instances live-migrated a few at a time,
those that cannot move left with the reason, a failed migration, a cancel, a host failure
meanwhile, an engine killed and taken over, and the release. Asserted on what the simulator
(Nova) holds and on the database."""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa

from masakari.cmd import manage
from masakari.db import quarantines as q
from masakari.db.database import Database
from masakari.db.models import Quarantine, QuarantineMove
from masakari.ha import quarantines
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    host_row,
    make_conf,
    notify,
    quarantine_ended,
    wait_for,
    wait_status,
)

SMALL = Flavor("m1.small", vcpus=1, ram=512, disk=1)
ON = {"quarantine.enabled": True, "quarantine.poll_interval": 1}


def _cloud(sim: NovaSimulator, db: Database, servers: int = 3) -> tuple[str, dict[str, str]]:
    seg = add_segment(db, "auto", name="q")
    found: dict[str, str] = {}
    for name in ("q-1", "q-2", "q-3"):
        sim.add_service(name, vcpus=16)
        found[name] = add_host(db, seg, name)
    for n in range(servers):
        found[f"vm-{n}"] = sim.add_server(
            host="q-1", name=f"vm-{n}", flavor=SMALL, metadata={"HA_Enabled": "True"}
        )
    return seg, found


def _get(db: Database, uuid: str) -> tuple[Quarantine, list[QuarantineMove]]:
    return quarantines.get(db, uuid)


def _request(conf: Any, db: Database, host: str) -> Quarantine:
    row, new = quarantines.request(conf, db, host, quarantines.OPERATOR, "ECC storm")
    assert new
    return row


def test_the_host_is_disabled_and_emptied_by_live_migration(sim, db, engine_factory):
    _, ids = _cloud(sim, db)
    conf = make_conf(sim, **ON, **{"quarantine.max_concurrent_migrations": 2})
    sim.set_live_migration_delay(1.0)
    row = _request(conf, db, "q-1")
    engine_factory(conf)
    done = quarantine_ended(db, row.uuid)
    assert done.status == q.DONE, done.detail
    service = sim.service("q-1")
    assert (service["status"], service["forced_down"]) == ("disabled", False)
    assert service["disabled_reason"] == "masakari quarantine: ECC storm"
    assert host_row(db, ids["q-1"]).on_maintenance
    _, moves = _get(db, row.uuid)
    assert {m.status for m in moves} == {q.MOVED}
    for n in range(3):
        server = sim.server(ids[f"vm-{n}"])
        assert server["OS-EXT-SRV-ATTR:host"] in ("q-2", "q-3")
        assert server["status"] == "ACTIVE"
        assert sim.actions(ids[f"vm-{n}"]) == ["os-migrateLive"]
    # Never more than two in flight: the third was sent after one of the first two ended.
    sent = sorted(m.sent_at for m in moves)
    first_end = min(m.ended_at for m in moves)
    assert sent[2] >= first_end
    # Released: enabled again, off maintenance.
    released = quarantines.release(conf, db, sim.client(), row.uuid)
    assert released.status == q.RELEASED
    assert sim.service("q-1")["status"] == "enabled"
    assert not host_row(db, ids["q-1"]).on_maintenance


def test_what_cannot_move_is_left_and_a_failed_migration_said(
    sim, db, engine_factory, tmp_path, capsys
):
    _, ids = _cloud(sim, db)
    stopped = sim.add_server(
        host="q-1",
        name="stopped",
        flavor=SMALL,
        vm_state="stopped",
        metadata={"HA_Enabled": "True"},
    )
    plain = sim.add_server(host="q-1", name="plain", flavor=SMALL)  # not HA-enabled
    sim.fail_live_migrations([ids["vm-1"]])
    # The host-failure rules choose what moves: HA-enabled instances only here.
    conf = make_conf(sim, **ON, **{"host_failure.evacuate_all_instances": False})
    row = _request(conf, db, "q-1")
    engine_factory(conf)
    done = quarantine_ended(db, row.uuid)
    assert done.status == q.PARTIAL
    _, moves = _get(db, row.uuid)
    by_id = {m.server_id: m for m in moves}
    assert by_id[stopped].status == q.LEFT
    assert by_id[stopped].detail == "a live migration needs it ACTIVE or PAUSED; it is SHUTOFF"
    assert (by_id[plain].status, by_id[plain].detail) == (
        q.LEFT,
        "not HA-enabled (evacuate_all_instances is false)",
    )
    assert by_id[ids["vm-1"]].status == q.MOVE_FAILED
    assert "ended error" in (by_id[ids["vm-1"]].detail or "")
    assert sim.server(ids["vm-1"])["OS-EXT-SRV-ATTR:host"] == "q-1"  # still running there
    assert sim.server(stopped)["OS-EXT-SRV-ATTR:host"] == "q-1"
    assert {by_id[ids["vm-0"]].status, by_id[ids["vm-2"]].status} == {q.MOVED}
    assert done.detail == "Some instances stay on the host (2 moved, 1 failed, 2 left)."

    # Its timeline: the phases, and a bar per instance coloured by what became of it.
    conf_file = tmp_path / "manage.conf"
    url = db.engine.url.render_as_string(hide_password=False)
    conf_file.write_text(f"[database]\nconnection = {url}\n")
    page = tmp_path / "quarantine.html"
    argv = ["--config-file", str(conf_file), "quarantine", "show", row.uuid, "--html", str(page)]
    assert manage.main(argv) == 0
    out = capsys.readouterr().out
    assert f"timeline drawn in {page}" in out
    drawn = page.read_text()
    for move in moves:
        assert f'data-id="{move.server_id}" data-result="{move.status}"' in drawn
    assert drawn.count('class="bar instance"') == len(moves) == 5
    for phase in ("requested", "out-of-service", "migrations"):
        assert f'data-id="{phase}" data-result=' in drawn
    assert 'data-id="migrations" data-result="partial"' in drawn


def test_a_host_failure_meanwhile_supersedes_it(sim, db, engine_factory):
    _, ids = _cloud(sim, db, servers=4)
    sim.set_live_migration_delay(3.0)
    conf = make_conf(sim, **ON, **{"quarantine.max_concurrent_migrations": 1})
    row = _request(conf, db, "q-1")
    engine_factory(conf, start=False).quarantines.poll()

    def migrating() -> bool:
        return any(m.status == q.MIGRATING for m in _get(db, row.uuid)[1])

    wait_for(migrating, 10, "a migration in flight")
    nid = notify(db, ids["q-1"], "COMPUTE_HOST", HOST_DOWN)
    done = quarantine_ended(db, row.uuid)
    assert done.status == q.SUPERSEDED
    assert nid in (done.detail or "")
    _, moves = _get(db, row.uuid)
    left = [m for m in moves if m.status == q.LEFT]
    assert len(left) == 3 and all(nid in (m.detail or "") for m in left)
    # Sent once each: the one in flight, nothing after the failure.
    sent = [s for s in ids if s.startswith("vm-") and sim.actions(ids[s])]
    assert len(sent) == 1


def test_an_engine_that_dies_is_taken_over_without_sending_again(sim, db, engine_factory):
    _, ids = _cloud(sim, db, servers=2)
    sim.set_live_migration_delay(2.0)
    conf = make_conf(sim, **ON, **{"quarantine.max_concurrent_migrations": 2})
    row = _request(conf, db, "q-1")
    first = engine_factory(conf, start=False)
    first.quarantines.poll()
    wait_for(
        lambda: (
            all(m.status == q.MIGRATING for m in _get(db, row.uuid)[1])
            and len(_get(db, row.uuid)[1]) == 2
        ),
        10,
        "both sent",
    )
    first.quarantines.stopping.set()  # as dead: it looks no more, its claim runs out
    second = engine_factory(conf)
    done = quarantine_ended(db, row.uuid, timeout=40)
    assert done.status == q.DONE and done.owner is None
    assert second.owner != first.owner
    for n in range(2):
        assert sim.actions(ids[f"vm-{n}"]) == ["os-migrateLive"]  # sent once


def test_an_engine_whose_claim_was_taken_sends_no_more(sim, db, engine_factory):
    """The claim is renewed only every third of it; between renewals each look still reads
    whose it is: another engine's claim stops this one before its next migration."""
    _, ids = _cloud(sim, db, servers=3)
    sim.set_live_migration_delay(5.0)  # the claim changes hands long before it ends
    # A claim of 6 polls of 30 s: renewed every minute, the next renewal far off.
    conf = make_conf(
        sim,
        **{
            "quarantine.enabled": True,
            "quarantine.poll_interval": 30,
            "quarantine.max_concurrent_migrations": 1,
        },
    )
    row = _request(conf, db, "q-1")
    first = engine_factory(conf, start=False)
    first.quarantines.poll()
    wait_for(lambda: sim.actions().count("os-migrateLive") == 1, 10, "the first sent")
    until = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(hours=1)
    with db.writer() as session:
        session.execute(
            sa.update(Quarantine)
            .where(Quarantine.uuid == row.uuid)
            .values(owner="another-engine", lease_until=until)
        )
    wait_for(lambda: not first.quarantines._running, 10, "the first engine's run ended")
    assert sim.actions().count("os-migrateLive") == 1
    taken, _ = _get(db, row.uuid)
    assert (taken.status, taken.owner) == (q.RUNNING, "another-engine")


def test_cancel_sends_no_more(sim, db, engine_factory):
    _, ids = _cloud(sim, db, servers=3)
    sim.set_live_migration_delay(3.0)
    conf = make_conf(sim, **ON, **{"quarantine.max_concurrent_migrations": 1})
    row = _request(conf, db, "q-1")
    engine_factory(conf)
    wait_for(lambda: _get(db, row.uuid)[0].status == q.RUNNING, 10, "running")
    wait_for(lambda: any(m.status == q.MIGRATING for m in _get(db, row.uuid)[1]), 10, "one sent")
    quarantines.cancel(db, row.uuid)
    done = quarantine_ended(db, row.uuid)
    assert done.status == q.CANCELLED
    sent = [n for n in range(3) if sim.actions(ids[f"vm-{n}"])]
    assert len(sent) == 1
    assert sim.service("q-1")["status"] == "disabled"  # until released


def test_a_host_that_fails_mid_quarantine_is_recovered_with_nothing_moved_twice(
    sim, db, engine_factory
):
    """The failure report goes through (the quarantine's maintenance does not hide it), the
    quarantine stops, and the host failure's recovery evacuates what it had not moved."""
    _, ids = _cloud(sim, db, servers=4)
    sim.set_live_migration_delay(1.5)
    conf = make_conf(sim, **ON, **{"quarantine.max_concurrent_migrations": 1})
    row = _request(conf, db, "q-1")
    engine_factory(conf)

    def moved_one() -> bool:
        return any(m.status == q.MOVED for m in _get(db, row.uuid)[1])

    wait_for(moved_one, 15, "one instance moved")
    sim.power_off("q-1")
    sim.stale("q-1", 120)
    nid = notify(db, ids["q-1"], "COMPUTE_HOST", HOST_DOWN)
    assert quarantine_ended(db, row.uuid).status == q.SUPERSEDED
    assert wait_status(db, nid, timeout=60) == "finished"
    nova = sim.client()
    _, moves = _get(db, row.uuid)
    said = {m.server_id: m for m in moves}
    for n in range(4):
        server_id = ids[f"vm-{n}"]
        server = sim.server(server_id)
        assert server["OS-EXT-SRV-ATTR:host"] in ("q-2", "q-3"), (n, server)
        # Moved once: by a live migration that completed, or by the evacuation (a live
        # migration the host's death cut short moved nothing), never both.
        migrated = [m for m in nova.list_migrations(server_id) if m.status == "completed"]
        evacuated = "evacuate" in sim.actions(server_id)
        assert len(migrated) + evacuated == 1, (n, migrated, sim.actions(server_id))
        # And the quarantine says which: moved by it, or left to the recovery.
        assert (said[server_id].status == q.MOVED) == bool(migrated), said[server_id].detail

"""Typed Nova records: a silent nova-compute judged once (Service.looks_down), aggregates,
server groups and migrations."""

from __future__ import annotations

import datetime

import pytest

from masakari.compute import servers
from masakari.compute.servers import Aggregate, Migration, ServerGroup, Service

ASKED = datetime.datetime(2026, 12, 6, 12, 0, 0)


def service(state: str, seconds_ago: float | None) -> Service:
    beat = None if seconds_ago is None else ASKED - datetime.timedelta(seconds=seconds_ago)
    return Service(id="1", host="compute-1", status="enabled", state=state, updated_at=beat)


@pytest.mark.parametrize(
    ("state", "seconds_ago", "down"),
    [
        ("up", 5, False),
        ("up", 30, False),  # the grace itself is not past it
        ("up", 31, True),  # Nova still counts it up: its service_down_time is longer
        ("down", 1, True),  # Nova's word is enough
        ("down", None, True),
        ("up", None, False),  # no heartbeat time: only Nova's state can say
        ("up", -10, False),  # a heartbeat after the question (the answer came late)
    ],
)
def test_looks_down(state: str, seconds_ago: float | None, down: bool) -> None:
    assert service(state, seconds_ago).looks_down(ASKED, grace=30) is down


def test_heartbeat_age_counts_from_the_question() -> None:
    assert service("up", 12.5).heartbeat_age(ASKED) == 12.5
    assert service("up", -3).heartbeat_age(ASKED) == 0.0
    assert service("up", None).heartbeat_age(ASKED) is None


def test_a_server_group_s_policy_before_and_after_compute_2_64() -> None:
    old = ServerGroup.of({"id": 7, "policies": ["anti-affinity"], "members": ["a"]})
    new = ServerGroup.of({"id": "g", "policy": "affinity", "members": ["a", "b"]})
    none = ServerGroup.of({"id": "x", "policies": [], "members": None})
    assert (old.id, old.policy, old.members) == ("7", "anti-affinity", ("a",))
    assert (new.policy, new.members) == ("affinity", ("a", "b"))
    assert (none.policy, none.members) == (None, ())


def test_an_aggregate_keeps_nova_s_id() -> None:
    aggregate = Aggregate.of({"id": 3, "name": "rack-a", "hosts": None})
    assert (aggregate.id, aggregate.name, aggregate.hosts) == (3, "rack-a", ())


# /os-migrations at 2.53 (no uuid before 2.59) and /servers/{id}/migrations, as the real Nova
# 34 answered them.
OS_MIGRATION = {
    "id": 3,
    "source_compute": "compute-1",
    "dest_compute": "compute-2",
    "source_node": "compute-1",
    "dest_node": "compute-2",
    "dest_host": None,
    "old_instance_type_id": 1,
    "new_instance_type_id": 1,
    "instance_uuid": "60724286-da86-4559-99b4-999c01ae1ed2",
    "status": "completed",
    "migration_type": "live-migration",
    "created_at": "2026-12-06T11:58:34.000000",
    "updated_at": "2026-12-06T11:58:35.000000",
}
SERVER_MIGRATION = {
    "id": 4,
    "uuid": "3ac3f6dc-333e-4e9e-855f-7f38d261aea9",
    "server_uuid": "60724286-da86-4559-99b4-999c01ae1ed2",
    "source_compute": "compute-1",
    "dest_compute": None,
    "status": "running",
    "memory_total_bytes": None,
    "created_at": "2026-12-06T11:58:36.000000",
    "updated_at": None,
}


def test_migration_of_os_migrations() -> None:
    m = Migration.of(OS_MIGRATION)
    assert m == Migration(
        id=3,
        uuid=None,
        status="completed",
        migration_type="live-migration",
        source_compute="compute-1",
        dest_compute="compute-2",
        instance_uuid="60724286-da86-4559-99b4-999c01ae1ed2",
        created_at=datetime.datetime(2026, 12, 6, 11, 58, 34),
        updated_at=datetime.datetime(2026, 12, 6, 11, 58, 35),
    )
    assert (m.outcome, m.finished) == (servers.SUCCEEDED, True)


def test_migration_of_a_servers_migrations() -> None:
    m = Migration.of(SERVER_MIGRATION)
    assert (m.id, m.uuid, m.instance_uuid) == (
        4,
        "3ac3f6dc-333e-4e9e-855f-7f38d261aea9",
        "60724286-da86-4559-99b4-999c01ae1ed2",
    )
    assert (m.migration_type, m.dest_compute, m.updated_at) == ("live-migration", None, None)
    assert (m.outcome, m.finished) == (servers.IN_PROGRESS, False)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("accepted", servers.IN_PROGRESS),
        ("queued", servers.IN_PROGRESS),
        ("preparing", servers.IN_PROGRESS),
        ("running", servers.IN_PROGRESS),
        ("post-migrating", servers.IN_PROGRESS),
        ("pre-migrating", servers.IN_PROGRESS),
        ("some-new-status", servers.IN_PROGRESS),  # not over until Nova says so
        ("completed", servers.SUCCEEDED),
        ("done", servers.SUCCEEDED),
        ("confirmed", servers.SUCCEEDED),
        ("error", servers.FAILED),
        ("failed", servers.FAILED),
        ("cancelled", servers.FAILED),
        ("reverted", servers.FAILED),
    ],
)
def test_migration_outcome(status: str, outcome: str) -> None:
    assert Migration.of(dict(OS_MIGRATION, status=status)).outcome == outcome

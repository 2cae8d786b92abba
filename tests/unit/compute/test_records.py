"""Typed Nova records: a silent nova-compute judged once (Service.looks_down), aggregates and
server groups."""

from __future__ import annotations

import datetime

import pytest

from masakari.compute.servers import Aggregate, ServerGroup, Service

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

"""A silent nova-compute, judged once for the detector and the engine (Service.looks_down)."""

from __future__ import annotations

import datetime

import pytest

from masakari.compute.servers import Service

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

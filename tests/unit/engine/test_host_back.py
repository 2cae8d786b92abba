"""The rule [host_failure] retry_only_while_host_down applies: when a failed host is back."""

from __future__ import annotations

import datetime

import pytest

from masakari.compute.servers import Service
from masakari.engine.recovery.host import is_back

ENDED = datetime.datetime(2026, 12, 6, 2, 0, 0)
AFTER = ENDED + datetime.timedelta(seconds=7)
BEFORE = ENDED - datetime.timedelta(seconds=7)


def service(state: str, forced_down: bool, updated_at: datetime.datetime | None) -> Service:
    return Service(
        id="s-1",
        host="compute-1",
        status="disabled",
        state=state,
        forced_down=forced_down,
        updated_at=updated_at,
    )


@pytest.mark.parametrize(
    ("state", "forced_down", "updated_at", "back"),
    [
        # Heartbeating again, Nova counts it up.
        ("up", False, AFTER, True),
        # Forced down by the earlier attempt: Nova says down whatever the host does; a
        # heartbeat after that attempt is the proof.
        ("down", True, AFTER, True),
        # Still silent.
        ("down", False, BEFORE, False),
        # Down by Nova's own count: a write after the attempt was no heartbeat of a live
        # nova-compute (an operator's change of the row, say).
        ("down", False, AFTER, False),
        # Nova has not counted it down yet, but its last heartbeat is from before the
        # earlier attempt ended: dead, only not noticed.
        ("up", False, BEFORE, False),
        # Forced down and no write since: the attempt's own force down moved updated_at
        # (Nova moves it on every change of the row), before the attempt ended.
        ("down", True, BEFORE, False),
        ("down", True, ENDED, False),
        # Nova gave no readable heartbeat: nothing proves the host back.
        ("up", False, None, False),
        ("down", True, None, False),
    ],
)
def test_back(
    state: str, forced_down: bool, updated_at: datetime.datetime | None, back: bool
) -> None:
    assert is_back(service(state, forced_down, updated_at), ENDED) is back

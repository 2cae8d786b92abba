"""The one judgement of when fence_kdump messages prove a crash (masakari.engine.kdump_proof):
the window (after the report reached masakari and after the host's last heartbeat) and the
count of spaced messages an entry wants."""

from __future__ import annotations

import datetime

import pytest

from masakari.engine.kdump_proof import Window, counts_after, proven_at
from masakari.fencing.base import DriverSpec
from masakari.fencing.kdump import KdumpRule

REPORTED = datetime.datetime(2026, 6, 1, 10, 0, 0)


def at(seconds: float) -> datetime.datetime:
    return REPORTED + datetime.timedelta(seconds=seconds)


def test_the_window_opens_when_the_report_reached_masakari() -> None:
    window = counts_after(REPORTED, at(-40))  # the heartbeat stopped before the report
    assert window.after == REPORTED
    assert "report reached masakari" in window.why


def test_a_heartbeat_after_the_report_moves_the_window() -> None:
    # The host heartbeated after the report: whatever came before that came from a host
    # that was running after it.
    window = counts_after(REPORTED, at(25))
    assert window.after == at(25)
    assert "last heartbeat" in window.why


def test_without_a_heartbeat_the_report_bounds_the_window() -> None:
    assert counts_after(REPORTED, None).after == REPORTED


@pytest.mark.parametrize(
    ("received", "messages", "interval", "proven", "counted"),
    [
        ((), 1, 10, None, 0),
        ((-5, -0.001), 1, 10, None, 0),  # before the report: forged ahead, or an old crash's
        ((0,), 1, 10, None, 0),  # at the report's instant is not after it
        ((-5, 3), 1, 10, 3, 1),
        ((3, 1), 1, 10, 1, 1),  # the first to come, whatever the order given
        ((1, 2, 3, 4), 2, 10, None, 1),  # one burst: 3 s apart at most, 5 wanted
        ((1, 2, 6), 2, 10, 6, 2),  # 6 is 5 s after 1
        ((1, 11, 21), 3, 10, 21, 3),
        ((1, 11), 3, 10, None, 2),
        ((1, 1.5, 2), 2, 2, 2, 2),  # fence_kdump_send -i 2: 1 s apart is enough
    ],
)
def test_proven_at_wants_the_messages_spaced(received, messages, interval, proven, counted) -> None:
    rule = KdumpRule(messages=messages, interval=interval)
    window = Window(REPORTED, "the report")
    found = proven_at([at(s) for s in received], window, rule)
    assert found == (None if proven is None else at(proven), counted)


def test_the_rule_of_an_entry() -> None:
    assert KdumpRule.of(DriverSpec("kdump", address="a")) == KdumpRule(1, 10.0)
    spec = DriverSpec("kdump", address="a", options={"messages": "3", "interval": "4"})
    rule = KdumpRule.of(spec)
    assert (rule.messages, rule.interval, rule.spacing) == (3, 4.0, 2.0)
    assert rule.short_wait(12) is None
    assert "shorter than messages x interval (3 x 4 s = 12 s)" in (rule.short_wait(11) or "")

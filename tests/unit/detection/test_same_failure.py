"""A host that looks down is still in the failure last reported until it heartbeats again
(masakari/db/watch.py same_failure)."""

from __future__ import annotations

import datetime

from masakari.db.watch import same_failure

REPORTED = datetime.datetime(2026, 1, 1, 12, 0, 0)


def at(seconds: float) -> datetime.datetime:
    return REPORTED + datetime.timedelta(seconds=seconds)


def test_silent_since_the_report_is_that_failure_a_heartbeat_after_it_is_not() -> None:
    assert same_failure(REPORTED, at(-40))
    assert same_failure(REPORTED, REPORTED)
    assert not same_failure(REPORTED, at(5))


def test_a_service_that_never_heartbeated_stays_in_its_reported_failure() -> None:
    assert same_failure(REPORTED, None)
    assert not same_failure(None, None)
    assert not same_failure(None, at(-40))

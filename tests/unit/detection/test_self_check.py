"""The detector's self-check: what it cannot reach makes the poll blind, and it says why."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import conf as masakari_conf
from masakari import metrics
from masakari.detection.detector import Detector
from masakari.engine.lease import Lease
from tests.fakes.nova import NovaSimulator
from tests.support.clock import FakeClock


class HeldLease:
    owner = "engine-a"
    storm_until = None
    database_failed = False
    renew_interval = 1.0

    def current(self) -> Lease:
        return Lease("engine-a", 1, FakeClock(), 100.0, 0.0)


class Unreachable:
    """A database whose every session fails as a cut connection does."""

    @contextlib.contextmanager
    def reader(self) -> Any:
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("server closed the connection"))
        yield


def probe_ok() -> None:
    pass


def probe_down() -> None:
    raise ConnectionError("keystone is away")


def blind(reason: str) -> float | None:
    return metrics.OWN.get_sample_value("masakari_detection_blind", {"reason": reason})


@pytest.mark.parametrize(
    ("probe", "nova_fails", "reason"),
    [(probe_down, False, "keystone"), (probe_ok, True, "nova"), (probe_ok, False, "database")],
)
def test_a_poll_that_cannot_reach_something_is_blind_and_says_what(
    probe, nova_fails, reason
) -> None:
    conf = masakari_conf.for_tests(**{"detection.enabled": True})
    sim = NovaSimulator()  # not started: answers in process
    if nova_fails:
        sim.fail(500, path="/os-services")
    detector = Detector(conf, Unreachable(), sim.client(), HeldLease(), probe, FakeClock())  # type: ignore[arg-type]
    before = metrics.OWN.get_sample_value("masakari_detection_polls_total", {"result": "blind"})
    detector.poll()
    assert {r: blind(r) for r in ("keystone", "nova", "database")} == {
        r: (1.0 if r == reason else 0.0) for r in ("keystone", "nova", "database")
    }
    after = metrics.OWN.get_sample_value("masakari_detection_polls_total", {"result": "blind"})
    assert after == (before or 0) + 1
    # Keystone is asked first: a controller cut off from it does not even ask Nova.
    assert len(sim.nova_calls()) == (0 if reason == "keystone" else 1)

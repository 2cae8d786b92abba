"""What the detector in shadow mode records of a poll's outcome: each host found down with
the decision and the gate that made it (masakari/detection/shadow.py)."""

from __future__ import annotations

import pytest

from masakari.detection.gates import BREAKER, CAP, CLIFF, STORM, Outcome, Seen
from masakari.detection.shadow import decisions

A, B = Seen("h1", "seg", True), Seen("h2", "seg", True)


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (Outcome(report=[A]), [("h1", "report", None)]),
        (
            Outcome(report=[A], deferred=[B], active={CAP}),
            [("h1", "report", None), ("h2", "defer", CAP)],
        ),
        (Outcome(deferred=[A], active={CLIFF, STORM}), [("h1", "defer", CLIFF)]),
        (Outcome(hold=[A], active={BREAKER}), [("h1", "hold", BREAKER)]),
        # The storm cooldown after the breaker: held (breaker_action hold) or skipped.
        (Outcome(hold=[A], active={STORM}), [("h1", "hold", STORM)]),
        (
            Outcome(deferred=[A, B], active={STORM}),
            [("h1", "defer", STORM), ("h2", "defer", STORM)],
        ),
        (Outcome(deferred=[A], active={BREAKER}), [("h1", "defer", BREAKER)]),
    ],
)
def test_each_host_gets_its_decision_and_gate(outcome, expected) -> None:
    assert [(h.name, d, g) for h, d, g in decisions(outcome)] == expected

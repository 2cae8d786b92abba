"""Fire drills' metrics (masakari.engine.drills): how each drill ended, and how long each of
its phases took.

Only masakari-engine sets them; created on first use, as multi-process values when
``PROMETHEUS_MULTIPROC_DIR`` is set, like the other instruments.
"""

from __future__ import annotations

import dataclasses

from prometheus_client import Counter, Histogram

from masakari import metrics

# A phase lasts from a Nova call (a fraction of a second) to a host's boot (minutes).
PHASE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, float("inf"))


@dataclasses.dataclass(frozen=True)
class Instruments:
    drills: Counter
    phases: Histogram


def _create() -> Instruments:
    registry = None if metrics.multiprocess() else metrics.OWN
    return Instruments(
        drills=Counter(
            "masakari_drills",
            "Fire drills ended, by segment and outcome (succeeded, failed).",
            ["segment", "outcome"],
            registry=registry,
        ),
        phases=Histogram(
            "masakari_drill_phase_duration_seconds",
            "How long each phase of a fire drill took, by phase (check, maintenance, fence, "
            "disable, evacuate, restore, move_back) and result (ok, late, failed).",
            ["phase", "result"],
            buckets=PHASE_BUCKETS,
            registry=registry,
        ),
    )


instruments = metrics.Once(_create)


def drill_ended(segment: str, outcome: str) -> None:
    instruments().drills.labels(segment, outcome).inc()


def phase_ended(phase: str, result: str, seconds: float) -> None:
    instruments().phases.labels(phase, result).observe(max(seconds, 0.0))

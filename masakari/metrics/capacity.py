"""Failover capacity's metrics (masakari.engine.tolerance): each segment's failures
tolerated and its target, set by the engine's periodic check ([capacity] check_interval).

Only masakari-engine sets them, one engine at a time (with [coordination], the leader); as
multi-process values when ``PROMETHEUS_MULTIPROC_DIR`` is set, the most recent one shows.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Sequence
from typing import Protocol

from prometheus_client import Gauge

from masakari import metrics


class Tolerance(Protocol):
    """What the gauges show of a segment (masakari.engine.tolerance.Tolerance): metrics sit
    below the engine and import nothing of it."""

    @property
    def segment(self) -> str: ...

    @property
    def k(self) -> int | None: ...

    @property
    def target(self) -> int: ...


@dataclasses.dataclass(frozen=True)
class Instruments:
    tolerated: Gauge
    target: Gauge


def _gauge(name: str, text: str) -> Gauge:
    if metrics.multiprocess():
        return Gauge(name, text, ["segment"], multiprocess_mode="mostrecent")
    return Gauge(name, text, ["segment"], registry=metrics.OWN)


def _create() -> Instruments:
    return Instruments(
        tolerated=_gauge(
            "masakari_segment_failures_tolerated",
            "How many of the segment's hosts can fail at once with every instance that would "
            "be evacuated still placed (NaN: could not be computed).",
        ),
        target=_gauge(
            "masakari_segment_failures_to_tolerate",
            "The segment's target ([capacity] failures_to_tolerate and "
            "segment_failures_to_tolerate); only segments with a target have one.",
        ),
    )


instruments = metrics.Once(_create)
# The segments each gauge shows (single-process mode: to take out those no longer found).
_shown: dict[str, set[str]] = {"tolerated": set(), "target": set()}
_lock = threading.Lock()


def failures_tolerated(found: Sequence[Tolerance]) -> None:
    """Every segment's figures; a segment no longer found (or without a target any more) is
    taken out in single-process mode (prometheus_client keeps multi-process values)."""
    made = instruments()
    now = {
        "tolerated": {each.segment for each in found},
        "target": {each.segment for each in found if each.target},
    }
    with _lock:
        for each in found:
            made.tolerated.labels(each.segment).set(math.nan if each.k is None else each.k)
            if each.target:
                made.target.labels(each.segment).set(each.target)
        if not metrics.multiprocess():
            for gone in _shown["tolerated"] - now["tolerated"]:
                made.tolerated.remove(gone)
            for gone in _shown["target"] - now["target"]:
                made.target.remove(gone)
        _shown.update(now)

"""Failover capacity's metrics (masakari.engine.tolerance): each segment's failures
tolerated and its target, set by the engine's periodic check ([capacity] check_interval).

Only masakari-engine sets them, one engine at a time (with [coordination], the leader); as
multi-process values when ``PROMETHEUS_MULTIPROC_DIR`` is set, the most recent one shows.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Mapping, Sequence
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


class HeldRoom(Protocol):
    """A segment's held failover room after a pass (masakari.engine.room.Pass)."""

    @property
    def segment(self) -> str: ...

    @property
    def held(self) -> Mapping[str, Mapping[str, int]]: ...


@dataclasses.dataclass(frozen=True)
class Instruments:
    tolerated: Gauge
    target: Gauge
    held: Gauge


def _gauge(name: str, text: str, labels: Sequence[str] = ("segment",)) -> Gauge:
    if metrics.multiprocess():
        return Gauge(name, text, labels, multiprocess_mode="mostrecent")
    return Gauge(name, text, labels, registry=metrics.OWN)


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
        held=_gauge(
            "masakari_segment_room_held",
            "What masakari adds to the reserved amounts of the segment's Placement inventories "
            "to keep its failover room ([capacity] hold_room), summed over its hosts, in the "
            "inventories' units; 0 while released for a recovery.",
            ("segment", "resource_class"),
        ),
    )


instruments = metrics.Once(_create)
# The segments each gauge shows (single-process mode: to take out those no longer found).
_shown: dict[str, set[str]] = {"tolerated": set(), "target": set()}
_shown_held: set[tuple[str, str]] = set()
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


def room_held(passes: Sequence[HeldRoom]) -> None:
    """Each segment's held room per resource class, after a holding pass."""
    made = instruments()
    now: dict[tuple[str, str], int] = {}
    for each in passes:
        for amounts in each.held.values():
            for rc, amount in amounts.items():
                now[(each.segment, rc)] = now.get((each.segment, rc), 0) + amount
    with _lock:
        for each in passes:  # a class no longer held shows 0 while its segment is shown
            for gone in {k for k in _shown_held if k[0] == each.segment} - set(now):
                now[gone] = 0
        for labels, amount in now.items():
            made.held.labels(*labels).set(amount)
        _shown_held.clear()
        _shown_held.update(k for k, v in now.items() if v)

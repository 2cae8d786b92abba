"""The fence_kdump listener's metrics (masakari.fencing.kdump): what became of each datagram.

Only masakari-engine counts them (each engine its own listener); created on first use, as
multi-process values when ``PROMETHEUS_MULTIPROC_DIR`` is set, like the other instruments.
"""

from __future__ import annotations

from prometheus_client import Counter

from masakari import metrics


def _create() -> Counter:
    registry = None if metrics.multiprocess() else metrics.OWN
    return Counter(
        "masakari_kdump_datagrams",
        "UDP datagrams the engine's fence_kdump listener received, by what became of them: "
        "stored, not_a_message, unknown_source (not a kdump address of the fencing file), "
        "rate_limited (its source had one stored within the last half second), queue_full, "
        "not_stored (the database write failed).",
        ["outcome"],
        registry=registry,
    )


instruments = metrics.Once(_create)


def datagram(outcome: str) -> None:
    """``outcome``: one of masakari.fencing.kdump's (stored, not_a_message, ...)."""
    instruments().labels(outcome).inc()

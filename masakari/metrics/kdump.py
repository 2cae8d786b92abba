"""The fence_kdump listener's metrics (masakari.fencing.kdump): what became of each datagram.

Only masakari-engine counts them (each engine its own listener); created on first use, as
multi-process values when ``PROMETHEUS_MULTIPROC_DIR`` is set, like the other instruments.
"""

from __future__ import annotations

from prometheus_client import Counter

from masakari import metrics

# What became of a datagram.
STORED = "stored"  # a row of masakari_kdump_messages
NOT_A_MESSAGE = "not_a_message"  # not fence_kdump's 8 bytes
UNKNOWN_SOURCE = "unknown_source"  # from no kdump address of the fencing file's hosts
RATE_LIMITED = "rate_limited"  # its source had one stored less than a second ago
QUEUE_FULL = "queue_full"  # the database did not keep up
NOT_STORED = "not_stored"  # the write failed
OUTCOMES = (STORED, NOT_A_MESSAGE, UNKNOWN_SOURCE, RATE_LIMITED, QUEUE_FULL, NOT_STORED)


def _create() -> Counter:
    registry = None if metrics.multiprocess() else metrics.OWN
    return Counter(
        "masakari_kdump_datagrams",
        "UDP datagrams the engine's fence_kdump listener received, by what became of them: "
        "stored, not_a_message, unknown_source (not a kdump address of the fencing file), "
        "rate_limited (its source had one stored within the last second), queue_full, "
        "not_stored (the database write failed).",
        ["outcome"],
        registry=registry,
    )


instruments = metrics.Once(_create)


def datagram(outcome: str) -> None:
    instruments().labels(outcome).inc()

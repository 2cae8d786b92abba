"""Quarantine's metrics (masakari.engine.quarantine): the quarantines that ended and their
live migrations. Set by the engine that ran them."""

from __future__ import annotations

import dataclasses

from prometheus_client import Counter, Histogram

from masakari import metrics


@dataclasses.dataclass(frozen=True)
class Instruments:
    ended: Counter
    duration: Histogram
    migrations: Counter
    migration_seconds: Histogram


def _create() -> Instruments:
    registry = None if metrics.multiprocess() else metrics.OWN
    return Instruments(
        ended=Counter(
            "masakari_quarantines",
            "Quarantines that ended, by what asked for them (operator, alertmanager, redfish, "
            "storage) and how they ended (done, partial, failed, cancelled, superseded).",
            ["source", "outcome"],
            registry=registry,
        ),
        duration=Histogram(
            "masakari_quarantine_seconds",
            "Seconds from an engine's start of a quarantine to its end.",
            buckets=(10, 30, 60, 120, 300, 600, 1200, 3600),
            registry=registry,
        ),
        migrations=Counter(
            "masakari_quarantine_migrations",
            "Live migrations of quarantined hosts' instances, by outcome (moved, failed, "
            "refused by Nova, timeout).",
            ["outcome"],
            registry=registry,
        ),
        migration_seconds=Histogram(
            "masakari_quarantine_migration_seconds",
            "Seconds from a live migration's request to the instance running elsewhere.",
            buckets=(1, 2, 5, 10, 30, 60, 120, 300, 900),
            registry=registry,
        ),
    )


instruments = metrics.Once(_create)


def ended(source: str, outcome: str, seconds: float) -> None:
    made = instruments()
    made.ended.labels(source, outcome).inc()
    made.duration.observe(seconds)


def migration(outcome: str, seconds: float | None = None) -> None:
    made = instruments()
    made.migrations.labels(outcome).inc()
    if seconds is not None:
        made.migration_seconds.observe(seconds)

"""Quarantine's metrics (masakari.engine.quarantine): the quarantines that ended and their
live migrations, set by the engine that ran them; the signals the engine reads itself (the
Redfish health, the storage-path judgement), set by the engine that read them."""

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
    redfish_reads: Counter
    storage_judgements: Counter
    fallbacks: Counter


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
        redfish_reads=Counter(
            "masakari_redfish_health_reads",
            "Reads of hosts' Redfish health by the engine, by result: the worse of Health and "
            "HealthRollup (ok, warning, critical, unknown when the BMC says neither), or "
            "unreachable, refused, failed.",
            ["result"],
            registry=registry,
        ),
        storage_judgements=Counter(
            "masakari_storage_loss_judgements",
            "Hosts judged to have lost their storage path (I/O errors of several instances), "
            "by action (conservative, aggressive) and what became of it (requested, held, "
            "already, recorded, duplicate, refused).",
            ["action", "outcome"],
            registry=registry,
        ),
        fallbacks=Counter(
            "masakari_storage_loss_fallbacks",
            "Storage quarantines that left instances on their host, by what became of them: "
            "recorded or duplicate (a host failure: fenced and evacuated), no_room, unknown "
            "(the room could not be read), refused (the intake refused the host failure).",
            ["outcome"],
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


def redfish_read(result: str) -> None:
    instruments().redfish_reads.labels(result).inc()


def storage_judged(action: str, outcome: str) -> None:
    instruments().storage_judgements.labels(action, outcome).inc()


def fallback(outcome: str) -> None:
    instruments().fallbacks.labels(outcome).inc()

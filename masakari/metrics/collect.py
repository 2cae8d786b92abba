"""What a scrape answers: the counted instruments, and gauges read from the database.

The database gauges are computed when scraped, with five small queries (a count per
status, the held ones, the oldest ``new`` and ``running`` rows, the engines' heartbeats),
so that every API and engine reports the same numbers however many there are. A database
that cannot be reached leaves those gauges out and says so in ``masakari_database_up``; the
scrape itself still succeeds. What was read is answered again for CACHE_SECONDS: several
scrapers (or one scraping too often, or anyone reaching an unauthenticated listener) cost
the database at most one round of queries per interval.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable, Iterator

import sqlalchemy as sa
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import multiprocess as prom_multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from masakari import metrics
from masakari.db import engines as engine_rows
from masakari.db import holds, statuses
from masakari.db.database import DB_ERRORS, Database
from masakari.db.models import Notification

LOG = logging.getLogger(__name__)

# Seconds a scrape's database reading is answered again; well under Prometheus's usual
# 15-60 s interval, so that every scrape still sees fresh figures.
CACHE_SECONDS = 5.0

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Engines listed in masakari_engine_heartbeat_age_seconds, newest heartbeat first.
MAX_ENGINES = 200
# Always reported, 0 included, so that an alert on a status has a series to look at.
NOTIFICATION_STATUSES = (
    statuses.NEW,
    statuses.RUNNING,
    statuses.ERROR,
    statuses.FAILED,
    statuses.IGNORED,
    statuses.FINISHED,
)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


class DatabaseCollector(Collector):
    """Gauges from the database; ``database`` is called at the first scrape."""

    def __init__(
        self,
        database: Callable[[], Database],
        now: Callable[[], datetime.datetime] = _utcnow,
        cache_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._database = database
        self._db: Database | None = None
        self._now = now
        self._cache_seconds = CACHE_SECONDS if cache_seconds is None else cache_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._families: list[Metric] | None = None

    def collect(self) -> Iterator[Metric]:
        families = self._cached()
        up = GaugeMetricFamily(
            "masakari_database_up", "Whether the last scrape could read the database."
        )
        up.add_metric([], 0 if families is None else 1)
        yield up
        yield from families or []

    def _cached(self) -> list[Metric] | None:
        """The last reading while younger than cache_seconds (None: database unreachable);
        concurrent scrapes wait for one reading rather than each run the queries."""
        with self._lock:
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._cache_seconds:
                return self._families
            try:
                self._families = self._read()
            except DB_ERRORS as exc:
                LOG.warning("Metrics: database unreachable: %s", exc)
                self._families = None
            self._read_at = now
            return self._families

    def _read(self) -> list[Metric]:
        if self._db is None:
            self._db = self._database()
        now = self._now()
        live = Notification.deleted == 0
        with self._db.reader() as session:
            counts = session.execute(
                sa.select(Notification.status, sa.func.count())
                .where(live)
                .group_by(Notification.status)
            ).all()
            held = session.execute(
                sa.select(sa.func.count()).where(
                    live, Notification.status == statuses.NEW, holds.is_held()
                )
            ).scalar()
            # A held notification waits for an operator, not for an engine.
            oldest = session.execute(
                sa.select(sa.func.min(Notification.created_at)).where(
                    live, Notification.status == statuses.NEW, holds.not_held()
                )
            ).scalar()
            # A notification's updated_at moves when an engine claims it: "running since".
            running_since = session.execute(
                sa.select(sa.func.min(Notification.updated_at)).where(
                    live, Notification.status == statuses.RUNNING
                )
            ).scalar()
            beats = engine_rows.latest(session, MAX_ENGINES)
        by_status = GaugeMetricFamily(
            "masakari_notifications", "Notifications in the database, by status.", labels=["status"]
        )
        seen = dict(counts)
        for status in NOTIFICATION_STATUSES:
            by_status.add_metric([status], seen.get(status, 0))
        for status, count in seen.items():
            if status not in NOTIFICATION_STATUSES:
                by_status.add_metric([status], count)
        depth = GaugeMetricFamily(
            "masakari_queue_depth", "Notifications waiting for an engine (status new, not held)."
        )
        depth.add_metric([], seen.get(statuses.NEW, 0) - (held or 0))
        on_hold = GaugeMetricFamily(
            "masakari_held_notifications",
            "Notifications held for an operator's release or cancel ([guards]).",
        )
        on_hold.add_metric([], held or 0)
        age = GaugeMetricFamily(
            "masakari_queue_oldest_new_age_seconds",
            "Age of the oldest notification still new and not held (0 when none is).",
        )
        age.add_metric([], max((now - oldest).total_seconds(), 0.0) if oldest else 0.0)
        running = GaugeMetricFamily(
            "masakari_recovery_oldest_running_age_seconds",
            "Time since the longest-running notification was claimed (0 when none runs).",
        )
        running.add_metric(
            [], max((now - running_since).total_seconds(), 0.0) if running_since else 0.0
        )
        heartbeat = GaugeMetricFamily(
            "masakari_engine_heartbeat_age_seconds",
            "Seconds since each engine last recorded that it is alive.",
            labels=["engine", "host"],
        )
        for beat in beats:
            seconds = max((now - beat.heartbeat_at).total_seconds(), 0.0)
            heartbeat.add_metric([beat.engine, beat.host], seconds)
        return [by_status, depth, on_hold, age, running, heartbeat]


class _Own(Collector):
    """The instruments of this process (single-process mode)."""

    def collect(self) -> Iterator[Metric]:
        return iter(metrics.OWN.collect())


def scrape_registry(database: Callable[[], Database] | None) -> CollectorRegistry:
    """A registry answering for this service: every process's instruments, plus the
    database gauges when ``database`` is given."""
    registry = CollectorRegistry(auto_describe=False)
    if metrics.multiprocess():
        prom_multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Own())
    if database is not None:
        registry.register(DatabaseCollector(database))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)

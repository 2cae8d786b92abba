"""Which engine runs the periodic tasks, when [coordination]/backend_url names a tooz backend.

Without a backend every engine runs the periodic retry and expiry tasks, as the reference's
engines do; the database claims make each retry and each expiry happen once whatever the
number of engines, so electing one is an economy (one engine scans the tables instead of N),
never a condition of correctness. Hence, when the backend cannot be reached, an engine cannot
know whether another leads and runs the tasks itself: a double run costs a scan, a missing one
would leave notifications unretried.

The leader is the holder of one tooz lock per database; the coordinator's heartbeat keeps it,
and an engine that dies without releasing it loses it when the backend's lock timeout passes
(for Redis, ``lock_timeout`` in the URL, 30 s by default). The others try to take it every
few seconds.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any, Protocol

from oslo_config import cfg
from sqlalchemy.engine import url as sa_url

LOG = logging.getLogger(__name__)

LOCK_NAME = b"masakari-engine-periodic-tasks"
# Seconds between two attempts of a follower to take the lead (and of the leader to check it
# still holds it).
ELECTION_INTERVAL = 2.0


class Leadership(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    def runs_periodic_tasks(self) -> bool: ...


class Everyone:
    """No coordination backend: every engine runs the periodic tasks."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def runs_periodic_tasks(self) -> bool:
        return True


class Elected:
    """One engine among those sharing a backend runs the periodic tasks."""

    def __init__(
        self,
        backend_url: str,
        member_id: str,
        interval: float = ELECTION_INTERVAL,
        lock_name: bytes | None = None,
    ) -> None:
        self.backend_url = backend_url
        self.lock_name = lock_name or LOCK_NAME
        self.member_id = member_id
        self.interval = interval
        self._coordinator: Any = None
        self._lock: Any = None
        self._leader = threading.Event()
        self._reachable = threading.Event()
        self._outage_reported = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="engine-election", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Hand the lead over at once rather than after the lock timeout."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)
        self._disconnect(release=True)

    def runs_periodic_tasks(self) -> bool:
        return self._leader.is_set() or not self._reachable.is_set()

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._round()
            self._stopping.wait(self.interval)

    def _round(self) -> None:
        try:
            if self._coordinator is None:
                self._connect()
            if self._leader.is_set():
                # The coordinator's heartbeat extends the lock; a lock that expired anyway
                # (a long pause of this process) may be someone else's by now.
                if not self._lock.is_still_owner():
                    self._leader.clear()
                    LOG.warning("No longer the engine that runs the periodic tasks")
            elif self._lock.acquire(blocking=False):
                self._leader.set()
                LOG.info("Elected to run the periodic tasks (member %s)", self.member_id)
            self._mark_reachable()
        except Exception as exc:
            self._mark_unreachable(exc)
            self._disconnect(release=False)

    def _connect(self) -> None:
        from tooz import coordination

        coordinator = coordination.get_coordinator(self.backend_url, self.member_id.encode("utf-8"))
        coordinator.start(start_heart=True)
        self._coordinator = coordinator
        self._lock = coordinator.get_lock(self.lock_name)

    def _disconnect(self, release: bool) -> None:
        coordinator, lock = self._coordinator, self._lock
        self._coordinator = self._lock = None
        was_leader = self._leader.is_set()
        self._leader.clear()
        if coordinator is None:
            return
        try:
            if release and was_leader:
                lock.release()
            coordinator.stop()
        except Exception as exc:
            LOG.debug("Coordination backend not left cleanly: %s", exc)

    def _mark_reachable(self) -> None:
        self._outage_reported = False
        if not self._reachable.is_set():
            self._reachable.set()
            LOG.info("Coordination backend reachable: one engine runs the periodic tasks")

    def _mark_unreachable(self, exc: Exception) -> None:
        self._reachable.clear()
        if not self._outage_reported:
            self._outage_reported = True
            LOG.error(
                "Coordination backend unreachable (%s): this engine runs the periodic tasks "
                "itself until it is back",
                exc,
            )


def lock_name(conf: cfg.ConfigOpts) -> bytes:
    """One lock per database: deployments sharing a backend elect their leaders apart.

    The database is named by what identifies it (backend, user, host, port, database), never
    by its password: lock names are visible to anyone who can list the backend's keys, and a
    hash of a URL whose every other part is guessable gives the password away to an offline
    search. The driver and the query are left out too, so that engines spelling them
    differently still share the lock.
    """
    url = sa_url.make_url(str(conf.database.connection))
    identity = "|".join(
        str(part or "")
        for part in (url.get_backend_name(), url.username, url.host, url.port, url.database)
    )
    database = hashlib.sha256(identity.encode("utf-8")).hexdigest()
    return LOCK_NAME + b"-" + database[:16].encode("ascii")


def leadership(conf: cfg.ConfigOpts, member_id: str) -> Leadership:
    url = conf.coordination.backend_url
    return Elected(url, member_id, lock_name=lock_name(conf)) if url else Everyone()

"""Worker admission: the recovery threads of one engine and what each of them holds.

A candidate handed to a worker is a :class:`Work` from the moment it is submitted until its
worker is done: it counts against the free workers (new notifications and retries each have
their own), and no second candidate of the same notification or host is handed out
meanwhile. Once its claim is taken it carries the lease that the heartbeat renews and that a
stopping engine releases.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import threading
from collections.abc import Callable, Iterable

from masakari.engine.lease import Lease


@dataclasses.dataclass
class Work:
    """A candidate handed to a worker: unclaimed until ``lease`` is set, then a recovery."""

    notification_uuid: str
    token: int
    retry: bool
    cancel: threading.Event
    host_uuid: str | None = None  # None for a takeover: its host is busy in the database
    # Its claim takes an ``error`` row: the periodic retry of an attempt that failed.
    after_error: bool = False
    lease: Lease | None = None
    future: concurrent.futures.Future[None] | None = None
    # From here the claim ends with the status write: no renewal must see it half-way.
    finishing: bool = False


class Workers:
    """``new`` workers for new notifications and takeovers, ``retry`` more for the retries,
    so that a slow retry never delays a new notification."""

    def __init__(self, new: int, retry: int) -> None:
        self.new = new
        self.retry = retry
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()
        self._active: dict[str, Work] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=new + retry, thread_name_prefix="recovery"
        )

    def free(self, retry: bool) -> int:
        with self._lock:
            used = sum(1 for w in self._active.values() if w.retry == retry)
        return (self.retry if retry else self.new) - used

    def submit(
        self,
        notification_uuid: str,
        host_uuid: str | None,
        retry: bool,
        job: Callable[[Work], None],
        after_error: bool = False,
    ) -> bool:
        """Run ``job`` on a worker for this candidate, with a fencing token of its own.

        Not while this engine already holds or is claiming the same notification, or one
        of the same host: a host's second row would only find it busy, and its recoveries
        run in order.
        """
        item = Work(
            notification_uuid, next(self._tokens), retry, threading.Event(), host_uuid, after_error
        )
        with self._lock:
            if notification_uuid in self._active or (
                host_uuid is not None
                and any(w.host_uuid == host_uuid for w in self._active.values())
            ):
                return False
            self._active[notification_uuid] = item
        try:
            item.future = self._pool.submit(job, item)
        except RuntimeError:  # the pool shut down: the engine is stopping
            self.done(item)
            return False
        return True

    def claimed(self, item: Work, lease: Lease) -> None:
        with self._lock:
            # From now on the heartbeat renews it, and a stopping engine releases it.
            item.lease = lease

    def done(self, item: Work) -> None:
        with self._lock:
            self._active.pop(item.notification_uuid, None)

    def renewable(self) -> list[tuple[Work, Lease]]:
        """The claims to renew: taken, and not ending with their status write."""
        with self._lock:
            return [(w, w.lease) for w in self._active.values() if w.lease and not w.finishing]

    def cancel(self, notification_uuids: Iterable[str]) -> None:
        with self._lock:
            for notification_uuid in notification_uuids:
                if notification_uuid in self._active:
                    self._active[notification_uuid].cancel.set()

    def stop(self, grace: float) -> dict[str, int]:
        """Cancel every recovery, wait up to ``grace`` for them to unwind, shut the pool.

        Returns the claims still held (uuid -> token), for the caller to release.
        """
        with self._lock:
            running = list(self._active.values())
        for item in running:
            item.cancel.set()
        futures = [w.future for w in running if w.future is not None]
        concurrent.futures.wait(futures, timeout=grace)
        with self._lock:
            held = [(w, w.lease) for w in self._active.values() if w.lease]
        for _, lease in held:
            # Released next, and taken over at once: a Nova request still being retried for
            # it must not be sent again (its transport checks the lease before each send).
            lease.lose()
        self._pool.shutdown(wait=False, cancel_futures=True)
        return {w.notification_uuid: w.token for w, _ in held}

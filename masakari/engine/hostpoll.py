"""Batched polling of evacuations (``evacuation_batched_polling``): one list per failed host.

While evacuations of a host are waiting to be confirmed, one thread of the engine asks Nova
for the servers still on that host, ``GET /servers/detail?all_tenants=True&host=H``, every
``verify_interval``: one request per failed host and poll, whatever the number of
instances. Every waiter sees each answer as soon as it arrives. An instance that is no
longer listed has left the host; its waiter reads it once (``GET /servers/{id}``) to check
the state it reached, as the per-instance poll would have.

Under the evacuation cap, a waiter may pass ``hurry``: while it says yes (evacuations wait
for a slot that one of those being confirmed will free), the round runs every ``HURRIED``
seconds instead, so that a slot is seen free sooner. Still one request per failed host and
round. Without the cap nothing hurries: ``verify_interval`` is the period.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import threading
from collections.abc import Callable

from masakari.engine.errors import PollTimeout
from masakari.engine.ports import Clock, NovaReads, Server

LOG = logging.getLogger(__name__)

# Longest wait for an answer between two checks of the waiter's cancel flag and lease.
CHECK = 0.5
# Hosts listed at the same time.
PARALLEL = 8
# Seconds between two rounds while a waiter hurries (at most verify_interval).
HURRIED = 0.25


@dataclasses.dataclass
class _Answer:
    generation: int = 0
    servers: dict[str, Server] = dataclasses.field(default_factory=dict)
    error: Exception | None = None


class HostPoller:
    """Lists the servers of every host someone waits on, every ``interval`` seconds."""

    def __init__(self, nova: NovaReads, interval: float, clock: Clock | None = None) -> None:
        self._nova = nova
        self.interval = max(float(interval), 0.0)
        self._clock = clock or Clock()
        self._cond = threading.Condition()
        self._watchers: dict[str, int] = {}
        self._hurries: dict[Callable[[], bool], int] = {}
        self._answers: dict[str, _Answer] = {}
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the polling thread ----------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="evacuation-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=PARALLEL, thread_name_prefix="evacuation-poll"
        ) as pool:
            while not self._stopping.is_set():
                with self._cond:
                    hosts = list(self._watchers)
                if not hosts:
                    self._wake.wait()
                    self._wake.clear()
                    continue
                started = self._clock.monotonic()
                # A rack of hosts is listed at once, so that one round stays one interval.
                list(pool.map(self.poll_host, hosts))
                # In steps, so that a waiter starting to hurry shortens the current wait too.
                spent = self._clock.monotonic() - started
                while not self._stopping.is_set():
                    left = self.period() - spent
                    if left <= 0:
                        break
                    step = min(left, HURRIED)
                    self._stopping.wait(step)
                    spent += step

    def period(self) -> float:
        """Seconds between two rounds now: shorter while a waiter hurries."""
        with self._cond:
            hurries = list(self._hurries)
        if any(hurry() for hurry in hurries):
            return min(self.interval, HURRIED)
        return self.interval

    def poll_host(self, host: str) -> None:
        """One list of the host's servers, handed to everyone waiting on the host."""
        error: Exception | None = None
        servers: dict[str, Server] = {}
        try:
            servers = {s.id: s for s in self._nova.list_servers_on_host(host)}
        except Exception as exc:
            # Told to the waiters, who record it as the per-instance poll would have.
            LOG.warning("Listing the servers of %s failed: %s", host, exc)
            error = exc
        with self._cond:
            previous = self._answers.get(host, _Answer())
            self._answers[host] = _Answer(previous.generation + 1, servers, error)
            self._cond.notify_all()

    # --- waiters ---------------------------------------------------------------------------

    def wait(
        self,
        host: str,
        instance_uuid: str,
        judge: Callable[[Server | None], bool],
        check: Callable[[], None],
        timeout: float,
        hurry: Callable[[], bool] | None = None,
    ) -> None:
        """Return once ``judge`` says yes to the instance as a list of ``host`` shows it (None:
        not on the host any more). ``check`` raises to stop waiting; a timeout of 0 (or less)
        means none, as in the reference's looping calls. ``hurry``: see the module's doc.
        Raises PollTimeout."""
        start = self._clock.monotonic()
        with self._cond:
            self._watchers[host] = self._watchers.get(host, 0) + 1
            if hurry is not None:
                self._hurries[hurry] = self._hurries.get(hurry, 0) + 1
            seen = self._answers.get(host, _Answer()).generation
        self._wake.set()
        try:
            while True:
                check()
                with self._cond:
                    answer = self._answers.get(host, _Answer())
                    if answer.generation == seen:
                        self._cond.wait(CHECK)
                        answer = self._answers.get(host, _Answer())
                if answer.generation != seen:
                    seen = answer.generation
                    if answer.error is not None:
                        raise answer.error
                    if judge(answer.servers.get(instance_uuid)):
                        return
                if timeout > 0 and self._clock.monotonic() - start > timeout:
                    raise PollTimeout()
        finally:
            with self._cond:
                self._watchers[host] -= 1
                if not self._watchers[host]:
                    del self._watchers[host]
                    self._answers.pop(host, None)
                if hurry is not None:
                    self._hurries[hurry] -= 1
                    if not self._hurries[hurry]:
                        del self._hurries[hurry]

"""A long-lived helper process that keeps sessions, asked one line of JSON at a time.

The IPMI driver's pyghmi runs in such a child (:mod:`masakari.fencing.ipmi`): logging in to
a BMC once and keeping the session saves a process start and a login per call. The child
reads requests (``{"id": n, ...}``, secrets included: stdin is the one channel that carries
them) and writes one answer per request (``{"id": n, ...}``), in any order; it says
``{"ready": true}`` once it can serve, and exits when its stdin closes.

A call keeps its deadline whatever the child does: at the deadline the child is killed (its
whole process group) and replaced, and the call raises :class:`Expired`; the calls it was
serving for other keys are asked again of its successor within their own deadlines. Calls
with one key (one BMC) are serialized; calls with different keys run at once.

A key the child has answered for has a session in it. A call on such a session that gets no
answer within a third of its budget may be talking to a BMC that forgot the session (it
restarted, or dropped the session while idle: such a BMC drops the packets without a word),
as may one the child answers ``{"kind": "stale"}``: the child is replaced, so that the
session is made anew, and the call asked once more with the rest of its budget.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from masakari.fencing._deadline import Expired

__all__ = ["STALE", "Expired", "Worker"]

LOG = logging.getLogger(__name__)

# The kind of answer that means "this key's session is gone: make it anew".
STALE = "stale"
# Of a call's budget, the part a session made earlier gets before it is deemed forgotten.
_STALE_SHARE = 1 / 3
# A child killed, or replaced because of another call, is asked again at most this often.
_ATTEMPTS = 3
# Lines of the child's stderr kept to say why it died.
_STDERR_LINES = 20


class Gone(Exception):
    """The child exited (or was killed) before it answered."""


class _Child:
    """One helper process: its pipes, the thread that reads its answers, the calls waiting
    for one, and the keys it holds a session for."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            close_fds=True,
        )
        self.ready = threading.Event()
        self.sessions: set[Hashable] = set()
        self.stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, _Waiter] = {}
        self._gone = False
        self._readers = [
            threading.Thread(target=self._read_answers, name="worker-answers", daemon=True),
            threading.Thread(target=self._read_stderr, name="worker-stderr", daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def gone(self) -> bool:
        return self._gone

    def ask(self, request: dict[str, Any], wait: float) -> dict[str, Any] | None:
        """The child's answer to ``request``, None when there is none after ``wait`` seconds;
        :class:`Gone` when the child is."""
        waiter = _Waiter()
        with self._lock:
            if self._gone:
                raise Gone()
            self._next_id += 1
            ident = self._next_id
            self._waiting[ident] = waiter
        try:
            line = json.dumps({**request, "id": ident}) + "\n"
            with self._write_lock:
                assert self.proc.stdin is not None
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
        except (OSError, ValueError):  # a closed pipe: the child is dying
            with self._lock:
                self._waiting.pop(ident, None)
            raise Gone() from None
        if not waiter.done.wait(wait):
            with self._lock:
                self._waiting.pop(ident, None)
            return None
        if waiter.answer is None:
            raise Gone()
        return waiter.answer

    def stop(self, grace: float) -> None:
        """Close its stdin (it exits at once when idle); kill it after ``grace`` seconds."""
        with self._write_lock:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        """Kill its process group and reap it; every call still waiting gets :class:`Gone`."""
        if self.proc.returncode is None:  # not reaped: its group's id is still its own
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        for reader in self._readers:
            reader.join(5)
        with self._write_lock:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        self._end()

    def _read_answers(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout as lines:
            for line in lines:
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(answer, dict):
                    continue
                if answer.get("ready"):
                    self.ready.set()
                    continue
                with self._lock:
                    waiter = self._waiting.pop(answer.get("id"), None)  # type: ignore[arg-type]
                if waiter is not None:
                    waiter.answer = answer
                    waiter.done.set()
        self._end()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr as lines:
            for line in lines:
                self.stderr.append(line.rstrip("\n"))

    def _end(self) -> None:
        with self._lock:
            self._gone = True
            waiting, self._waiting = self._waiting, {}
        for waiter in waiting.values():
            waiter.done.set()


class _Waiter:
    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None
        self.done = threading.Event()


class Worker:
    """The helper process of ``argv()``, started on first use (or by :meth:`start`) and
    replaced whenever a call needs it to be.

    ``keep_alive`` maps a key's last request to a request that only keeps its session
    alive: sent once a key had no call for :attr:`every` seconds, from the parent so that
    it waits for the key's calls like any other (a BMC closes a session idle for about a
    minute). A keep-alive that fails replaces the child: the next call makes a new session.
    """

    def __init__(
        self,
        argv: Callable[[], Sequence[str]],
        name: str,
        keep_alive: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        every: float = 15.0,
    ) -> None:
        self._argv = argv
        self.name = name
        self._keep_alive = keep_alive
        self.every = every
        self._child: _Child | None = None
        self._lock = threading.Lock()
        self._keys: dict[Hashable, threading.Lock] = {}
        # Per key: its last request, its timeout, when it was last sent.
        self._last: dict[Hashable, tuple[dict[str, Any], float, float]] = {}
        self._stopping = threading.Event()
        self._keeper: threading.Thread | None = None
        # Counts the stops: a call in flight at a stop ends there (Expired) rather than
        # starting another child for an engine that is going away.
        self._stops = 0
        # A process that exits lets its child go too (it would exit at its stdin's end).
        atexit.register(self.stop)

    @property
    def pid(self) -> int | None:
        """The running child's process id, None when there is none."""
        child = self._child
        return None if child is None or child.gone else child.proc.pid

    def start(self) -> None:
        """Start the child now (its start-up is then off the first call's path)."""
        self._current()

    def wait_ready(self, timeout: float) -> bool:
        """Whether the child (started if need be) can serve within ``timeout`` seconds."""
        return self._current().ready.wait(timeout)

    def stop(self, grace: float = 2.0) -> None:
        """Let the child go (killed after ``grace`` seconds); a later call starts another."""
        with self._lock:
            child, self._child = self._child, None
            keeper, self._keeper = self._keeper, None
            self._stopping.set()
            self._stops += 1
        if child is not None:
            child.stop(grace)
        if keeper is not None:
            keeper.join()  # a keep-alive it was waiting for has its answer: the child's end

    def call(self, key: Hashable, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The child's answer to ``request`` for ``key`` within ``timeout`` seconds, or
        :class:`Expired`."""
        deadline = time.monotonic() + timeout
        stops = self._stops
        with self._keys_lock(key, deadline):
            remade = False
            late: _Child | None = None
            for _ in range(_ATTEMPTS):
                left = deadline - time.monotonic()
                if left <= 0 or self._stops != stops:
                    break
                child = self._current()
                known = key in child.sessions
                wait = min(left, timeout * _STALE_SHARE) if known and not remade else left
                try:
                    answer = child.ask(request, wait)
                except Gone:
                    self._replace(child, "it exited" + _said(child))
                    continue
                if answer is None and (not known or remade):
                    late = child
                    break
                if answer is None or answer.get("kind") == STALE:
                    if remade:
                        break
                    # The session may be gone from the BMC: a new child makes a new one.
                    self._replace(child, "a session went stale")
                    remade = True
                    continue
                if "error" not in answer:
                    child.sessions.add(key)
                    self._last[key] = (request, timeout, time.monotonic())
                return answer
            # Whatever it is stuck in (pyghmi gives up on a silent BMC after 20-30 s), it
            # dies with the child.
            self._replace(late, "a call ran out of time")
        raise Expired()

    def _keys_lock(self, key: Hashable, deadline: float) -> _Held:
        with self._lock:
            lock = self._keys.setdefault(key, threading.Lock())
        return _Held(lock, deadline)

    def _current(self) -> _Child:
        with self._lock:
            if self._child is None or self._child.gone:
                self._child = _Child(self._argv())
            if self._keep_alive is not None and self._keeper is None:
                self._stopping.clear()
                self._keeper = threading.Thread(
                    target=self._keep_sessions_alive, name="worker-keep-alive", daemon=True
                )
                self._keeper.start()
            return self._child

    def _keep_sessions_alive(self) -> None:
        assert self._keep_alive is not None
        while not self._stopping.wait(self.every / 3):
            child = self._child
            if child is None:
                continue
            for key in list(child.sessions):
                request, timeout, sent = self._last[key]
                lock = self._keys[key]
                # A key in a call is alive (or about to be found dead) without help.
                if time.monotonic() - sent < self.every or not lock.acquire(blocking=False):
                    continue
                try:
                    self._last[key] = (request, timeout, time.monotonic())
                    # A call waiting for the key waits for this no longer than a stale
                    # session would make it wait.
                    answer = child.ask(self._keep_alive(request), timeout * _STALE_SHARE)
                except Gone:
                    break  # replaced meanwhile: the next round sees the new child
                finally:
                    lock.release()
                if answer is None or "error" in answer:
                    self._replace(child, "a keep-alive failed")
                    break

    def _replace(self, child: _Child | None, why: str) -> None:
        """Kill ``child`` (if it is still the current one) and start its successor now."""
        with self._lock:
            if child is None or self._child is not child:
                return
            self._child = _Child(self._argv())
        LOG.info("%s: replaced (%s)", self.name, why)
        child.kill()


def _said(child: _Child) -> str:
    """The child's last line on stderr, to say why it died (pyghmi's or Python's own)."""
    return f": {child.stderr[-1].strip()}" if child.stderr else ""


class _Held:
    """A key's lock, held for a call, given up with :class:`Expired` at the deadline."""

    def __init__(self, lock: threading.Lock, deadline: float) -> None:
        self.lock = lock
        self.deadline = deadline

    def __enter__(self) -> None:
        if not self.lock.acquire(timeout=max(0.0, self.deadline - time.monotonic())):
            raise Expired()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()

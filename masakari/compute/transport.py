"""The HTTP transport of the Nova and Placement clients: the send guard, the retries
(masakari.compute.retry) and how many requests one process has on their way to Nova at once.

**The send guard.** A check the caller sets around its Nova calls (the engine: "is my lease
still running?"), made by the connection right before each write to the socket: after
keystoneauth's token and endpoint work and after the TCP connect, the shortest window between
a check and Nova. Once bytes are in the kernel they go out even if the process is then frozen;
a refusal between the headers and the body leaves Nova an incomplete request, which it drops.

**The connection limit.** A Nova API serves so many connections at once; beyond them new ones
wait in its listen backlog, and beyond that the kernel drops them. A process that sends more
requests at once than Nova serves makes them time out there, and each time-out is retried,
adding to the burst, while Nova spends its time answering requests whose clients already gave
up: measured, a 40-host rack recovery against a Nova serving 6 connections lost 10 to 17
notifications to that. So each process keeps its requests in line itself: at most
:class:`ConnectionLimit` of them on their way at once, a number that is halved when Nova shows
it is overloaded (a request failed to connect, timed out, or was answered by a balancer's
502/503/504) and grows back by one per round of requests that went through (additive
increase, multiplicative decrease, as TCP's window), between 1 and ``[DEFAULT]
nova_api_max_connections``. Nova then sees about as many requests from masakari as it serves,
and however small it is, the recovery is slower, not failed.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection
from keystoneauth1 import session as ks_session
from urllib3 import exceptions as urllib3_exc

from masakari.compute import retry

_send_guard: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "masakari_nova_send_guard", default=None
)


@contextlib.contextmanager
def send_guard(check: Callable[[], None]) -> Iterator[None]:
    """Run ``check`` before each write of a request sent in this block; it raises to refuse."""
    token = _send_guard.set(check)
    try:
        yield
    finally:
        _send_guard.reset(token)


def _check_send() -> None:
    check = _send_guard.get()
    if check is not None:
        check()


# Default of [DEFAULT] nova_api_max_connections.
MAX_CONNECTIONS = 16
# Nova's overload is one event however many requests it fails at once: one cut per second.
CUT_EVERY = 1.0


class ConnectionLimit:
    """How many requests of one process may be on their way to Nova at once (see above).

    A request holds its place from its connection's connect (or, on a kept-alive connection,
    its send) until the answer's status line: not while it waits before a retry, nor while its
    body is read. A waiting request is let through in the order it came
    (``threading.Condition`` wakes its waiters first come, first served).
    """

    def __init__(
        self,
        most: int,
        cut_every: float = CUT_EVERY,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if most < 1:
            raise ValueError("a connection limit is at least 1")
        self.most = most
        self._cut_every = cut_every
        self._monotonic = monotonic
        self._window = float(most)
        self._in_use = 0
        self._last_cut: float | None = None
        self._cond = threading.Condition()

    @property
    def limit(self) -> int:
        with self._cond:
            return int(self._window)

    @property
    def in_use(self) -> int:
        with self._cond:
            return self._in_use

    def acquire(self) -> None:
        with self._cond:
            while self._in_use >= int(self._window):
                self._cond.wait()
            self._in_use += 1

    def release(self, overloaded: bool | None) -> None:
        """A request is answered or failed; ``overloaded``: Nova failed it in a way that says
        it has too much to do (True), or answered it (False); None: neither."""
        with self._cond:
            self._in_use -= 1
            if overloaded is False:
                self._window = min(float(self.most), self._window + 1.0 / self._window)
            elif overloaded:
                now = self._monotonic()
                if self._last_cut is None or now - self._last_cut >= self._cut_every:
                    self._window = max(1.0, self._window / 2)
                    self._last_cut = now
            free = int(self._window) - self._in_use
            if free > 0:
                self._cond.notify(free)


# The limit of the request being sent in this thread (set by the adapter, taken by the
# connection, which urllib3 creates without a way to pass it one).
_limit: contextvars.ContextVar[ConnectionLimit | None] = contextvars.ContextVar(
    "masakari_nova_connection_limit", default=None
)


def _overloaded(exc: BaseException) -> bool | None:
    """A connection refused or timed out, reset or cut: Nova has too much to do. Anything
    else (the send guard's refusal) says nothing about Nova."""
    if isinstance(exc, OSError | http.client.HTTPException | urllib3_exc.HTTPError):
        return True
    return None


class _Guarded(urllib3.connection.HTTPConnection):
    """The send guard, and the end of a request's place in the limit (a mixin of both
    connections): at the answer's status line, or when the request fails or is dropped."""

    _place: ConnectionLimit | None = None

    def _leave_place(self, overloaded: bool | None) -> None:
        place, self._place = self._place, None
        if place is not None:
            place.release(overloaded)

    def connect(self) -> None:
        try:
            super().connect()
        except BaseException as exc:
            self._leave_place(_overloaded(exc))
            raise

    def request(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().request(*args, **kwargs)
        except BaseException as exc:
            self._leave_place(_overloaded(exc))
            raise

    def send(self, data: Any) -> None:
        _check_send()
        super().send(data)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        try:
            response = super().getresponse(*args, **kwargs)
        except BaseException as exc:
            self._leave_place(_overloaded(exc))
            raise
        self._leave_place(response.status in retry.BALANCER_STATUSES)
        return response

    def close(self) -> None:
        self._leave_place(None)
        super().close()


class _GuardedHTTPConnection(_Guarded):
    pass


class _GuardedHTTPSConnection(_Guarded, urllib3.connection.HTTPSConnection):
    pass


class _LimitedPool(urllib3.HTTPConnectionPool):
    """A request takes its place in the limit before it takes a connection: one waiting for
    a place holds no connection (a kept-alive one would meanwhile go stale in Nova's eyes)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        limit = _limit.get()
        if limit is None:
            return super()._get_conn(timeout)
        limit.acquire()
        try:
            conn = super()._get_conn(timeout)
        except BaseException:
            limit.release(None)
            raise
        conn._place = limit  # type: ignore[attr-defined]
        return conn


class _GuardedHTTPPool(_LimitedPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(_LimitedPool, urllib3.HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class _GuardedHTTPAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter with the guarded connections, the policy's retries and the limit."""

    def __init__(self, limit: ConnectionLimit, **kwargs: Any) -> None:
        self.limit = limit
        super().__init__(**kwargs)

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if not str(request.url).endswith("/auth/tokens"):  # a token fetched meanwhile is none
            retry.sent()
        token = _limit.set(self.limit)
        try:
            return super().send(request, *args, **kwargs)
        finally:
            _limit.reset(token)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _GuardedHTTPPool,
            "https": _GuardedHTTPSPool,
        }


def mount(session: ks_session.Session, policy: retry.Policy, max_connections: int) -> None:
    """Send every request of ``session`` through the guarded transport: the policy's retries,
    at most ``max_connections`` (and fewer while Nova is overloaded) at once."""
    limit = ConnectionLimit(max_connections)
    for prefix in ("http://", "https://"):
        session.session.mount(
            prefix,
            _GuardedHTTPAdapter(
                limit, pool_maxsize=max_connections, max_retries=policy.transport_retry()
            ),
        )

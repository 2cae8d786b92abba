"""The one retry policy of masakari's Nova and Placement requests (docs/nova.md, "Retries").

Three cases, told apart by what the failure says about the request:

- **not sent**: the connection failed before a byte of the request went out (refused, no
  route, connect time-out). Nothing happened in Nova, so every method is sent again.
- **ambiguous**: a time-out waiting for the answer, a connection lost after sending, or a
  502/503/504 from a balancer. Nova may or may not have acted. A request that is safe to
  repeat (:func:`repeatable`) is sent again; the others raise, and their caller
  (masakari.engine.nova_effects) reads Nova to decide, never sending a second one for a
  change that was made.
- **answered**: any other status is Nova's answer and is not retried.

Both kinds of resend are urllib3's ``Retry`` on the transport (:class:`_PolicyRetry`), the
one layer that knows whether the request went out; keystoneauth's own retries are off (it
cannot tell a read time-out from a connect time-out, and it neither jitters nor bounds its
retries in time). Each request is tried again at least the policy's counts and, for the
engine, for as long as ``budget`` seconds have not passed since its first failure: a Nova that
is overloaded for a while makes a recovery slower, it does not fail its steps. Waits grow
exponentially with jitter, so that requests that failed together do not come back together.

Every attempt goes through the transport's send guard (masakari.compute.transport.send_guard):
a run whose lease is over sends nothing, retries included.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from urllib3 import exceptions as urllib3_exc
from urllib3.util import retry as urllib3_retry

from masakari import exception, metrics

# Answers of a proxy in front of Nova whose backend did not answer (or not in time).
BALANCER_STATUSES = (502, 503, 504)

# Server actions Nova carries out the same way however often they are asked: locking a
# locked server, unlocking an unlocked one, setting a state it has. os-stop, os-start and
# evacuate are refused (409) or worse when repeated; os-migrateLive is refused (409, the
# server's task is migrating) while the first runs, and would move the server again after
# it; add_host answers 409 for a host that is already a member. A service update
# (PUT /os-services/{id}) sets fields to given values, but one that timed out usually did
# so waiting for Nova's RPC to a dead compute (up to Nova's rpc_response_timeout) after
# saving them: sent again, it waits as long again; the engine reads the service instead
# (masakari.engine.nova_effects).
REPEATABLE_ACTIONS = frozenset({"lock", "unlock", "os-resetState"})

# Backoff: the n-th wait is drawn between half and all of FIRST_DELAY * 2**(n-1), at most
# MAX_DELAY ("equal jitter": never shorter than half, so that a request still in flight can
# land before a checked change is judged, and spread so that failures do not come back as
# one burst).
FIRST_DELAY = 0.5
MAX_DELAY = 8.0


def repeatable(method: str, action: str | None) -> bool:
    """Whether the request may simply be sent again after an ambiguous failure: reads and
    the actions above."""
    if method in ("GET", "HEAD"):
        return True
    return action in REPEATABLE_ACTIONS


@dataclasses.dataclass(frozen=True)
class Policy:
    """How hard a client tries before its caller sees the failure.

    ``connect_retries`` and ``retries`` are the resends of a request not sent and of a
    repeatable one after an ambiguous failure that are always made; with a ``budget``,
    resends go on past them until ``budget`` seconds have passed since the request first
    failed. ``delay``: None is the jittered exponential backoff above; a number is a fixed
    delay (tests).
    """

    connect_retries: int = 3
    retries: int = 3
    status_codes: tuple[int, ...] = BALANCER_STATUSES
    delay: float | None = None
    budget: float | None = None

    def backoff(self, resend: int) -> float:
        """The wait before the ``resend``-th resend (1, 2, ...)."""
        if self.delay is not None:
            return self.delay
        ceiling = min(MAX_DELAY, FIRST_DELAY * 2 ** max(0, resend - 1))
        return random.uniform(ceiling / 2, ceiling)

    def transport_retry(self) -> urllib3_retry.Retry:
        """urllib3's retries for every request of a client: see :class:`_PolicyRetry`."""
        return _PolicyRetry(
            policy=self,
            total=None,
            connect=self.connect_retries,
            read=self.retries,
            status=self.retries,
            other=0,
            redirect=False,
            allowed_methods=None,  # decided per request: _PolicyRetry._is_method_retryable
            status_forcelist=self.status_codes,
            raise_on_status=False,
            respect_retry_after_header=False,
        )

    def resends(self, monotonic: Callable[[], float] = time.monotonic) -> Iterator[float]:
        """The waits before each resend of a checked change (after an ambiguous failure):
        ``retries`` of them, then more while the budget lasts."""
        deadline = None if self.budget is None else monotonic() + self.budget
        sent = 0
        while sent < self.retries or (deadline is not None and monotonic() < deadline):
            sent += 1
            yield self.backoff(sent)


# The engine's: a balancer's 503 is waited out, and an overloaded or restarting Nova for up
# to two minutes, as an operator would.
ENGINE = Policy(budget=120.0)
# The API's and masakari-manage's: Nova's 5xx is shown as the reference shows it (a host
# create or update answers 500), so that an operator sees Nova's trouble at once; failures
# before sending and time-outs of reads are still retried (a few times), as they are invisible.
INTERACTIVE = Policy(status_codes=())
# The failure detector's poll: one more try, then the poll is blind and the next one asks
# again; a poll must not outlast its interval by retrying.
DETECTION = Policy(connect_retries=1, retries=1, status_codes=())


def ambiguous(exc: BaseException) -> bool:
    """Nova may have acted on the request that raised ``exc``."""
    if not isinstance(exc, exception.NovaError):
        return False
    return exc.status is None or exc.status in BALANCER_STATUSES


# --- the transport's retries ---------------------------------------------------------------


@dataclasses.dataclass
class _Request:
    repeatable: bool = False  # resent after an ambiguous failure too
    sent: int = 0  # requests handed to the transport (keystoneauth's re-authentication adds one)
    resent: int = 0  # attempts urllib3 made again


_request: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "masakari_nova_request", default=None
)


class _PolicyRetry(urllib3_retry.Retry):
    """urllib3's Retry as the policy says: a connection error is retried for any request, a
    read error (time-out, connection lost after sending) or a balancer's status only for a
    repeatable one (:func:`counted` says which); past the counts, while the budget lasts
    (from the first failure); anything else is not retried. Counts what it resends."""

    def __init__(
        self, *args: Any, policy: Policy, deadline: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy
        self.deadline = deadline

    def new(self, **kw: Any) -> _PolicyRetry:
        kw.setdefault("policy", self.policy)
        kw.setdefault("deadline", self.deadline)
        return super().new(**kw)

    def _is_method_retryable(self, method: str) -> bool:
        request = _request.get()
        return request is not None and request.repeatable

    def is_exhausted(self) -> bool:
        if self.other is not None and self.other < 0:
            return True  # a failure of no known kind: not retried
        if not super().is_exhausted():
            return False
        return self.deadline is None or time.monotonic() >= self.deadline

    def get_backoff_time(self) -> float:
        return self.policy.backoff(len(self.history))

    def increment(self, *args: Any, **kwargs: Any) -> _PolicyRetry:
        # The adapter's Retry is shared by every request; a request's own copy has a deadline.
        first = self
        if self.deadline is None and self.policy.budget is not None:
            first = self.new(deadline=time.monotonic() + self.policy.budget)
        try:
            new = urllib3_retry.Retry.increment(first, *args, **kwargs)
        except urllib3_exc.MaxRetryError as exc:
            # A time-out stays a time-out once retries are spent (requests would turn the
            # MaxRetryError into a connection error): the caller's NovaTimeout.
            if isinstance(exc.reason, urllib3_exc.ReadTimeoutError):
                raise exc.reason from None
            raise
        request = _request.get()
        if request is not None:
            request.resent += 1
        return new


def resent() -> int:
    """The attempts urllib3 made again so far for the current request."""
    request = _request.get()
    return request.resent if request is not None else 0


def sent() -> None:
    """One attempt handed to the transport (called by the client's HTTP adapter)."""
    request = _request.get()
    if request is not None:
        request.sent += 1


@contextlib.contextmanager
def counted(operation: str, repeatable: bool) -> Iterator[None]:
    """One request: whether the transport may resend it after an ambiguous failure, and the
    count of its resends and, for a repeatable one (after which nobody checks and resends),
    of a give-up when it fails on a failure the policy would retry."""
    request = _Request(repeatable)
    token = _request.set(request)
    try:
        yield
    except exception.NovaError as exc:
        if repeatable and (ambiguous(exc) or exc.status is None):
            metrics.nova_gave_up(operation)
        raise
    finally:
        _request.reset(token)
        again = max(0, request.sent - 1) + request.resent
        if again:
            metrics.nova_retried(operation, again)

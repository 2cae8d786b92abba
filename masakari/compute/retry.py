"""The one retry policy of masakari's Nova and Placement requests (docs/nova.md, "Retries").

Three cases, told apart by what the failure says about the request:

- **not sent**: the connection failed before a byte of the request went out (refused, no
  route, connect time-out). Nothing happened in Nova, so every method is sent again:
  urllib3's own ``Retry(connect=N)`` on the transport, the only layer that knows.
- **ambiguous**: a time-out waiting for the answer, a connection lost after sending, or a
  502/503/504 from a balancer. Nova may or may not have acted. A request that is safe to
  repeat (:data:`REPEATABLE`) is sent again by keystoneauth (``connect_retries``,
  ``status_code_retries``, ``retriable_status_codes``, exponential backoff); the others
  raise, and their caller (masakari.engine.nova_effects) reads Nova to decide, never
  sending a second one for a change that was made.
- **answered**: any other status is Nova's answer and is not retried.

Every attempt goes through the transport's send guard (masakari.compute.nova.send_guard):
a run whose lease is over sends nothing, retries included.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Any

from urllib3.util import retry as urllib3_retry

from masakari import exception, metrics

# Answers of a proxy in front of Nova whose backend did not answer (or not in time).
BALANCER_STATUSES = (502, 503, 504)

# Server actions Nova carries out the same way however often they are asked: locking a
# locked server, unlocking an unlocked one, setting a state it has. os-stop, os-start and
# evacuate are refused (409) or worse when repeated; add_host answers 409 for a host that
# is already a member.
REPEATABLE_ACTIONS = frozenset({"lock", "unlock", "os-resetState"})


def repeatable(method: str, action: str | None) -> bool:
    """Whether the request may simply be sent again after an ambiguous failure.

    GET reads; PUT /os-services/{id} sets fields to given values; the actions above.
    """
    if method in ("GET", "HEAD", "PUT"):
        return True
    return action in REPEATABLE_ACTIONS


@dataclasses.dataclass(frozen=True)
class Policy:
    """How hard a client tries before its caller sees the failure.

    ``delay``: None is keystoneauth's exponential backoff (0.5 s, 1 s, 2 s, ...); a number is
    a fixed delay (tests). The time one request can take is bounded by
    ``(1 + retries) * (1 + connect_retries)`` times the client's timeout plus the delays.
    """

    connect_retries: int = 3
    retries: int = 3
    status_codes: tuple[int, ...] = BALANCER_STATUSES
    delay: float | None = None

    def keystoneauth_options(self, method: str, action: str | None) -> dict[str, Any]:
        """The keystoneauth Adapter.request options for one request."""
        if not repeatable(method, action):
            return {"connect_retries": 0, "status_code_retries": 0}
        options: dict[str, Any] = {
            "connect_retries": self.retries,
            "status_code_retries": self.retries if self.status_codes else 0,
            "retriable_status_codes": list(self.status_codes),
        }
        if self.delay is not None:
            options["connect_retry_delay"] = self.delay
            options["status_code_retry_delay"] = self.delay
        return options

    def transport_retry(self) -> urllib3_retry.Retry:
        """urllib3's retries for connections that failed before sending, for any method."""
        backoff = 0.1 if self.delay is None else self.delay / 2
        return _CountingRetry(
            total=None,
            connect=self.connect_retries,
            read=False,
            status=0,
            other=0,
            redirect=False,
            backoff_factor=backoff,
            backoff_max=2.0,
            respect_retry_after_header=False,
            raise_on_status=False,
        )

    def resends(self) -> Iterator[float]:
        """The delays before each resend of a checked change (after an ambiguous failure)."""
        delay = self.delay if self.delay is not None else 0.5
        for _ in range(self.retries):
            yield delay
            if self.delay is None:
                delay = min(delay * 2, 8.0)


# The engine's: a balancer's 503 is waited out, as an operator would.
ENGINE = Policy()
# The API's and masakari-manage's: Nova's 5xx is shown as the reference shows it (a host
# create or update answers 500), so that an operator sees Nova's trouble at once; failures
# before sending and time-outs of reads are still retried, as they are invisible.
INTERACTIVE = Policy(status_codes=())
# The failure detector's poll: one more try, then the poll is blind and the next one asks
# again; a poll must not outlast its interval by retrying.
DETECTION = Policy(connect_retries=1, retries=1, status_codes=())


def ambiguous(exc: BaseException) -> bool:
    """Nova may have acted on the request that raised ``exc``."""
    if not isinstance(exc, exception.NovaError):
        return False
    return exc.status is None or exc.status in BALANCER_STATUSES


# --- counting ------------------------------------------------------------------------------


@dataclasses.dataclass
class _Attempts:
    sent: int = 0  # requests handed to the transport (keystoneauth's attempts)
    reconnects: int = 0  # connections that failed before sending and were tried again


_attempts: contextvars.ContextVar[_Attempts | None] = contextvars.ContextVar(
    "masakari_nova_attempts", default=None
)


class _CountingRetry(urllib3_retry.Retry):
    def increment(  # type: ignore[override]
        self, *args: Any, **kwargs: Any
    ) -> urllib3_retry.Retry:
        new = super().increment(*args, **kwargs)  # raises once exhausted
        attempts = _attempts.get()
        if attempts is not None:
            attempts.reconnects += 1
        return new


def sent() -> None:
    """One attempt handed to the transport (called by the client's HTTP adapter)."""
    attempts = _attempts.get()
    if attempts is not None:
        attempts.sent += 1


@contextlib.contextmanager
def counted(operation: str, final: bool) -> Iterator[None]:
    """Count the retries of one request and, when ``final`` (nobody checks and resends after
    it), a give-up when it fails on a failure the policy would retry."""
    attempts = _Attempts()
    token = _attempts.set(attempts)
    try:
        yield
    except exception.NovaError as exc:
        if final and (ambiguous(exc) or exc.status is None):
            metrics.nova_gave_up(operation)
        raise
    finally:
        _attempts.reset(token)
        again = max(0, attempts.sent - 1) + attempts.reconnects
        if again:
            metrics.nova_retried(operation, again)

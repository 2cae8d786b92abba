"""Prometheus metrics: what the API and the engines count, and the calls that count it.

The instruments are created on first use, not at import: in masakari-api's worker processes
they must be multi-process values (masakari.metrics.multiproc sets that up before any is
created). Counting is always on, it costs a lock and an addition; whether anyone can read the
numbers is the [metrics] options' business (docs/operations.md, "Monitoring").
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

T = TypeVar("T")

# A BMC answers in tens of milliseconds to seconds; a confirmation polls up to
# [fencing] confirm_timeout (30 s by default), a kdump entry waits its own time.
FENCE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf"))
# Recoveries take seconds (a restarted VM) to an hour (a host of many instances).
RECOVERY_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf"))
# Nova answers in milliseconds, or after its timeout (nova_api_timeout, 60 s by default).
NOVA_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, float("inf"))

# Holds the instruments of a single-process service (an engine, a one-process API); in
# multi-process mode the values live in files and this registry stays empty.
OWN = CollectorRegistry(auto_describe=True)


@dataclasses.dataclass(frozen=True)
class Instruments:
    notifications_received: Counter
    recovery_duration: Histogram
    first_evacuation: Histogram
    vmoves: Counter
    nova_requests: Histogram
    nova_errors: Counter
    nova_retries: Counter
    nova_give_ups: Counter
    claims: Counter
    takeovers: Counter
    capacity_shortfalls: Counter
    left_behind: Counter
    notifications_held: Counter
    fence_attempts: Counter
    fence_failures: Counter
    fence_duration: Histogram
    retries_host_back: Counter


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


class Once(Generic[T]):
    """A set of instruments created by its first user. Threads of one process (an API
    worker's requests, an engine's recoveries) may all count at once in a fresh process:
    two creations would register each name twice, and the loser's request would fail."""

    def __init__(self, create: Callable[[], T]) -> None:
        self._create = create
        self._lock = threading.Lock()
        self._made: list[T] = []
        _EVERY_SET.append(self)

    def __call__(self) -> T:
        if not self._made:
            with self._lock:
                if not self._made:
                    self._made.append(self._create())
        return self._made[0]

    def forget(self) -> None:
        with self._lock:
            self._made.clear()


_EVERY_SET: list[Once[Any]] = []


def forget_instruments() -> None:
    """The next use of each set creates it again (after a switch to multi-process values)."""
    for made in _EVERY_SET:
        made.forget()


def _create() -> Instruments:
    registry = None if multiprocess() else OWN
    return Instruments(
        notifications_received=Counter(
            "masakari_notifications_received",
            "POST /v1/notifications answered, by notification type and HTTP status.",
            ["type", "code"],
            registry=registry,
        ),
        recovery_duration=Histogram(
            "masakari_recovery_duration_seconds",
            "Time an engine spent on one recovery, by type, recovery method and outcome.",
            ["type", "recovery_method", "status"],
            buckets=RECOVERY_BUCKETS,
            registry=registry,
        ),
        first_evacuation=Histogram(
            "masakari_recovery_first_evacuation_seconds",
            "Time from a host failure's report (its notification's creation) to the first "
            "evacuation request sent to Nova.",
            buckets=RECOVERY_BUCKETS,
            registry=registry,
        ),
        vmoves=Counter(
            "masakari_vmoves",
            "Instance moves (vmoves) written, by the status they were given.",
            ["status"],
            registry=registry,
        ),
        nova_requests=Histogram(
            "masakari_nova_request_duration_seconds",
            "Requests sent to Nova, by operation, and how long each took.",
            ["operation"],
            buckets=NOVA_BUCKETS,
            registry=registry,
        ),
        nova_errors=Counter(
            "masakari_nova_request_errors",
            "Requests to Nova that failed, by operation and HTTP status ('none': no answer).",
            ["operation", "code"],
            registry=registry,
        ),
        nova_retries=Counter(
            "masakari_nova_retries",
            "Requests to Nova and Placement sent again by the retry policy (docs/nova.md), "
            "by operation.",
            ["operation"],
            registry=registry,
        ),
        nova_give_ups=Counter(
            "masakari_nova_give_ups",
            "Requests to Nova and Placement that failed after the retry policy gave up "
            "(the step then fails), by operation.",
            ["operation"],
            registry=registry,
        ),
        claims=Counter(
            "masakari_engine_claims",
            "Notifications an engine claimed to recover (new ones and retries).",
            registry=registry,
        ),
        takeovers=Counter(
            "masakari_engine_takeovers",
            "Notifications an engine took over from an engine that stopped renewing its claim.",
            registry=registry,
        ),
        capacity_shortfalls=Counter(
            "masakari_capacity_shortfalls",
            "Host recovery attempts that found, in Placement, no room for some of the failed "
            "host's instances, by target (scheduler or reserved_host).",
            ["target"],
            registry=registry,
        ),
        left_behind=Counter(
            "masakari_instances_left_behind",
            "Instances host recovery did not send to Nova for lack of room, by target.",
            ["target"],
            registry=registry,
        ),
        notifications_held=Counter(
            "masakari_notifications_held",
            "Host failure reports put on hold at intake, by the guard that held them.",
            ["reason"],
            registry=registry,
        ),
        fence_attempts=Counter(
            "masakari_fence_attempts",
            "Host fencing calls an engine made (power off, the status reads that confirm it, "
            "power on, a kdump wait, an operator's release), by driver type, action and "
            "result.",
            ["driver", "action", "result"],
            registry=registry,
        ),
        fence_failures=Counter(
            "masakari_fence_failures",
            "Host failures no fencing driver proved dead: held for an operator.",
            registry=registry,
        ),
        fence_duration=Histogram(
            "masakari_fence_duration_seconds",
            "How long each host fencing call took, by driver type and action (a status "
            "confirmation: from its first read to its last).",
            ["driver", "action"],
            buckets=FENCE_BUCKETS,
            registry=registry,
        ),
        retries_host_back=Counter(
            "masakari_retries_host_back",
            "Host failure recoveries the periodic retry did not run again because the host "
            "was back ([host_failure] retry_only_while_host_down): each ended failed, its "
            "host left disabled and on maintenance for an operator.",
            registry=registry,
        ),
    )


instruments = Once(_create)


def notification_received(kind: str, code: int) -> None:
    instruments().notifications_received.labels(kind, str(code)).inc()


def recovery_finished(kind: str, recovery_method: str, status: str, seconds: float) -> None:
    instruments().recovery_duration.labels(kind, recovery_method, status).observe(seconds)


def first_evacuation(seconds: float) -> None:
    instruments().first_evacuation.observe(max(seconds, 0.0))


def vmove_written(status: str) -> None:
    instruments().vmoves.labels(status).inc()


def nova_retried(operation: str, times: int = 1) -> None:
    instruments().nova_retries.labels(operation).inc(times)


def nova_gave_up(operation: str) -> None:
    instruments().nova_give_ups.labels(operation).inc()


def claim_taken() -> None:
    instruments().claims.inc()


def takeover() -> None:
    instruments().takeovers.inc()


def capacity_shortfall(target: str, left_behind: int) -> None:
    instruments().capacity_shortfalls.labels(target).inc()
    instruments().left_behind.labels(target).inc(left_behind)


def notification_held(reason: str) -> None:
    """``reason``: a label value of :data:`masakari.db.holds.METRIC_REASONS` (the API's
    intake guards, and the engines' holds of hosts host fencing did not prove dead)."""
    instruments().notifications_held.labels(reason).inc()


def fence_attempt(driver: str, action: str, result: str, seconds: float | None) -> None:
    """``driver``: the driver's type (ipmi, redfish, agent, kdump; operator for a release)."""
    made = instruments()
    made.fence_attempts.labels(driver, action, result).inc()
    if seconds is not None:
        made.fence_duration.labels(driver, action).observe(max(seconds, 0.0))


def fence_failed() -> None:
    instruments().fence_failures.inc()


def retry_host_back() -> None:
    instruments().retries_host_back.inc()


@contextlib.contextmanager
def nova_request(operation: str) -> Iterator[None]:
    """Time one request to Nova; an exception counts as an error (with its HTTP status)."""
    started = time.monotonic()
    try:
        yield
    except Exception as exc:
        # NovaError.status is Nova's HTTP status, None when no answer came.
        code = getattr(exc, "status", None)
        instruments().nova_errors.labels(operation, str(code or "none")).inc()
        raise
    finally:
        instruments().nova_requests.labels(operation).observe(time.monotonic() - started)

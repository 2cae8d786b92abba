"""The retry policy (masakari.compute.retry) and the connection limit
(masakari.compute.transport), without a network: urllib3's Retry driven by hand."""

from __future__ import annotations

import threading
import time

import pytest
from urllib3 import exceptions as urllib3_exc

from masakari.compute import retry, transport
from masakari.compute.retry import Policy

CONNECT = urllib3_exc.ConnectTimeoutError(None, "connect timed out")
READ = urllib3_exc.ReadTimeoutError(None, "/", "read timed out")  # type: ignore[arg-type]


def _fail(policy: Policy, error: Exception, times: int, repeatable: bool) -> int:
    """How many of ``times`` failures in a row the transport retries before raising."""
    attempt = policy.transport_retry()
    with retry.counted("GET /servers/{id}", repeatable=repeatable):
        for n in range(times):
            try:
                attempt = attempt.increment("GET", "/servers/x", error=error)
            except (urllib3_exc.MaxRetryError, type(error)):
                return n
    return times


@pytest.mark.parametrize("resend", [1, 2, 3, 4, 5, 8])
def test_the_waits_grow_with_jitter_and_stay_bounded(resend: int) -> None:
    ceiling = min(retry.MAX_DELAY, retry.FIRST_DELAY * 2 ** (resend - 1))
    waits = {Policy().backoff(resend) for _ in range(50)}
    assert all(ceiling / 2 <= w <= ceiling for w in waits)
    assert len(waits) > 1  # drawn, not the same for every request


def test_a_connection_that_failed_is_retried_for_any_request() -> None:
    assert _fail(Policy(connect_retries=3), CONNECT, 10, repeatable=False) == 3
    assert _fail(Policy(connect_retries=3), CONNECT, 10, repeatable=True) == 3


def test_a_read_time_out_is_retried_only_for_a_repeatable_request() -> None:
    assert _fail(Policy(retries=2), READ, 10, repeatable=True) == 2
    assert _fail(Policy(retries=2), READ, 10, repeatable=False) == 0


def test_a_time_out_stays_a_time_out_once_the_retries_are_spent() -> None:
    """requests would turn urllib3's MaxRetryError into a connection error: the caller's
    NovaTimeout ("Timeout while requesting Nova API.") must stay what it was."""
    attempt = Policy(retries=0).transport_retry()
    with (
        retry.counted("GET /servers/{id}", repeatable=True),
        pytest.raises(urllib3_exc.ReadTimeoutError),
    ):
        attempt.increment("GET", "/servers/x", error=READ)


def test_the_budget_goes_on_past_the_counts_then_gives_up() -> None:
    policy = Policy(connect_retries=1, retries=1, budget=0.3)
    started = time.monotonic()
    attempt = policy.transport_retry()
    tries = 0
    with pytest.raises(urllib3_exc.MaxRetryError):
        while True:
            attempt = attempt.increment("POST", "/servers/x/action", error=CONNECT)
            tries += 1
            time.sleep(0.01)
    assert tries > 5  # far past the count of 1
    assert 0.3 <= time.monotonic() - started < 2


def test_an_error_of_no_known_kind_is_not_retried() -> None:
    other = urllib3_exc.SSLError("bad certificate")
    assert _fail(Policy(budget=60), other, 5, repeatable=True) == 0


def test_checked_resends_follow_the_counts_then_the_budget() -> None:
    now = [0.0]
    assert len(list(Policy(retries=3, delay=0).resends(lambda: now[0]))) == 3
    waits = Policy(retries=2, budget=10.0, delay=1.0).resends(lambda: now[0])
    sent = 0
    for _ in waits:
        sent += 1
        now[0] += 1.0
    assert sent == 10  # past the count of 2, until the 10 s are over


def test_the_connection_limit_is_halved_once_per_overload_and_grows_back() -> None:
    now = [0.0]
    limit = transport.ConnectionLimit(16, cut_every=1.0, monotonic=lambda: now[0])
    for _ in range(3):  # one overload, seen by three requests at once: one cut
        limit.acquire()
    for _ in range(3):
        limit.release(True)
    assert limit.limit == 8
    now[0] += 1.0
    limit.acquire()
    limit.release(True)
    assert limit.limit == 4
    grown = []
    for _ in range(10):  # each answer adds 1/limit: about one more per round of answers
        limit.acquire()
        limit.release(False)
        grown.append(limit.limit)
    assert grown == [4, 4, 4, 4, 5, 5, 5, 5, 5, 6]
    limit.acquire()
    limit.release(None)  # says nothing about Nova
    assert limit.limit == 6
    for _ in range(300):
        limit.acquire()
        limit.release(False)
    assert limit.limit == 16  # never past the configured most


def test_requests_beyond_the_limit_wait_in_line() -> None:
    limit = transport.ConnectionLimit(2)
    limit.acquire()
    limit.acquire()
    through = threading.Event()

    def third() -> None:
        limit.acquire()
        through.set()

    waiter = threading.Thread(target=third, daemon=True)
    waiter.start()
    assert not through.wait(0.2)
    limit.release(False)
    assert through.wait(5)
    assert limit.in_use == 2


def test_a_live_migration_is_not_repeatable_its_reads_are() -> None:
    """A second os-migrateLive is refused while the first runs, and moves the server again
    after it: the caller reads the migrations instead (docs/nova.md, Retries)."""
    assert not retry.repeatable("POST", "os-migrateLive")
    assert retry.repeatable("GET", None)

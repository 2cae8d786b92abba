"""The engine's lease on a claim, and how a run's waits end with it."""

from __future__ import annotations

import pytest

from masakari.engine.context import Cancelled, PollTimeout
from masakari.engine.lease import Lease, LeaseLost
from tests.support.clock import FakeClock
from tests.support.runs import idle_run


def _lease(clock: FakeClock, term: float = 10.0, started: float | None = None) -> Lease:
    return Lease("engine-a", 3, clock, term, clock.monotonic() if started is None else started)


def test_lease_carries_its_owner_and_token(clock):
    lease = _lease(clock)
    assert (lease.owner, lease.token) == ("engine-a", 3)


def test_deadline_counts_from_started(clock):
    clock.offset = 100.0
    # The claim was sent at 95: five of its ten seconds are gone already.
    lease = _lease(clock, started=95.0)
    assert lease.remaining() == 5.0
    clock.offset = 104.0
    assert lease.remaining() == 1.0 and not lease.lost
    lease.check()
    clock.offset = 105.0
    assert lease.remaining() == 0.0 and lease.lost
    with pytest.raises(LeaseLost):
        lease.check()


def test_remaining_never_goes_below_zero(clock):
    lease = _lease(clock)
    clock.offset = 1000.0
    assert lease.remaining() == 0.0


def test_renewal_extends_from_when_it_was_sent(clock):
    lease = _lease(clock)  # deadline 10
    clock.offset = 8.0
    lease.renewed(sent_at=6.0)  # answered at 8, sent at 6: the new deadline is 16, not 18
    assert lease.remaining() == 8.0
    clock.offset = 15.0
    lease.check()
    clock.offset = 16.0
    with pytest.raises(LeaseLost):
        lease.check()


def test_an_older_renewal_never_shortens_the_lease(clock):
    lease = _lease(clock)
    clock.offset = 5.0
    lease.renewed(sent_at=5.0)  # deadline 15
    lease.renewed(sent_at=1.0)  # a slow answer to an earlier renewal
    assert lease.remaining() == 10.0


def test_a_lease_past_its_deadline_stays_lost_when_renewed_afterwards(clock):
    lease = _lease(clock)
    clock.offset = 12.0
    assert lease.lost
    # The database accepted a renewal sent in time, but the answer came too late.
    lease.renewed(sent_at=9.0)
    assert lease.lost and lease.remaining() == 0.0
    with pytest.raises(LeaseLost):
        lease.check()
    lease.renewed(sent_at=12.0)
    assert lease.lost


def test_renewal_answered_exactly_at_the_deadline_is_too_late(clock):
    lease = _lease(clock)
    clock.offset = 10.0
    lease.renewed(sent_at=9.0)
    assert lease.lost


def test_lose(clock):
    lease = _lease(clock)
    lease.lose()
    assert lease.lost and lease.remaining() == 0.0
    with pytest.raises(LeaseLost):
        lease.check()
    lease.renewed(sent_at=clock.monotonic())
    assert lease.lost


def test_lease_lost_is_a_cancellation():
    assert issubclass(LeaseLost, Cancelled)


# --- a run's waits -------------------------------------------------------------------------------


def test_sleep_within_the_lease(clock):
    run = idle_run(clock, lease_term=100)
    run.sleep(60)
    assert clock.offset == 60


def test_long_sleep_ends_with_lease_lost_when_the_lease_runs_out(clock):
    run = idle_run(clock, lease_term=10)
    with pytest.raises(LeaseLost):
        run.sleep(180)
    # The sleep ends at the lease's end, not 170 s later.
    assert clock.offset == 10


def test_sleep_after_the_lease_ran_out_does_not_sleep(clock):
    run = idle_run(clock, lease_term=10)
    clock.offset = 10
    with pytest.raises(LeaseLost):
        run.sleep(5)
    assert clock.offset == 10


def test_long_sleep_goes_on_while_the_lease_is_renewed(clock):
    run = idle_run(clock, lease_term=10)
    # A heartbeat renews the lease every 4 s while the run sleeps.
    clock.every(4, lambda: run.lease.renewed(clock.monotonic()))
    run.sleep(180)
    assert clock.offset == pytest.approx(180)
    assert not run.lease.lost


def test_poll_without_timeout_ends_with_the_lease(clock):
    run = idle_run(clock, lease_term=30)
    probes = []
    with pytest.raises(LeaseLost):
        run.poll(lambda: probes.append(clock.offset), interval=1, timeout=0)
    assert clock.offset == 30
    assert probes == [float(i) for i in range(30)]


def test_poll_timeout_within_the_lease_is_a_timeout(clock):
    run = idle_run(clock, lease_term=30)
    with pytest.raises(PollTimeout):
        run.poll(lambda: None, interval=1, timeout=5)


def test_check_raises_lease_lost(clock):
    run = idle_run(clock, lease_term=10)
    run.check()
    run.lease.lose()
    with pytest.raises(LeaseLost):
        run.check()

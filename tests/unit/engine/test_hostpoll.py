"""The batched poller: one list per host and round for every waiter, failures reported.
Against the simulator, in process."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from masakari import exception
from masakari.engine.errors import Cancelled, PollTimeout
from masakari.engine.hostpoll import HURRIED, HostPoller
from tests.fakes.nova import NovaSimulator


@pytest.fixture
def sim() -> NovaSimulator:
    return NovaSimulator()  # not started: answers in process


def _lists(sim: NovaSimulator) -> list[str]:
    """The hosts whose servers were listed, one entry per request."""
    return [dict(c["query"])["host"] for c in sim.nova_calls() if c["path"] == "/servers/detail"]


def _never() -> None:
    return None


def test_waiters_of_one_host_share_each_list(sim: NovaSimulator) -> None:
    for i in range(5):
        sim.add_server(f"vm-{i}", host="h1")
    poller = HostPoller(sim.client(), interval=0.05)
    poller.start()
    seen: list[str] = []
    lock = threading.Lock()

    def wait(vm: str) -> None:
        def judge(server: dict[str, Any] | None) -> bool:
            return server is None  # done once it left the host

        poller.wait("h1", vm, judge, _never, timeout=5)
        with lock:
            seen.append(vm)

    threads = [threading.Thread(target=wait, args=(f"vm-{i}",)) for i in range(5)]
    try:
        for t in threads:
            t.start()
        while len(_lists(sim)) < 3:
            threading.Event().wait(0.01)
        rounds = len(_lists(sim))
        for i in range(5):  # every instance left
            sim.update_server(f"vm-{i}", host="h2")
        for t in threads:
            t.join(5)
    finally:
        poller.stop()
    assert sorted(seen) == [f"vm-{i}" for i in range(5)]
    # one list per round, not per waiter
    assert set(_lists(sim)) == {"h1"}
    assert len(_lists(sim)) <= rounds + 3


def test_a_failed_list_is_reported_to_the_waiter(sim: NovaSimulator) -> None:
    sim.fail(500, path="/servers/detail")
    poller = HostPoller(sim.client(), interval=0.05)
    poller.start()
    try:
        with pytest.raises(exception.NovaError):
            poller.wait("h1", "vm", lambda s: False, _never, timeout=5)
    finally:
        poller.stop()


def test_timeout_and_cancel(sim: NovaSimulator) -> None:
    sim.add_server("vm", host="h1")
    poller = HostPoller(sim.client(), interval=0.05)
    poller.start()
    try:
        with pytest.raises(PollTimeout):
            poller.wait("h1", "vm", lambda s: False, _never, timeout=0.2)

        def cancelled() -> None:
            raise Cancelled()

        with pytest.raises(Cancelled):
            poller.wait("h1", "vm", lambda s: False, cancelled, timeout=5)
    finally:
        poller.stop()


def test_the_period_is_shorter_only_while_a_waiter_hurries(sim: NovaSimulator) -> None:
    sim.add_server("vm", host="h1")
    poller = HostPoller(sim.client(), interval=1.0)
    slot_awaited = threading.Event()
    assert poller.period() == 1.0
    poller.poll_host("h1")
    done = threading.Event()

    def wait() -> None:
        poller.wait("h1", "vm", lambda s: s is None, _never, 5, hurry=slot_awaited.is_set)
        done.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        while not poller._hurries:
            threading.Event().wait(0.01)
        assert poller.period() == 1.0  # nobody waits for a slot: verify_interval
        slot_awaited.set()
        assert poller.period() == HURRIED
    finally:
        sim.update_server("vm", host="h2")
        poller.poll_host("h1")
        waiter.join(5)
    assert done.is_set()
    assert poller.period() == 1.0  # the waiter is gone, and its hurry with it

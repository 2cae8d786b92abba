"""The batched poller: one list per host and round for every waiter, failures reported."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from masakari import exception
from masakari.compute.servers import Server
from masakari.engine.errors import Cancelled, PollTimeout
from masakari.engine.hostpoll import HURRIED, HostPoller


class _Nova:
    def __init__(self) -> None:
        self.lists: list[str] = []
        self.on_host: dict[str, list[Server]] = {}
        self.error: Exception | None = None

    def list_servers_on_host(self, host: str) -> list[Server]:
        self.lists.append(host)
        if self.error is not None:
            raise self.error
        return list(self.on_host.get(host, []))


def _never() -> None:
    return None


def test_waiters_of_one_host_share_each_list() -> None:
    nova = _Nova()
    nova.on_host["h1"] = [Server(f"vm-{i}") for i in range(5)]
    poller = HostPoller(nova, interval=0.05)  # type: ignore[arg-type]
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
        while len(nova.lists) < 3:
            threading.Event().wait(0.01)
        rounds = len(nova.lists)
        nova.on_host["h1"] = []  # every instance left
        for t in threads:
            t.join(5)
    finally:
        poller.stop()
    assert sorted(seen) == [f"vm-{i}" for i in range(5)]
    # one list per round, not per waiter
    assert set(nova.lists) == {"h1"}
    assert len(nova.lists) <= rounds + 3


def test_a_failed_list_is_reported_to_the_waiter() -> None:
    nova = _Nova()
    nova.error = exception.NovaError(message="Nova is down")
    poller = HostPoller(nova, interval=0.05)  # type: ignore[arg-type]
    poller.start()
    try:
        with pytest.raises(exception.NovaError):
            poller.wait("h1", "vm", lambda s: False, _never, timeout=5)
    finally:
        poller.stop()


def test_timeout_and_cancel() -> None:
    nova = _Nova()
    nova.on_host["h1"] = [Server("vm")]
    poller = HostPoller(nova, interval=0.05)  # type: ignore[arg-type]
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


def test_the_period_is_shorter_only_while_a_waiter_hurries() -> None:
    nova = _Nova()
    nova.on_host["h1"] = [Server("vm")]
    poller = HostPoller(nova, interval=1.0)  # type: ignore[arg-type]
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
        nova.on_host["h1"] = []
        poller.poll_host("h1")
        waiter.join(5)
    assert done.is_set()
    assert poller.period() == 1.0  # the waiter is gone, and its hurry with it

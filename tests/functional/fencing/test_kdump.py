"""The fence_kdump listener on loopback: Debian's fence_kdump_send and a sender of the
tests' own that plays several hosts; garbage is counted and ignored."""

from __future__ import annotations

import datetime
import socket
import struct
import threading
import time

import pytest

from masakari.fencing import base, drivers, kdump
from masakari.fencing.kdump import KdumpListener
from tests.fakes.kdump_sender import (
    FENCE_KDUMP_SEND,
    fence_kdump_send,
    flood_process,
    send_kdump,
)
from tests.support.fencing import require_file

WELL_WITHIN = 10
START = datetime.datetime(2026, 1, 1)


class Recorder:
    """A sink that remembers what it got, and lets a test wait for it."""

    def __init__(self) -> None:
        self.got: list[tuple[str, datetime.datetime]] = []
        self.cond = threading.Condition()

    def __call__(self, address: str, received_at: datetime.datetime) -> None:
        with self.cond:
            self.got.append((address, received_at))
            self.cond.notify_all()

    def wait_for(self, count: int) -> list[str]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.got) >= count, WELL_WITHIN), self.got
            return [address for address, _ in self.got]


@pytest.fixture
def listener():
    sink = Recorder()
    with KdumpListener(sink, host="127.0.0.1", port=0) as running:
        running.recorder = sink  # type: ignore[attr-defined]
        yield running


def test_fence_kdump_sends_message_is_received(request, listener) -> None:
    require_file(request, FENCE_KDUMP_SEND, "fence-agents")
    fence_kdump_send(listener.port, count=2, interval=1)
    assert listener.recorder.wait_for(2) == ["127.0.0.1", "127.0.0.1"]
    assert listener.ignored == 0


def test_each_source_address_is_a_host(listener) -> None:
    send_kdump(listener.port, source="127.0.0.7")
    send_kdump(listener.port, source="127.0.0.8")
    assert sorted(listener.recorder.wait_for(2)) == ["127.0.0.7", "127.0.0.8"]
    (_, received_at), _ = listener.recorder.got
    assert received_at.tzinfo is None  # naive UTC, as the database keeps times
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert abs((now - received_at).total_seconds()) < 60


@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_either_byte_order(listener, byteorder) -> None:
    send_kdump(listener.port, payload=kdump.message(byteorder))
    listener.recorder.wait_for(1)


def test_garbage_is_counted_and_ignored(listener) -> None:
    garbage = [
        b"",
        b"\x40\x2a\x30",  # too short
        struct.pack("<II", 0xDEADBEEF, 1),  # not the magic
        struct.pack("<II", kdump.MAGIC, 2),  # a version it does not know
        b"GET / HTTP/1.1\r\n\r\n",
    ]
    for payload in garbage:
        send_kdump(listener.port, source="127.0.0.9", payload=payload)
    send_kdump(listener.port, source="127.0.0.10")
    assert listener.recorder.wait_for(1) == ["127.0.0.10"]
    assert (listener.received, listener.ignored) == (1, len(garbage))


def test_a_failing_sink_does_not_stop_the_listener() -> None:
    got: list[str] = []

    def sink(address: str, received_at: datetime.datetime) -> None:
        got.append(address)
        if len(got) == 1:
            raise RuntimeError("database down")

    with KdumpListener(sink, host="127.0.0.1", port=0) as running:
        send_kdump(running.port, source="127.0.0.11")
        deadline = time.monotonic() + WELL_WITHIN
        while not got:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        send_kdump(running.port, source="127.0.0.12")
        while len(got) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert running.sink_failures == 1
    assert got == ["127.0.0.11", "127.0.0.12"]


def test_an_ipv6_listener_reports_ipv4_senders_plainly() -> None:
    sink = Recorder()
    running = KdumpListener(sink, host="::", port=0)
    try:
        running.start()
    except OSError as exc:
        pytest.skip(f"no IPv6: {exc}")
    try:
        send_kdump(running.port, source="127.0.0.13")
        assert sink.wait_for(1) == ["127.0.0.13"]
    finally:
        running.stop()


def test_stop_frees_the_port() -> None:
    running = KdumpListener(Recorder(), host="127.0.0.1", port=0).start()
    port = running.port
    started = time.monotonic()
    running.stop()
    assert time.monotonic() - started < WELL_WITHIN
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", port))


def test_parse_listen() -> None:
    assert kdump.parse_listen("0.0.0.0:7410") == ("0.0.0.0", 7410)
    assert kdump.parse_listen(":7410") == ("0.0.0.0", 7410)
    assert kdump.parse_listen("[::]:7410") == ("::", 7410)
    assert kdump.parse_listen("192.0.2.1:1") == ("192.0.2.1", 1)
    for bad in ("7410", "host:", "host:0", "host:65536", "host:port"):
        with pytest.raises(ValueError, match="ADDRESS:PORT"):
            kdump.parse_listen(bad)


def test_the_listener_hands_each_message_to_its_sink(listener) -> None:
    received: list[tuple[str, datetime.datetime]] = []
    listener.sink = lambda address, at: received.append((address, at))
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(
        seconds=1
    )
    send_kdump(listener.port, source="127.0.0.14")
    deadline = time.monotonic() + WELL_WITHIN
    while not received:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    ((address, at),) = received
    assert address == "127.0.0.14" and at >= before


def test_check_of_a_kdump_entry_resolves_its_address() -> None:
    ok = drivers.check(base.DriverSpec(base.KDUMP, address="localhost", options={"wait": "10"}))
    assert (ok.ok, ok.reachable, ok.state) == (True, None, None)
    bad = drivers.check(base.DriverSpec(base.KDUMP, address="no-such-host.invalid"))
    assert not bad.ok and "does not resolve" in bad.error


@pytest.mark.parametrize(
    ("options", "short"),
    [
        ({}, True),  # wait 0: only a message already there, and none can be yet
        ({"wait": "10"}, False),  # one message, one interval of fence_kdump_send
        ({"wait": "15", "messages": "2"}, True),
        ({"wait": "20", "messages": "2"}, False),
        ({"wait": "4", "messages": "2", "interval": "2"}, False),
    ],
)
def test_check_of_a_kdump_entry_says_when_its_wait_is_too_short(options, short) -> None:
    found = drivers.check(base.DriverSpec(base.KDUMP, address="127.0.0.1", options=options))
    assert found.ok is not short
    if short:
        assert "is shorter than messages x interval" in found.error


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WELL_WITHIN
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_only_the_sources_it_keeps_reach_the_sink() -> None:
    sink = Recorder()
    kept = {"127.0.0.20"}
    with KdumpListener(sink, host="127.0.0.1", port=0, allows=kept.__contains__) as running:
        send_kdump(running.port, source="127.0.0.21", count=5)
        send_kdump(running.port, source="127.0.0.20")
        assert sink.wait_for(1) == ["127.0.0.20"]
        wait_until(lambda: running.unknown == 5, "the other source's messages dropped")
    assert [address for address, _ in sink.got] == ["127.0.0.20"]


def test_a_source_reaches_the_sink_at_most_once_per_interval() -> None:
    sink = Recorder()
    outcomes: list[str] = []
    with KdumpListener(
        sink, host="127.0.0.1", port=0, store_every=0.5, counted=outcomes.append
    ) as running:
        send_kdump(running.port, source="127.0.0.22", count=200)
        sink.wait_for(1)
        wait_until(lambda: running.received == 200, "all 200 read")
        time.sleep(0.6)
        send_kdump(running.port, source="127.0.0.22")
        send_kdump(running.port, source="127.0.0.23")  # another source: its own interval
        assert sink.wait_for(3) == ["127.0.0.22", "127.0.0.22", "127.0.0.23"]
    assert (running.stored, running.limited) == (3, 199)
    assert outcomes.count(kdump.RATE_LIMITED) == 199 and outcomes.count(kdump.STORED) == 3


def test_a_flood_from_other_sources_does_not_hide_the_real_message() -> None:
    sink = Recorder()
    kept = {"127.0.0.1"}
    sources = [f"127.0.1.{i}" for i in range(1, 201)]
    with KdumpListener(sink, host="127.0.0.1", port=0, allows=kept.__contains__) as running:
        flooding = flood_process(running.port, sources, rounds=50, pause=0.02)  # 10,000
        for _ in range(3):  # the real host, every second while the flood goes on
            send_kdump(running.port, source="127.0.0.1")
            time.sleep(1.0)
        out, _ = flooding.communicate(timeout=60)
        assert int(out) == 10_000
        assert set(sink.wait_for(2)) == {"127.0.0.1"}
        wait_until(lambda: running.unknown == 10_000, "every flooded datagram read, none lost")
    assert 2 <= running.stored <= 3

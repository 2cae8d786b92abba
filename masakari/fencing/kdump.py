"""fence_kdump's messages: a crashed host that says so is dead without a power off.

A host whose kernel crashed boots its kdump kernel, which runs ``fence_kdump_send`` (from
fence-agents): it sends a UDP datagram every few seconds (``-i``, 10 by default) to each
node it is given, port 7410 by default. The datagram is two 32-bit words in the sender's
byte order: the magic ``0x1B302A40`` and the version ``1`` (fence-agents'
agents/kdump/message.h). Nothing else identifies the host: its source address does, so a
fencing-file kdump entry names the address the host's messages come from, and anyone who
can forge that source address on the listener's network can forge the message
(docs/operations.md, kdump's threat model).

:class:`KdumpListener` receives them (``[fencing] kdump_listen``) and hands each valid one,
``(source_address, received_at)``, to a sink callable (the engine stores them in the
database, where every engine finds them), on a writer thread of its own: the receiving
thread only drains the socket and sorts, so that a slow database never makes the kernel
drop datagrams. Before anything is handed on, a datagram is dropped (and counted) when it
is no fence_kdump message, when its source is not one the listener was told to keep
(``allows``: the kdump addresses of the fencing file's hosts), or when the same source
already had one handed on less than ``store_every`` seconds ago: a flood costs at most one
row per configured source per interval, and a flood from elsewhere costs no write at all.
:class:`KdumpRule` is what a kdump entry asks for: how many messages, how far apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import ipaddress
import logging
import queue
import select
import socket
import struct
import threading
import time
from collections.abc import Callable

from masakari.fencing import base

LOG = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PORT",
    "KdumpListener",
    "KdumpRule",
    "is_message",
    "message",
    "parse_listen",
    "resolve",
]

MAGIC = 0x1B302A40
VERSION_1 = 0x1
DEFAULT_PORT = 7410
# fence_kdump reads this many bytes of a datagram and ignores the rest.
_SIZE = 8
# fence_kdump_send's -i: seconds between two of its messages.
SENDER_INTERVAL = 10.0
# Seconds during which a source's further messages are dropped once one was handed on:
# half fence_kdump_send's shortest interval (-i is whole seconds, at least 1), so that none
# of a real sender's is lost; and a bound on the writes a flood from one source costs.
STORE_EVERY = 0.5
# The receive buffer asked for (the kernel caps it at net.core.rmem_max): room for a burst
# while the thread sorts what came before it.
RECEIVE_BUFFER = 4 * 1024 * 1024
# Messages waiting for the sink; past it (the database is stalled) the newest are dropped.
QUEUE_SIZE = 1024
# Datagrams read in one go before the stop request is looked at again.
_BATCH = 512

# What became of a datagram (``counted``'s argument; the engine's metric's label).
STORED = "stored"  # handed to the sink, which stored it
NOT_A_MESSAGE = "not_a_message"  # not fence_kdump's 8 bytes
UNKNOWN_SOURCE = "unknown_source"  # from a source not kept
RATE_LIMITED = "rate_limited"  # its source had one handed on within store_every
QUEUE_FULL = "queue_full"  # the sink did not keep up
NOT_STORED = "not_stored"  # the sink failed

Sink = Callable[[str, datetime.datetime], None]


def _uncounted(outcome: str) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class KdumpRule:
    """What a kdump entry asks for before it counts: ``messages`` messages (the entry's
    ``messages``, 1 by default), each at least half the sender's ``interval`` (the entry's
    ``interval``, fence_kdump_send's default 10 s) after the one counted before it, so
    that one burst of datagrams counts once."""

    messages: int = 1
    interval: float = SENDER_INTERVAL

    @classmethod
    def of(cls, spec: base.DriverSpec) -> KdumpRule:
        return cls(
            messages=int(spec.options.get("messages", 1)),
            interval=float(spec.options.get("interval", SENDER_INTERVAL)),
        )

    @property
    def spacing(self) -> float:
        return self.interval / 2

    def short_wait(self, wait: float) -> str | None:
        """Why ``wait`` (the entry's) cannot see this many messages come, or None: they
        must all arrive after the report, one every ``interval`` at best."""
        needed = self.messages * self.interval
        if wait >= needed:
            return None
        return (
            f"wait {wait:g} s is shorter than messages x interval ({self.messages} x "
            f"{self.interval:g} s = {needed:g} s): the host's messages, which count only "
            "once the failure is reported, may not all come in time"
        )


def message(byteorder: str = "little") -> bytes:
    """A version 1 message, as ``fence_kdump_send`` on a host of ``byteorder`` sends it."""
    return struct.pack("<II" if byteorder == "little" else ">II", MAGIC, VERSION_1)


def is_message(datagram: bytes) -> bool:
    """Whether ``datagram`` is a version 1 fence_kdump message, in either byte order (the
    sender writes its own; fence_kdump itself accepts only its host's)."""
    return datagram[:_SIZE] in _MESSAGES


_MESSAGES = (message("little"), message("big"))


def parse_listen(value: str) -> tuple[str, int]:
    """``ADDRESS:PORT`` (``[v6]:PORT`` for IPv6; ``:PORT`` for every IPv4 address) as a
    bindable ``(host, port)``; ValueError says what is wrong."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{value!r} is not ADDRESS:PORT (e.g. 0.0.0.0:{DEFAULT_PORT})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port_text)


def resolve(address: str) -> set[str]:
    """The IP addresses ``address`` (an IP address or a name) stands for, as the listener
    reports sources (IPv4-mapped IPv6 as plain IPv4)."""
    try:
        return {_normal(address)}
    except ValueError:
        pass
    infos = socket.getaddrinfo(address, None, type=socket.SOCK_DGRAM)
    return {_normal(str(info[4][0])) for info in infos}


def _normal(address: str) -> str:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _utcnow() -> datetime.datetime:
    # The database's convention: naive UTC.
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


class KdumpListener:
    """Receives fence_kdump messages on ``(host, port)`` until :meth:`stop`.

    ``sink(source_address, received_at)`` is called on the listener's writer thread for
    each message kept (``received_at``: naive UTC, when it was read off the socket).
    ``allows(source_address)`` says which sources are kept (None: every one).
    ``port`` 0 picks a free one (:attr:`port` says which). The counters say what became of
    each datagram, and ``counted(outcome)`` is told too (the engine's metric).
    """

    def __init__(
        self,
        sink: Sink,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        now: Callable[[], datetime.datetime] = _utcnow,
        allows: Callable[[str], bool] | None = None,
        store_every: float = STORE_EVERY,
        counted: Callable[[str], None] = _uncounted,
    ) -> None:
        self.sink = sink
        self.host = host
        self.port = port
        self.now = now
        self.allows = allows
        self.store_every = store_every
        self.counted = counted
        self.received = 0
        self.ignored = 0
        self.unknown = 0
        self.limited = 0
        self.overflow = 0
        self.stored = 0
        self.sink_failures = 0
        # Source -> when (monotonic) its last message was handed on; only allowed sources
        # enter, so it stays as small as the fencing file.
        self._last: dict[str, float] = {}
        self._queue: queue.Queue[tuple[str, datetime.datetime] | None] = queue.Queue(QUEUE_SIZE)
        self._sock: socket.socket | None = None
        self._v6 = False
        self._threads: list[threading.Thread] = []
        # stop() writes to it: the receiving thread waits on both.
        self._wake: tuple[socket.socket, socket.socket] | None = None

    def start(self) -> KdumpListener:
        if self._sock is not None:
            raise RuntimeError("the kdump listener is already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._v6 = family == socket.AF_INET6
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            if family == socket.AF_INET6:
                # "::" receives IPv4 too (as mapped addresses, normalised).
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._wake = socket.socketpair()
        self._threads = [
            threading.Thread(
                target=self._run, args=(sock, self._wake[0]), name="kdump-listener", daemon=True
            ),
            threading.Thread(target=self._write, name="kdump-writer", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        LOG.info("Listening for fence_kdump messages on %s:%d", self.host, self.port)
        return self

    def stop(self) -> None:
        sock, self._sock = self._sock, None
        wake, self._wake = self._wake, None
        if wake is not None:
            wake[1].send(b"x")
        if self._threads:
            self._threads[0].join(5)
            with contextlib.suppress(queue.Full):  # a writer stuck on the database
                self._queue.put(None, timeout=5)  # after what the receiver queued
            self._threads[1].join(5)
            self._threads = []
        for each in (sock, *(wake or ())):
            if each is not None:
                each.close()

    def __enter__(self) -> KdumpListener:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, sock: socket.socket, wake: socket.socket) -> None:
        while True:
            readable, _, _ = select.select([sock, wake], [], [])
            if wake in readable:
                return
            # Drain what is there without a select per datagram: a flood is read as fast
            # as it comes, and the real message behind it finds room in the buffer.
            for _ in range(_BATCH):
                try:
                    datagram, source = sock.recvfrom(65535)
                except BlockingIOError:
                    break
                except OSError:
                    LOG.exception("fence_kdump listener: receive failed")
                    break
                self.handle(datagram, source[0])

    def handle(self, datagram: bytes, source: str) -> bool:
        """One datagram from ``source``: queued for the sink when it is a message from a
        source kept, and the first from it for ``store_every`` seconds."""
        if not is_message(datagram):
            self.ignored += 1
            self.counted(NOT_A_MESSAGE)
            return False
        self.received += 1
        # An IPv4 socket reports dotted quads already: a flood is not parsed datagram by
        # datagram.
        address = _normal(source) if self._v6 else source
        if self.allows is not None and not self.allows(address):
            self.unknown += 1
            self.counted(UNKNOWN_SOURCE)
            return False
        now = time.monotonic()
        last = self._last.get(address)
        if last is not None and now - last < self.store_every:
            self.limited += 1
            self.counted(RATE_LIMITED)
            return False
        try:
            self._queue.put_nowait((address, self.now()))
        except queue.Full:
            self.overflow += 1
            self.counted(QUEUE_FULL)
            return False
        self._last[address] = now
        if self.allows is None and len(self._last) > QUEUE_SIZE:
            # No filter (tests): forget the sources past their interval.
            self._last = {a: t for a, t in self._last.items() if now - t < self.store_every}
        return True

    def _write(self) -> None:
        while (item := self._queue.get()) is not None:
            address, received_at = item
            try:
                self.sink(address, received_at)
            except Exception as exc:  # the database is away: the host sends again
                self.sink_failures += 1
                self.counted(NOT_STORED)
                LOG.error(
                    "fence_kdump listener: the message from %s at %s not stored: %s",
                    address,
                    received_at,
                    exc,
                )
                continue
            self.stored += 1
            self.counted(STORED)

"""fence_kdump's messages: a crashed host that says so is dead without a power off.

A host whose kernel crashed boots its kdump kernel, which runs ``fence_kdump_send`` (from
fence-agents): it sends a UDP datagram every few seconds (``-i``, 10 by default) to each
node it is given, port 7410 by default. The datagram is two 32-bit words in the sender's
byte order: the magic ``0x1B302A40`` and the version ``1`` (fence-agents'
agents/kdump/message.h). Nothing else identifies the host: its source address does, so a
fencing-file kdump entry names the address the host's messages come from.

:class:`KdumpListener` receives them (``[fencing] kdump_listen``) and hands each valid one,
``(source_address, received_at)``, to a sink callable (the engine stores them in the
database, where every engine's :class:`~masakari.fencing.base.CrashProof` finds them).
Datagrams that are not a fence_kdump message are counted and dropped; a failing sink is
counted and logged; neither stops the listener. :class:`MemoryCrashProof` is a sink and a
crash proof in one process's memory (tests, a single engine).
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import select
import socket
import struct
import threading
from collections.abc import Callable

from masakari.fencing import base

LOG = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PORT",
    "KdumpListener",
    "MemoryCrashProof",
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

Sink = Callable[[str, datetime.datetime], None]


def message(byteorder: str = "little") -> bytes:
    """A version 1 message, as ``fence_kdump_send`` on a host of ``byteorder`` sends it."""
    return struct.pack("<II" if byteorder == "little" else ">II", MAGIC, VERSION_1)


def is_message(datagram: bytes) -> bool:
    """Whether ``datagram`` is a version 1 fence_kdump message, in either byte order (the
    sender writes its own; fence_kdump itself accepts only its host's)."""
    if len(datagram) < _SIZE:
        return False
    head = datagram[:_SIZE]
    return any(struct.unpack(order, head) == (MAGIC, VERSION_1) for order in ("<II", ">II"))


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

    ``sink(source_address, received_at)`` is called on the listener's thread for each valid
    message (``received_at``: naive UTC); a slow sink delays the next datagram, not loses
    it (the kernel queues them). ``port`` 0 picks a free one (:attr:`port` says which).
    """

    def __init__(
        self,
        sink: Sink,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        now: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self.sink = sink
        self.host = host
        self.port = port
        self.now = now
        self.received = 0
        self.ignored = 0
        self.sink_failures = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        # stop() writes to it: the receiving thread waits on both.
        self._wake: tuple[socket.socket, socket.socket] | None = None

    def start(self) -> KdumpListener:
        if self._sock is not None:
            raise RuntimeError("the kdump listener is already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            if family == socket.AF_INET6:
                # "::" receives IPv4 too (as mapped addresses, normalised).
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._wake = socket.socketpair()
        self._thread = threading.Thread(
            target=self._run, args=(sock, self._wake[0]), name="kdump-listener", daemon=True
        )
        self._thread.start()
        LOG.info("Listening for fence_kdump messages on %s:%d", self.host, self.port)
        return self

    def stop(self) -> None:
        sock, self._sock = self._sock, None
        wake, self._wake = self._wake, None
        if wake is not None:
            wake[1].send(b"x")
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
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
            try:
                datagram, source = sock.recvfrom(65535)
            except OSError:
                LOG.exception("fence_kdump listener: receive failed")
                continue
            self.handle(datagram, source[0])

    def handle(self, datagram: bytes, source: str) -> bool:
        """One datagram from ``source``: handed to the sink when it is a message."""
        if not is_message(datagram):
            self.ignored += 1
            LOG.debug("fence_kdump listener: ignored %d bytes from %s", len(datagram), source)
            return False
        self.received += 1
        address = _normal(source)
        try:
            self.sink(address, self.now())
        except Exception:
            self.sink_failures += 1
            LOG.exception("fence_kdump listener: could not record the message from %s", address)
            return False
        return True


class MemoryCrashProof:
    """A sink and a :class:`~masakari.fencing.base.CrashProof` in memory: the newest message
    time of each source address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._newest: dict[str, datetime.datetime] = {}

    def __call__(self, address: str, received_at: datetime.datetime) -> None:
        with self._lock:
            if address not in self._newest or self._newest[address] < received_at:
                self._newest[address] = received_at

    def crashed_since(self, address: str, since: datetime.datetime) -> datetime.datetime | None:
        try:
            sources = resolve(address)
        except OSError:
            return None
        with self._lock:
            times = [self._newest[s] for s in sources if s in self._newest]
        newest = max(times, default=None)
        return newest if newest is not None and newest >= since else None


# mypy checks that it keeps the contract.
_: type[base.CrashProof] = MemoryCrashProof

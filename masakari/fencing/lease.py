"""The shared-disk lease: its on-disk format, and masakari's judgement of one host's slot.

A shared block device (or file) that every compute host and every masakari-engine can
read is an array of 4096-byte **slots**, one per host. The host's agent
(:mod:`masakari.cmd.lease_agent`) rewrites its slot every ``interval`` seconds with a
counter one higher, and pets its watchdog only after a write that reached the device: a
host that can no longer renew is reset by its watchdog. masakari reads the slot, then
watches it on its own monotonic clock (never the writer's timestamp):

- the counter changes: the host runs and reaches its storage (a partition, not a death):
  :attr:`Word.RENEWING`, a veto of any fence;
- it stays unchanged for ``interval × misses`` (:attr:`Word.STALLED`): the host stopped
  renewing, its agent stopped petting;
- unchanged for ``interval × misses + watchdog_timeout`` (:attr:`Word.EXPIRED`): the
  watchdog has reset the host. Its proof of death.

A slot that cannot be read, holds no valid lease of the host, was released, or was written
by an agent without a watchdog (or with a longer one than the entry allows) is never a
proof (:attr:`Word.FAILED`).

The slot, little-endian, byte-exact (docs/operations.md § The shared-disk lease)::

    offset size
      0     8   magic b"MSKLEASE"
      8     2   format version, 1
     10     2   state: 1 held (the agent renews it), 2 released (the agent stopped cleanly)
     12     4   the agent's interval, milliseconds
     16     4   the agent's watchdog timeout, milliseconds (0: no watchdog)
     20     8   counter, +1 at each renewal
     28     8   the writer's wall clock, ns since the epoch (for humans only)
     36   256   host name, UTF-8, NUL-padded (at most 255 bytes)
    292   216   zero
    508     4   CRC-32 (zlib) of bytes 0-507
    512  3584   zero (the slot fills a 4096-byte block: no device rewrites a neighbour's slot)

An all-zero slot is free. The CRC tells a torn or foreign write, not a forgery: the device
must be writable by the hosts alone (a forged write can only make a dead host look alive,
which holds its recovery, never the other way round).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import errno
import math
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from masakari.fencing.base import DriverSpec

__all__ = [
    "BadSlot",
    "Judgement",
    "Lease",
    "LeaseWatch",
    "Slot",
    "Word",
    "find_slot",
    "read_slot",
    "write_slot",
]

MAGIC = b"MSKLEASE"
VERSION = 1
HELD = 1
RELEASED = 2
SLOT_SIZE = 4096
RECORD_SIZE = 512
# Slots a device may have: the lookup of a host's slot reads this many at most (4 MiB).
MAX_SLOTS = 1024
NAME_SIZE = 256
_HEAD = struct.Struct("<8sHHIIQQ256s")
_CRC = struct.Struct("<I")
CRC_OFFSET = RECORD_SIZE - _CRC.size
# An invalid slot is read again this many times before it is one: a write may be in flight.
INVALID_READS = 3


class BadSlot(ValueError):
    """The slot's bytes are no lease: wrong magic or version, a bad checksum, a bad name."""


@dataclasses.dataclass(frozen=True)
class Slot:
    host: str
    counter: int
    state: int = HELD
    interval_ms: int = 0
    watchdog_ms: int = 0
    written_ns: int = 0

    def pack(self) -> bytes:
        name = self.host.encode("utf-8")
        if not name or len(name) >= NAME_SIZE or b"\0" in name:
            raise ValueError(f"host name must be 1 to {NAME_SIZE - 1} bytes of UTF-8, no NUL")
        head = _HEAD.pack(
            MAGIC,
            VERSION,
            self.state,
            self.interval_ms,
            self.watchdog_ms,
            self.counter,
            self.written_ns,
            name,
        )
        record = head.ljust(CRC_OFFSET, b"\0")
        return (record + _CRC.pack(zlib.crc32(record))).ljust(SLOT_SIZE, b"\0")

    @classmethod
    def unpack(cls, data: bytes) -> Slot | None:
        """The slot in ``data`` (at least its first 512 bytes); None when free (all zero);
        :class:`BadSlot` when it holds anything else than a valid lease."""
        record = bytes(data[:RECORD_SIZE])
        if len(record) < RECORD_SIZE:
            raise BadSlot(f"short slot ({len(record)} bytes)")
        if not any(record):
            return None
        magic, version, state, interval_ms, watchdog_ms, counter, written_ns, name = (
            _HEAD.unpack_from(record)
        )
        if magic != MAGIC:
            raise BadSlot("no lease magic")
        (crc,) = _CRC.unpack_from(record, CRC_OFFSET)
        if crc != zlib.crc32(record[:CRC_OFFSET]):
            raise BadSlot("checksum mismatch (a torn or foreign write)")
        if version != VERSION:
            raise BadSlot(f"format version {version}, not {VERSION}")
        if state not in (HELD, RELEASED):
            raise BadSlot(f"unknown state {state}")
        try:
            host = name.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            raise BadSlot("host name is not UTF-8") from None
        if not host or "\0" in host:
            raise BadSlot("no host name")
        return cls(host, counter, state, interval_ms, watchdog_ms, written_ns)


# --- the device -------------------------------------------------------------------------------


@contextlib.contextmanager
def _opened(path: str, write: bool = False) -> Iterator[int]:
    """The device or file, with O_DIRECT (no page cache between this reader and another
    host's writes); a file system that refuses O_DIRECT (tmpfs) without it, one machine's
    page cache being coherent."""
    flags = (os.O_RDWR | os.O_DSYNC) if write else os.O_RDONLY
    try:
        fd = os.open(path, flags | os.O_DIRECT | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        fd = os.open(path, flags | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _read(fd: int, offset: int, size: int) -> bytes:
    buffer = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
    try:
        got = os.preadv(fd, [buffer], offset)
        return bytes(buffer[:got])
    finally:
        buffer.close()


def slot_count(path: str) -> int:
    """How many slots the device holds (at most :data:`MAX_SLOTS`)."""
    with _opened(path) as fd:
        return min(os.lseek(fd, 0, os.SEEK_END) // SLOT_SIZE, MAX_SLOTS)


def read_slot(path: str, index: int) -> Slot | None:
    with _opened(path) as fd:
        return Slot.unpack(_read(fd, index * SLOT_SIZE, SLOT_SIZE))


def find_slot(path: str, host: str) -> int | None:
    """The index of ``host``'s slot (the first valid one with its name), or None."""
    with _opened(path) as fd:
        count = min(os.lseek(fd, 0, os.SEEK_END) // SLOT_SIZE, MAX_SLOTS)
        data = _read(fd, 0, count * SLOT_SIZE) if count else b""
    for index in range(count):
        try:
            slot = Slot.unpack(data[index * SLOT_SIZE : (index + 1) * SLOT_SIZE])
        except BadSlot:
            continue
        if slot is not None and slot.host == host:
            return index
    return None


def write_slot(path: str, index: int, slot: Slot) -> None:
    """Write the slot with O_DIRECT and O_DSYNC, then fsync: returns once on the device."""
    data = slot.pack()
    with _opened(path, write=True) as fd:
        buffer = mmap.mmap(-1, SLOT_SIZE)
        try:
            buffer[:] = data
            written = os.pwritev(fd, [buffer], index * SLOT_SIZE)
        finally:
            buffer.close()
        if written != SLOT_SIZE:
            raise OSError(errno.EIO, f"short write ({written} of {SLOT_SIZE} bytes)")
        os.fsync(fd)


# --- the entry and its judgement ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Lease:
    """A ``lease`` entry of the fencing file, for one host."""

    path: str
    host: str
    interval: float
    misses: int
    watchdog_timeout: float
    timeout: float

    @property
    def stalled_after(self) -> float:
        return self.interval * self.misses

    @property
    def expiry(self) -> float:
        return self.stalled_after + self.watchdog_timeout

    @classmethod
    def of(cls, spec: DriverSpec) -> Lease:
        """The entry's lease (the fencing file checked its keys and defaulted them)."""
        options = spec.options
        return cls(
            path=spec.address or "",
            host=options["host"],
            interval=float(options["interval"]),
            misses=int(options["misses"]),
            watchdog_timeout=float(options["watchdog_timeout"]),
            timeout=spec.timeout,
        )


def least_misses(interval: float, watchdog_timeout: float) -> int:
    """The fewest misses an entry may give: ``interval × misses`` at least the watchdog's
    timeout, so that the expiry covers an agent frozen between its renewal and its pet
    (which may then pet once more, up to a watchdog timeout later)."""
    return max(1, math.ceil(watchdog_timeout / interval - 1e-9))


# The fencing file's defaults and bounds (masakari.fencing.config checks the keys' types).
DEFAULT_INTERVAL = 1.0
MAX_WAIT = 300.0


def entry_problem(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``lease`` entry's keys taken together, or None."""
    interval = float(raw.get("interval", DEFAULT_INTERVAL))
    watchdog = float(raw["watchdog_timeout"])
    least = least_misses(interval, watchdog)
    misses = int(raw.get("misses", least))
    if misses < least:
        return (
            f"misses: interval x misses must be at least watchdog_timeout (here misses >= "
            f"{least}): an agent frozen between a renewal and its pet may pet once more"
        )
    expiry = interval * misses + watchdog
    if expiry > MAX_WAIT:
        return f"interval x misses + watchdog_timeout must be at most {MAX_WAIT:g} s"
    if "timeout" in raw and float(raw["timeout"]) < expiry:
        return (
            f"timeout must be at least interval x misses + watchdog_timeout ({expiry:g} s): "
            "a shorter watch could never prove the host dead"
        )
    return None


def entry_options(raw: Mapping[str, Any]) -> dict[str, str]:
    """A checked ``lease`` entry's options, defaults filled in (``timeout`` among them)."""
    interval = float(raw.get("interval", DEFAULT_INTERVAL))
    watchdog = float(raw["watchdog_timeout"])
    misses = int(raw.get("misses", least_misses(interval, watchdog)))
    expiry = interval * misses + watchdog
    options = {
        "interval": f"{interval:g}",
        "misses": str(misses),
        "watchdog_timeout": f"{watchdog:g}",
        "timeout": f"{float(raw.get('timeout', min(expiry + 2 * interval, MAX_WAIT))):g}",
    }
    # The name in the slot: by default the host's, as {host} becomes in every entry.
    options["host"] = raw.get("host", "{host}")
    return options


def check(spec: DriverSpec) -> str | None:
    """The readiness doctor's read of the entry's slot: None when it holds the host's lease,
    renewed by an agent with a watchdog; else why not."""
    lease = Lease.of(spec)
    try:
        index = find_slot(lease.path, lease.host)
        if index is None:
            return f"no slot of {lease.host} in {lease.path}"
        slot = read_slot(lease.path, index)
    except OSError as exc:
        return f"cannot read {lease.path}: {_reason(exc)}"
    except BadSlot as exc:
        return f"its slot holds no valid lease: {exc}"
    if slot is None or slot.state == RELEASED:
        return f"slot {index}: no agent renews it (released)"
    if slot.watchdog_ms == 0:
        return f"slot {index}: its agent runs without a watchdog: its expiry proves nothing"
    return None


class Word(enum.Enum):
    WATCHING = "watching"  # nothing to say yet
    RENEWING = "renewing"  # the counter changed: the host runs (a veto)
    STALLED = "stalled"  # unchanged for interval × misses: it stopped renewing
    EXPIRED = "expired"  # unchanged for the expiry: proven dead
    FAILED = "failed"  # this lease can prove nothing (why in the message)


@dataclasses.dataclass(frozen=True)
class Judgement:
    word: Word
    message: str
    # Seconds since masakari's first read of the slot (0 before it).
    watched: float = 0.0


class LeaseWatch:
    """One host's slot watched on masakari's clock: :meth:`look` reads it once and says
    what the slot shows so far; a final word (renewing, expired, failed) stays."""

    def __init__(
        self,
        lease: Lease,
        monotonic: Callable[[], float],
        read: Callable[[str, int], Slot | None] = read_slot,
        find: Callable[[str, str], int | None] = find_slot,
    ) -> None:
        self.lease = lease
        self._monotonic = monotonic
        self._read = read
        self._find = find
        self._index: int | None = None
        self._first: Slot | None = None
        self._since = 0.0
        self._invalid = 0
        self._final: Judgement | None = None

    @property
    def started(self) -> float | None:
        """masakari's monotonic time of its first valid read, None before."""
        return self._since if self._first is not None else None

    def look(self) -> Judgement:
        if self._final is not None:
            return self._final
        lease = self.lease
        started = self._monotonic()
        try:
            if self._index is None:
                self._index = self._find(lease.path, lease.host)
                if self._index is None:
                    return self._end(Word.FAILED, f"no slot of {lease.host} in {lease.path}")
            slot = self._read(lease.path, self._index)
        except OSError as exc:
            return self._end(Word.FAILED, f"cannot read {lease.path}: {_reason(exc)}")
        except BadSlot as exc:
            self._invalid += 1
            if self._invalid < INVALID_READS:
                return self._judgement(Word.WATCHING, f"slot {self._index}: {exc}; reading again")
            return self._end(Word.FAILED, f"slot {self._index} holds no valid lease: {exc}")
        self._invalid = 0
        where = f"slot {self._index}"
        if slot is None or slot.host != lease.host:
            return self._end(Word.FAILED, f"{where} is no longer {lease.host}'s")
        if self._first is None:
            self._first, self._since = slot, self._monotonic()
        first = self._first
        if slot != first:
            return self._end(
                Word.RENEWING,
                f"{where}: counter {first.counter} -> {slot.counter} within "
                f"{started - self._since:.1f} s",
            )
        if slot.state == RELEASED:
            return self._end(
                Word.FAILED, f"{where}: released by its agent (stopped cleanly): proves nothing"
            )
        watched = started - self._since
        if watched >= lease.expiry:
            unsafe = self._unsafe(slot)
            if unsafe:
                return self._end(Word.FAILED, f"{where}: {unsafe}: its expiry proves nothing")
            return self._end(
                Word.EXPIRED,
                f"{where}: counter {slot.counter} unchanged for {watched:.1f} s (expiry "
                f"{lease.expiry:g} s = {lease.interval:g} s x {lease.misses} + watchdog "
                f"{lease.watchdog_timeout:g} s): reset by its watchdog",
            )
        word = Word.STALLED if watched >= lease.stalled_after else Word.WATCHING
        return self._judgement(
            word, f"{where}: counter {slot.counter} unchanged for {watched:.1f} s"
        )

    def _unsafe(self, slot: Slot) -> str | None:
        """Why the slot's own agent makes its expiry no proof, if it does."""
        lease = self.lease
        if slot.watchdog_ms == 0:
            return "its agent runs without a watchdog"
        if slot.watchdog_ms > lease.watchdog_timeout * 1000:
            return (
                f"its agent's watchdog timeout {slot.watchdog_ms / 1000:g} s exceeds the "
                f"entry's {lease.watchdog_timeout:g} s"
            )
        if slot.interval_ms > lease.interval * 1000:
            return (
                f"its agent's interval {slot.interval_ms / 1000:g} s exceeds the entry's "
                f"{lease.interval:g} s"
            )
        return None

    def _judgement(self, word: Word, message: str) -> Judgement:
        watched = 0.0 if self._first is None else self._monotonic() - self._since
        return Judgement(word, message, watched)

    def _end(self, word: Word, message: str) -> Judgement:
        self._final = self._judgement(word, message)
        return self._final


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__

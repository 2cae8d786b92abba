"""The shared-disk lease (masakari/fencing/lease.py): its slot format, byte by byte, and
masakari's judgement of a slot on a fake clock (the agent, the device and the engine
together: tests/functional/engine/test_lease_drills.py)."""

from __future__ import annotations

import struct
import zlib

import pytest

from masakari.fencing import lease
from masakari.fencing.base import DriverSpec
from masakari.fencing.lease import BadSlot, Lease, LeaseWatch, Slot, Word

HOST = "compute-1"
SLOT = Slot(HOST, 41, lease.HELD, 1000, 5000, 1_767_225_600_000_000_000)


def test_a_slot_is_4096_bytes_laid_out_as_documented() -> None:
    data = SLOT.pack()
    assert len(data) == lease.SLOT_SIZE == 4096
    assert data[:8] == b"MSKLEASE"
    assert struct.unpack_from("<HHIIQQ", data, 8) == (1, 1, 1000, 5000, 41, SLOT.written_ns)
    assert data[36:292] == HOST.encode().ljust(256, b"\0")
    assert not any(data[292:508]) and not any(data[512:])
    assert struct.unpack_from("<I", data, 508)[0] == zlib.crc32(data[:508])


def test_round_trip_and_a_free_slot() -> None:
    assert Slot.unpack(SLOT.pack()) == SLOT
    released = Slot("ñode-2", 0, lease.RELEASED)
    assert Slot.unpack(released.pack()) == released
    assert Slot.unpack(bytes(lease.SLOT_SIZE)) is None


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:], "checksum mismatch"),
        # a torn write: the first half of the record new, the rest old
        (lambda d: d[:256] + Slot(HOST, 40).pack()[256:], "checksum mismatch"),
        (lambda d: b"\xff" * len(d), "no lease magic"),
        (lambda d: b"MSKLEASE" + b"\x07" * 600, "checksum mismatch"),
        (lambda d: d[:100], "short slot"),
    ],
)
def test_a_torn_or_foreign_slot_is_no_lease(damage, why) -> None:
    with pytest.raises(BadSlot, match=why):
        Slot.unpack(damage(SLOT.pack()))


def test_a_host_name_must_fit() -> None:
    with pytest.raises(ValueError, match="host name"):
        Slot("x" * 256, 1).pack()


def test_slots_on_a_file_found_by_name(tmp_path) -> None:
    path = str(tmp_path / "lease")
    with open(path, "wb") as f:
        f.truncate(8 * lease.SLOT_SIZE)
    lease.write_slot(path, 3, SLOT)
    lease.write_slot(path, 5, Slot("compute-2", 7))
    assert (lease.find_slot(path, HOST), lease.find_slot(path, "compute-2")) == (3, 5)
    assert lease.find_slot(path, "compute-9") is None
    assert lease.read_slot(path, 3) == SLOT and lease.read_slot(path, 4) is None
    assert lease.slot_count(path) == 8
    empty = tmp_path / "empty"
    empty.touch()
    assert lease.find_slot(str(empty), HOST) is None


# --- the judgement ---------------------------------------------------------------------------

# interval 1 s, 5 misses, watchdog 5 s: stalled after 5 s, expired after 10 s.
ENTRY = Lease("/dev/shared", HOST, interval=1.0, misses=5, watchdog_timeout=5.0, timeout=12.0)


class Device:
    """The slot as the watch reads it, and the time on masakari's clock."""

    def __init__(self, slot: Slot | None | Exception = SLOT) -> None:
        self.slot = slot
        self.now = 100.0
        self.reads = 0

    def read(self, path: str, index: int) -> Slot | None:
        self.reads += 1
        if isinstance(self.slot, Exception):
            raise self.slot
        return self.slot

    def find(self, path: str, host: str) -> int | None:
        return 2

    def watch(self, entry: Lease = ENTRY) -> LeaseWatch:
        return LeaseWatch(entry, lambda: self.now, self.read, self.find)


def test_a_counter_that_changes_is_a_renewing_host() -> None:
    device = Device()
    watch = device.watch()
    assert watch.look().word is Word.WATCHING
    device.now += 0.9
    device.slot = Slot(HOST, 42, lease.HELD, 1000, 5000, SLOT.written_ns)
    seen = watch.look()
    assert seen.word is Word.RENEWING
    assert seen.message == "slot 2: counter 41 -> 42 within 0.9 s"
    device.now += 60
    assert watch.look() == seen, "a final word stays"


def test_unchanged_it_stalls_then_expires_on_masakaris_clock() -> None:
    # The writer's timestamp says the slot is a day old: masakari counts from its first read.
    device = Device(Slot(HOST, 41, lease.HELD, 1000, 5000, SLOT.written_ns - 86400 * 10**9))
    watch = device.watch()
    assert watch.look().word is Word.WATCHING
    device.now += 4.9
    assert watch.look().word is Word.WATCHING
    device.now += 0.1
    assert watch.look().word is Word.STALLED
    device.now += 4.9
    assert watch.look().word is Word.STALLED
    device.now += 0.1
    expired = watch.look()
    assert (expired.word, expired.watched) == (Word.EXPIRED, 10.0)
    assert "unchanged for 10.0 s" in expired.message


@pytest.mark.parametrize(
    ("slot", "why"),
    [
        (Slot(HOST, 41, lease.HELD, 1000, 0), "its agent runs without a watchdog"),
        (Slot(HOST, 41, lease.HELD, 1000, 6000), "watchdog timeout 6 s exceeds the entry's 5 s"),
        (Slot(HOST, 41, lease.HELD, 2000, 5000), "interval 2 s exceeds the entry's 1 s"),
    ],
)
def test_an_expiry_whose_agent_could_not_reset_the_host_proves_nothing(slot, why) -> None:
    device = Device(slot)
    watch = device.watch()
    watch.look()
    device.now += 10
    seen = watch.look()
    assert seen.word is Word.FAILED and why in seen.message


def test_an_agent_without_watchdog_still_vetoes() -> None:
    device = Device(Slot(HOST, 41, lease.HELD, 1000, 0))
    watch = device.watch()
    watch.look()
    device.slot = Slot(HOST, 42, lease.HELD, 1000, 0)
    assert watch.look().word is Word.RENEWING


@pytest.mark.parametrize(
    ("slot", "why"),
    [
        (OSError(5, "Input/output error"), "cannot read /dev/shared: Input/output error"),
        (Slot(HOST, 41, lease.RELEASED, 1000, 5000), "released by its agent"),
        (Slot("compute-2", 41), "slot 2 is no longer compute-1's"),
        (None, "slot 2 is no longer compute-1's"),
    ],
)
def test_a_slot_that_cannot_be_read_or_is_not_held_is_no_proof(slot, why) -> None:
    device = Device(slot)
    watch = device.watch()
    seen = watch.look()
    assert seen.word is Word.FAILED and why in seen.message
    device.now += 60
    assert watch.look().word is Word.FAILED


def test_a_read_error_after_the_first_read_is_no_proof() -> None:
    device = Device()
    watch = device.watch()
    watch.look()
    device.now += 20
    device.slot = OSError(5, "Input/output error")
    assert watch.look().word is Word.FAILED


def test_an_invalid_slot_is_read_again_before_it_fails() -> None:
    device = Device(BadSlot("checksum mismatch (a torn or foreign write)"))
    watch = device.watch()
    assert [watch.look().word for _ in range(2)] == [Word.WATCHING, Word.WATCHING]
    device.slot = SLOT  # the write that was in flight landed
    assert watch.look().word is Word.WATCHING
    device.slot = BadSlot("no lease magic")
    assert [watch.look().word for _ in range(3)] == [Word.WATCHING, Word.WATCHING, Word.FAILED]


def test_no_slot_of_the_host() -> None:
    device = Device()
    device.find = lambda path, host: None  # type: ignore[method-assign]
    seen = device.watch().look()
    assert (seen.word, seen.message) == (Word.FAILED, "no slot of compute-1 in /dev/shared")


def test_an_entry_from_the_fencing_file() -> None:
    options = lease.entry_options({"path": "/dev/x", "watchdog_timeout": 10})
    assert options == {
        "interval": "1",
        "misses": "10",
        "watchdog_timeout": "10",
        "timeout": "22",
        "host": "{host}",
    }
    spec = DriverSpec("lease", address="/dev/x", timeout=22.0, options={**options, "host": HOST})
    entry = Lease.of(spec)
    assert (entry.stalled_after, entry.expiry, entry.host) == (10.0, 20.0, HOST)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"watchdog_timeout": 10, "misses": 9}, "misses >= 10"),
        ({"watchdog_timeout": 10, "interval": 3}, None),  # misses 4: 12 s >= 10 s
        ({"watchdog_timeout": 10, "timeout": 19}, "timeout must be at least"),
        ({"watchdog_timeout": 100, "interval": 60, "misses": 4}, "at most 300 s"),
    ],
)
def test_an_entry_whose_expiry_would_not_cover_the_watchdog_is_refused(raw, why) -> None:
    problem = lease.entry_problem(raw)
    assert problem == why if why is None else why in (problem or "")


def test_the_doctors_read_of_a_slot(tmp_path) -> None:
    path = str(tmp_path / "lease")
    with open(path, "wb") as f:
        f.truncate(4 * lease.SLOT_SIZE)
    options = {"interval": "1", "misses": "5", "watchdog_timeout": "5", "host": HOST}
    spec = DriverSpec("lease", address=path, timeout=12.0, options=options)
    assert lease.check(spec) == f"no slot of {HOST} in {path}"
    lease.write_slot(path, 1, Slot(HOST, 0, lease.RELEASED))
    assert lease.check(spec) == "slot 1: no agent renews it (released)"
    lease.write_slot(path, 1, Slot(HOST, 9, lease.HELD, 1000, 0))
    assert (
        lease.check(spec) == "slot 1: its agent runs without a watchdog: its expiry proves nothing"
    )
    lease.write_slot(path, 1, SLOT)
    assert lease.check(spec) is None
    gone = DriverSpec("lease", address=str(tmp_path / "gone"), timeout=12.0, options=options)
    assert lease.check(gone) == f"cannot read {tmp_path / 'gone'}: No such file or directory"

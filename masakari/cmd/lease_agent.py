"""masakari-lease-agent: a compute host's side of the shared-disk lease.

    masakari-lease-agent allocate DEVICE HOST     # once, by an operator: HOST's slot
    masakari-lease-agent run DEVICE [--host HOST] --interval S \\
        --watchdog /dev/watchdog --watchdog-timeout S
    masakari-lease-agent show DEVICE

``run`` renews the host's slot every ``interval`` seconds (format:
:mod:`masakari.fencing.lease`) and pets the watchdog only after a renewal that reached the
device: a host that cannot renew (its storage is gone, the agent hangs or died) is reset by
its watchdog within ``watchdog-timeout`` of its last renewal. On SIGTERM or SIGINT it marks
the slot released, then disarms the watchdog (its magic close); a release that cannot be
written leaves the watchdog armed. docs/operations.md § The shared-disk lease.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import logging
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time
from types import FrameType

from masakari.fencing import lease

LOG = logging.getLogger("masakari-lease-agent")

# <linux/watchdog.h>: _IOWR('W', 6, int)
WDIOC_SETTIMEOUT = 0xC0045706
MAGIC_CLOSE = b"V"


def allocate(device: str, host: str) -> int:
    """Give ``host`` a slot (the first free one), released until its agent runs; its index."""
    found = lease.find_slot(device, host)
    if found is not None:
        return found
    for index in range(lease.slot_count(device)):
        try:
            if lease.read_slot(device, index) is None:
                lease.write_slot(
                    device, index, lease.Slot(host, 0, lease.RELEASED, written_ns=time.time_ns())
                )
                return index
        except lease.BadSlot:
            continue
    raise SystemExit(f"{device}: no free slot for {host}")


def show(device: str) -> None:
    for index in range(lease.slot_count(device)):
        try:
            slot = lease.read_slot(device, index)
        except lease.BadSlot as exc:
            print(f"{index:5d}  invalid: {exc}")
            continue
        if slot is None:
            continue
        state = "held" if slot.state == lease.HELD else "released"
        written = datetime.datetime.fromtimestamp(slot.written_ns / 1e9, datetime.UTC)
        print(
            f"{index:5d}  {slot.host}  {state}  counter {slot.counter}  interval "
            f"{slot.interval_ms} ms  watchdog {slot.watchdog_ms} ms  written "
            f"{written.isoformat(timespec='milliseconds')}"
        )


class Watchdog:
    """/dev/watchdog, its timeout set; a regular file stands for one in drills."""

    def __init__(self, path: str, timeout: float) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        if stat.S_ISREG(os.fstat(self.fd).st_mode):
            LOG.warning("%s is a regular file, not a watchdog: nothing resets this host", path)
            return
        try:
            fcntl.ioctl(self.fd, WDIOC_SETTIMEOUT, struct.pack("i", max(1, int(timeout))))
        except OSError as exc:
            os.close(self.fd)
            raise SystemExit(f"{path}: cannot set its timeout: {exc.strerror}") from None

    def pet(self) -> None:
        os.write(self.fd, b"\0")

    def disarm(self) -> None:
        os.write(self.fd, MAGIC_CLOSE)
        os.close(self.fd)


def run(
    device: str,
    host: str,
    interval: float,
    watchdog_path: str | None,
    watchdog_timeout: float,
    stop: threading.Event,
) -> int:
    # The slot first: a misconfigured agent exits before it arms the watchdog (which would
    # reset the host). Armed, the watchdog is fed by renewals alone, the first one included.
    index = lease.find_slot(device, host)
    if index is None:
        LOG.error("%s: no slot of %s: run 'masakari-lease-agent allocate' first", device, host)
        return 2
    current = lease.read_slot(device, index)
    counter = current.counter if current is not None else 0
    watchdog = Watchdog(watchdog_path, watchdog_timeout) if watchdog_path else None
    interval_ms = round(interval * 1000)
    watchdog_ms = round(watchdog_timeout * 1000) if watchdog is not None else 0
    LOG.info("renewing slot %d of %s on %s every %g s", index, host, device, interval)
    due = time.monotonic()
    while not stop.is_set():
        counter += 1
        slot = lease.Slot(host, counter, lease.HELD, interval_ms, watchdog_ms, time.time_ns())
        try:
            lease.write_slot(device, index, slot)
        except OSError as exc:
            LOG.error("renewal %d not written: %s", counter, exc.strerror or exc)
        else:
            if watchdog is not None:
                watchdog.pet()
        # On schedule; after a write that took longer than an interval, from now (no burst).
        due = max(due + interval, time.monotonic())
        stop.wait(max(due - time.monotonic(), 0.0))
    released = lease.Slot(
        host, counter + 1, lease.RELEASED, interval_ms, watchdog_ms, time.time_ns()
    )
    try:
        lease.write_slot(device, index, released)
    except OSError as exc:
        LOG.error("release not written (%s): the watchdog stays armed", exc.strerror or exc)
        return 1
    if watchdog is not None:
        watchdog.disarm()
    LOG.info("slot %d of %s released", index, host)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="masakari-lease-agent", description="The compute host's shared-disk lease."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("allocate", help="give a host a slot (once, before run)")
    make.add_argument("device")
    make.add_argument("host")
    renew = commands.add_parser("run", help="renew the host's slot, pet the watchdog")
    renew.add_argument("device")
    renew.add_argument("--host", default=socket.gethostname(), help="default: this host's name")
    renew.add_argument("--interval", type=float, required=True, help="seconds between renewals")
    renew.add_argument("--watchdog", help="the watchdog device (/dev/watchdog)")
    renew.add_argument("--watchdog-timeout", type=float, default=0.0, help="its timeout, s")
    listing = commands.add_parser("show", help="print the slots")
    listing.add_argument("device")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s %(message)s")
    try:
        if args.command == "allocate":
            print(allocate(args.device, args.host))
            return 0
        if args.command == "show":
            show(args.device)
            return 0
        if args.interval <= 0:
            raise SystemExit("--interval must be > 0")
        if args.watchdog and args.watchdog_timeout <= 0:
            raise SystemExit("--watchdog needs --watchdog-timeout (seconds, > 0)")
        stop = threading.Event()

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        return run(
            args.device, args.host, args.interval, args.watchdog, args.watchdog_timeout, stop
        )
    except OSError as exc:
        LOG.error("%s: %s", exc.filename or args.device, exc.strerror or exc)
        return 1
    except ValueError as exc:  # a host name that does not fit a slot
        LOG.error("%s", exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""The shared-disk lease drills' helpers: a lease device (a loop device over an 8 MiB sparse
file, or the plain file where losetup is not permitted) and the host agent as a real
process (masakari-lease-agent run)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from masakari.fencing import lease
from tests.support.engine import wait_for

DEVICE_SIZE = 8 * 1024 * 1024


@contextlib.contextmanager
def lease_device(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A loop device over a sparse file, detached afterwards. Where losetup is not
    permitted: the file itself, or a failure where CI requires the device
    (``--require-servers``)."""
    backing = tmp_path / "lease.img"
    with open(backing, "wb") as f:
        f.truncate(DEVICE_SIZE)
    try:
        attached = subprocess.run(
            ["losetup", "--find", "--show", str(backing)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError:
        attached = None
    if attached is None or attached.returncode != 0:
        why = attached.stderr.strip() if attached is not None else "losetup not found"
        if request.config.getoption("--require-servers"):
            pytest.fail(f"no loop device for the lease drills: {why}")
        yield str(backing)
        return
    device = attached.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "--detach", device], check=False, timeout=30)


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "masakari.cmd.lease_agent", *args]


class Agent:
    """The host's ``masakari-lease-agent run``, in a process group of its own; its watchdog
    a regular file (no watchdog device here): the process stands for the host."""

    def __init__(
        self, device: str, host: str, interval: float, watchdog_timeout: float, tmp_path: Path
    ) -> None:
        subprocess.run(agent_command("allocate", device, host), check=True, capture_output=True)
        self.device = device
        self.host = host
        self.watchdog = tmp_path / f"watchdog-{host}"
        self.watchdog.touch()
        self.log = open(tmp_path / f"agent-{host}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            agent_command(
                "run",
                device,
                "--host",
                host,
                "--interval",
                str(interval),
                "--watchdog",
                str(self.watchdog),
                "--watchdog-timeout",
                str(watchdog_timeout),
            ),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: self.counter() > 1, 30, f"{host}'s agent renews")

    def counter(self) -> int:
        index = lease.find_slot(self.device, self.host)
        slot = None if index is None else lease.read_slot(self.device, index)
        return 0 if slot is None or slot.state != lease.HELD else slot.counter

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.log.close()

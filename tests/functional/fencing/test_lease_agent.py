"""masakari-lease-agent as a process, on a plain file: its slot renewed and its watchdog
petted after each renewal, released and disarmed on SIGTERM, left armed when killed (the
engine's judgement of it: tests/functional/engine/test_lease_drills.py)."""

from __future__ import annotations

import signal
import subprocess

import pytest

from masakari.fencing import lease
from tests.support.engine import wait_for
from tests.support.lease import DEVICE_SIZE, Agent, agent_command


@pytest.fixture
def device(tmp_path) -> str:
    path = tmp_path / "lease.img"
    with open(path, "wb") as f:
        f.truncate(DEVICE_SIZE)
    return str(path)


def test_allocate_gives_each_host_its_own_slot_once(device) -> None:
    def allocate(host: str) -> str:
        done = subprocess.run(agent_command("allocate", device, host), capture_output=True)
        return done.stdout.decode().strip()

    assert [allocate("compute-1"), allocate("compute-2"), allocate("compute-1")] == ["0", "1", "0"]
    slot = lease.read_slot(device, 1)
    assert slot is not None
    assert (slot.host, slot.state, slot.counter) == ("compute-2", lease.RELEASED, 0)


def test_it_renews_pets_after_each_renewal_and_releases_on_sigterm(device, tmp_path) -> None:
    agent = Agent(device, "compute-1", 0.1, 2.0, tmp_path)
    try:
        wait_for(lambda: agent.counter() >= 5, 30, "five renewals")
        slot = lease.read_slot(device, 0)
        assert slot is not None and (slot.interval_ms, slot.watchdog_ms) == (100, 2000)
        agent.signal(signal.SIGTERM)
        assert agent.process.wait(timeout=10) == 0
        released = lease.read_slot(device, 0)
        assert released is not None and released.state == lease.RELEASED
        pets = agent.watchdog.read_bytes()
        # one pet per renewal written (the first counter is 1), then the magic close
        assert pets == b"\0" * (released.counter - 1) + b"V"
    finally:
        agent.stop()


def test_killed_it_leaves_its_slot_held_and_its_watchdog_armed(device, tmp_path) -> None:
    agent = Agent(device, "compute-1", 0.1, 2.0, tmp_path)
    agent.signal(signal.SIGKILL)
    agent.process.wait(timeout=10)
    slot = lease.read_slot(device, 0)
    assert slot is not None and slot.state == lease.HELD
    assert not agent.watchdog.read_bytes().endswith(b"V")
    agent.stop()


def test_run_without_a_slot_says_so_before_it_arms_the_watchdog(device, tmp_path) -> None:
    watchdog = tmp_path / "no-watchdog"  # opened first, it would fail (exit 1)
    done = subprocess.run(
        agent_command(
            "run", device, "--host", "compute-9", "--interval", "1", "--watchdog", str(watchdog)
        )
        + ["--watchdog-timeout", "5"],
        capture_output=True,
    )
    assert done.returncode == 2
    assert b"no slot of compute-9: run 'masakari-lease-agent allocate' first" in done.stderr

"""[coordination]/backend_url set: one engine of those sharing Redis runs the periodic tasks;
when it dies, another takes over once its lock times out; without Redis, each runs them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

from masakari import coordination

# Seconds a dead leader's lock outlives it.
LOCK_TIMEOUT = 2
INTERVAL = 0.2

LEADER_PROCESS = textwrap.dedent(
    """
    import sys, time
    from masakari.coordination import Elected
    elected = Elected(sys.argv[1], sys.argv[2], interval=float(sys.argv[3]))
    elected.start()
    while not elected.is_leader:
        time.sleep(0.05)
    print("leader", flush=True)
    time.sleep(600)
    """
)


def _url(redis_url: str) -> str:
    # A namespace and a lock of this test alone: others share the server.
    return f"{redis_url}?lock_timeout={LOCK_TIMEOUT}&namespace=test-{uuid.uuid4().hex[:8]}"


def _wait(predicate, within: float) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < within
        time.sleep(0.05)
    return time.monotonic() - started


def test_one_leader_and_the_other_takes_over_when_it_is_killed(redis_url: str, monkeypatch):
    monkeypatch.setattr(coordination, "LOCK_NAME", f"test-{uuid.uuid4().hex}".encode())
    url = _url(redis_url)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    script = LEADER_PROCESS.replace(
        "from masakari.coordination import Elected",
        "from masakari import coordination\n"
        f"coordination.LOCK_NAME = {coordination.LOCK_NAME!r}\n"
        "from masakari.coordination import Elected",
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", script, url, "engine-a", str(INTERVAL)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    follower = coordination.Elected(url, "engine-b", interval=INTERVAL)
    try:
        assert leader.stdout is not None
        assert leader.stdout.readline().strip() == "leader"
        follower.start()
        # The follower reached the backend and found the lead taken.
        _wait(lambda: follower._reachable.is_set(), 10)
        time.sleep(4 * INTERVAL)
        assert not follower.is_leader
        assert not follower.runs_periodic_tasks()

        leader.send_signal(signal.SIGKILL)
        leader.wait()
        taken_after = _wait(lambda: follower.is_leader, LOCK_TIMEOUT + 5)
        assert follower.runs_periodic_tasks()
        assert taken_after >= LOCK_TIMEOUT - 1  # not before the dead leader's lock expired
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()
        if leader.stdout is not None:
            leader.stdout.close()
        follower.stop()


def test_a_stopping_leader_hands_over_at_once(redis_url: str, monkeypatch) -> None:
    monkeypatch.setattr(coordination, "LOCK_NAME", f"test-{uuid.uuid4().hex}".encode())
    url = _url(redis_url).replace(f"lock_timeout={LOCK_TIMEOUT}", "lock_timeout=30")
    first = coordination.Elected(url, "engine-a", interval=INTERVAL)
    second = coordination.Elected(url, "engine-b", interval=INTERVAL)
    first.start()
    try:
        _wait(lambda: first.is_leader, 10)
        second.start()
        _wait(lambda: second._reachable.is_set(), 10)
        assert not second.is_leader
        first.stop()
        # Well before the 30 s lock timeout.
        assert _wait(lambda: second.is_leader, 5) < 5
    finally:
        first.stop()
        second.stop()


def test_backend_unreachable_every_engine_runs_the_periodic_tasks() -> None:
    elected = coordination.Elected("redis://127.0.0.1:9?socket_timeout=1", "engine-a", INTERVAL)
    elected.start()
    try:
        time.sleep(1)
        assert not elected.is_leader
        assert elected.runs_periodic_tasks()
    finally:
        elected.stop()

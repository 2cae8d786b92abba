"""fence_kdump senders for tests: Debian's own ``fence_kdump_send``, and one in Python that
can send from any 127.0.0.x to look like another host.

    with KdumpListener(sink, host="127.0.0.1", port=0) as listener:
        send_kdump(listener.port, source="127.0.0.7")    # "host 127.0.0.7 crashed"
        fence_kdump_send(listener.port, count=2)          # the real sender, from 127.0.0.1

``fence_kdump_send`` cannot choose its source address (the kernel picks 127.0.0.1 on
loopback), so only the Python sender can play several hosts, or an attacker who forges
them: :func:`flood_process` floods from many addresses in a process of its own (the
listener under test keeps its own process's threads). Both send the same 8 bytes
(masakari.fencing.kdump.message(): magic 0x1B302A40, version 1, the sender's byte order).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from masakari.fencing import kdump

FENCE_KDUMP_SEND = "/usr/libexec/fence-agents/fence_kdump_send"


def send_kdump(
    port: int,
    *,
    source: str = "127.0.0.1",
    target: str = "127.0.0.1",
    count: int = 1,
    interval: float = 0.0,
    payload: bytes | None = None,
) -> None:
    """Send ``count`` messages (or ``payload``, e.g. garbage) from ``source`` to
    ``target:port``, ``interval`` seconds apart."""
    data = kdump.message() if payload is None else payload
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((source, 0))
        for i in range(count):
            if i:
                time.sleep(interval)
            sock.sendto(data, (target, port))


def fence_kdump_send(
    port: int,
    *,
    target: str = "127.0.0.1",
    count: int = 1,
    interval: int = 1,
    path: str = FENCE_KDUMP_SEND,
) -> subprocess.CompletedProcess[str]:
    """Run Debian's fence_kdump_send: ``count`` messages to ``target:port``, ``interval``
    seconds apart (it returns right after the last)."""
    return subprocess.run(
        [path, "-p", str(port), "-c", str(count), "-i", str(interval), "-f", "ipv4", target],
        capture_output=True,
        text=True,
        timeout=30 + count * interval,
        check=True,
    )


def flood(port: int, sources: Sequence[str], rounds: int, pause: float = 0.0) -> int:
    """``rounds`` rounds of one message from each of ``sources``, ``pause`` seconds between
    rounds, as fast as the kernel takes them (a full receive buffer drops them silently);
    the number sent."""
    socks = []
    try:
        for source in sources:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(sock)
            sock.bind((source, 0))
        data = kdump.message()
        for i in range(rounds):
            if i and pause:
                time.sleep(pause)
            for sock in socks:
                sock.sendto(data, ("127.0.0.1", port))
    finally:
        for sock in socks:
            sock.close()
    return rounds * len(sources)


def flood_process(
    port: int, sources: Sequence[str], rounds: int, pause: float = 0.0
) -> subprocess.Popen[str]:
    """:func:`flood` in a child process; it prints the number sent."""
    code = (
        "from tests.fakes.kdump_sender import flood; "
        f"print(flood({port}, {list(sources)!r}, {rounds}, {pause}))"
    )
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=root
    )

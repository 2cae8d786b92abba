"""fence_kdump senders for tests: Debian's own ``fence_kdump_send``, and one in Python that
can send from any 127.0.0.x to look like another host.

    with KdumpListener(sink, host="127.0.0.1", port=0) as listener:
        send_kdump(listener.port, source="127.0.0.7")    # "host 127.0.0.7 crashed"
        fence_kdump_send(listener.port, count=2)          # the real sender, from 127.0.0.1

``fence_kdump_send`` cannot choose its source address (the kernel picks 127.0.0.1 on
loopback), so only the Python sender can play several hosts. Both send the same 8 bytes
(masakari.fencing.kdump.message(): magic 0x1B302A40, version 1, the sender's byte order).
"""

from __future__ import annotations

import socket
import subprocess
import time

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
    seconds apart (it sleeps after each, the last included)."""
    return subprocess.run(
        [path, "-p", str(port), "-c", str(count), "-i", str(interval), "-f", "ipv4", target],
        capture_output=True,
        text=True,
        timeout=30 + count * interval,
        check=True,
    )

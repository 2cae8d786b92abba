"""Free TCP ports on loopback, for the servers a test or a benchmark starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now (the kernel's pick; free until bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` ports nothing listens on now; held open together so that they are distinct."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()

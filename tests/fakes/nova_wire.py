"""The Nova simulator without a socket: a requests adapter whose connections hand each request's
bytes to the simulator's own HTTP handler and read its answer from memory.

Everything above the socket is the production transport: keystoneauth, requests, urllib3 and
masakari.compute.nova's guarded adapter and connection (the send guard checked before each
write, the sends counted for the retry metrics). What a socket would add is derived from what
the handler did:

- a reset (the flaky mode) is a ConnectionResetError when the client reads the answer;
- a late answer (the flaky mode's ``late``, a ``slow`` fault) is a read timeout when it is at
  least the connection's read timeout, else the answer; either way the simulator acted at once,
  without waiting on the wall clock.

Connection limits and the listen backlog exist only on a socket (``NovaSimulator.start()``).
"""

from __future__ import annotations

import io
import socket
from typing import Any

from masakari.compute import nova as nova_client


class _ServerEnd:
    """The connection as the handler sees it: it may reset it or hold the answer."""

    def __init__(self) -> None:
        self.reset = False
        self.late = 0.0

    def setsockopt(self, level: int, option: int, value: Any) -> None:
        if option == socket.SO_LINGER:  # the handler closes with a reset
            self.reset = True


def _note_late(handler: Any, seconds: float) -> bool:
    """The in-process handler's answer_late: note the delay instead of waiting it out."""
    handler.connection.late += seconds
    return False


class _Answer(io.BytesIO):
    """The answer's bytes as the client reads them, or the error a read meets instead."""

    def __init__(self, data: bytes, error: BaseException | None) -> None:
        super().__init__(data)
        self._error = error

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def read(self, size: int | None = -1) -> bytes:
        self._check()
        return super().read(size)

    def read1(self, size: int | None = -1) -> bytes:
        self._check()
        return super().read1(size)

    def readline(self, size: int | None = -1) -> bytes:
        self._check()
        return super().readline(size)

    def readinto(self, buffer: Any) -> int:
        self._check()
        return super().readinto(buffer)


class _Wire:
    """The client's end of an in-process connection (what http.client uses of a socket)."""

    def __init__(self, handler: type) -> None:
        self._handler = handler
        self._sent = bytearray()
        self._timeout: float | None = None

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def setsockopt(self, *args: Any) -> None:
        pass

    def sendall(self, data: Any) -> None:
        self._sent += data

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> _Answer:
        """The client reads the answer: the handler serves what was sent until now."""
        request, self._sent = bytes(self._sent), bytearray()
        end, out = _ServerEnd(), io.BytesIO()
        handler: Any = object.__new__(self._handler)  # handled below, not by its __init__
        handler.request = handler.connection = end
        handler.client_address = ("in-process", 0)
        handler.server = None
        handler.rfile, handler.wfile = io.BytesIO(request), out
        handler.handle()
        error: BaseException | None = None
        if end.reset:
            error = ConnectionResetError(104, "Connection reset by peer")
        elif end.late and self._timeout is not None and end.late >= self._timeout:
            error = TimeoutError("timed out")
        return _Answer(out.getvalue(), error)

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Connection(nova_client._GuardedHTTPConnection):
    handler: type

    def _new_conn(self) -> Any:
        return _Wire(self.handler)

    @property
    def is_connected(self) -> bool:
        return self.sock is not None


class InProcessAdapter(nova_client._GuardedHTTPAdapter):
    """Mounted on a simulator's URL in a requests session: ``handler`` (the simulator's
    BaseHTTPRequestHandler class) answers every request."""

    def __init__(self, handler: type) -> None:
        served = type("InProcessHandler", (handler,), {"answer_late": _note_late})
        connection = type("InProcessConnection", (_Connection,), {"handler": served})
        self._pool = type(
            "InProcessPool", (nova_client._GuardedHTTPPool,), {"ConnectionCls": connection}
        )
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": self._pool}

"""The Nova simulator without a socket: connections to a simulator's in-process host name hand
each request's bytes to the simulator's own HTTP handler and read its answer from memory.

Only the socket is replaced: urllib3's ``create_connection`` answers a wire instead of a
socket for those host names (every other address connects as usual). Everything above it is
whatever transport the client built (keystoneauth, requests, urllib3, masakari's guarded
adapter and connections, its send guard, its retries and limits), so that a client made by
production code from the options (``NovaClient.from_conf``) is served in process too. What a
socket would add is derived from what the handler did:

- a reset (the flaky mode) is a ConnectionResetError when the client reads the answer;
- a late answer (the flaky mode's ``late``, a ``slow`` fault) is a read timeout when it is at
  least the connection's timeout, else the answer; either way the simulator acted at once,
  without waiting on the wall clock.

Connection limits and the listen backlog exist only on a socket (``NovaSimulator.start()``).
"""

from __future__ import annotations

import io
import socket
import weakref
from typing import Any, Protocol

import urllib3.connection
import urllib3.util.connection


class Served(Protocol):
    """A simulator answering in process (tests.fakes.nova.NovaSimulator)."""

    def in_process_handler(self) -> type: ...


# The simulators answering in process, by the host name of their URL.
_SERVED: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def serve(host: str, simulator: Served) -> None:
    """Answer connections to ``host`` (a name that never resolves) with ``simulator``."""
    _SERVED[host] = simulator


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


def in_process(handler: type) -> type:
    """The simulator's handler class, answering late answers by noting them."""
    return type("InProcessHandler", (handler,), {"answer_late": _note_late})


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


class Wire:
    """The client's end of an in-process connection: what http.client and urllib3 use of a
    socket."""

    def __init__(self, simulator: Served, timeout: float | None) -> None:
        self._simulator = simulator
        self._sent = bytearray()
        self._timeout = timeout

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
        served = self._simulator.in_process_handler()
        handler: Any = object.__new__(served)  # handled below, not by its __init__
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


_create_connection = urllib3.util.connection.create_connection
_wait_for_read = urllib3.connection.wait_for_read  # type: ignore[attr-defined]


def _connect(address: tuple[str, int], timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
    simulator = _SERVED.get(address[0])
    if simulator is not None:
        return Wire(simulator, timeout if isinstance(timeout, int | float) else None)
    if address[0].endswith(".invalid"):  # a simulator no longer referenced: no DNS for it
        raise ConnectionRefusedError(111, f"no simulator answers at {address[0]}")
    return _create_connection(address, timeout, *args, **kwargs)


def _readable(sock: Any, timeout: float | None = None) -> bool:
    # urllib3 polls an idle kept-alive socket to see whether the server closed it: a wire
    # stays open until the client closes it.
    if isinstance(sock, Wire):
        return False
    return bool(_wait_for_read(sock, timeout))


urllib3.util.connection.create_connection = _connect
urllib3.connection.wait_for_read = _readable  # type: ignore[attr-defined]

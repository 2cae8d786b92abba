r"""A TCP proxy that a test can cut, stop and restart: a database or a service "going away".

    proxy = TCPProxy("127.0.0.1", 5432)    # listens on 127.0.0.1, a free port
    proxy.start()
    url = f"postgresql://u:p@127.0.0.1:{proxy.port}/db"
    ...
    proxy.cut()      # live connections are reset; new ones still go through
    proxy.stop()     # live connections reset, new ones refused (nothing listens)
    proxy.start()    # listens again on the same port
    proxy.close()    # stop() for good; also what leaving a ``with`` block does
    proxy.answer_delay = 6   # every answer (upstream to client) held 6 s: a late service
    proxy.requests(rb"PUT /v2.1/os-services/\S+")   # with record=True: what clients sent

Every connection is two threads copying bytes, which is plenty for tests. Connections are
closed with RST (SO_LINGER 0), as a crashed server or a cut link does, so that clients see
an error at once rather than a clean end of stream.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from types import TracebackType

_RESET = struct.pack("ii", 1, 0)


class TCPProxy:
    def __init__(
        self,
        target_host: str,
        target_port: int,
        port: int = 0,
        host: str = "127.0.0.1",
        record: bool = False,
    ) -> None:
        self.target = (target_host, target_port)
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        # Seconds each chunk from the target waits before it is passed on; read per chunk,
        # so a test can make a live connection's answers late and on time again.
        self.answer_delay = 0.0
        # With ``record``: every byte clients sent, one buffer per connection, for requests().
        self.record = record
        self._sent: list[bytearray] = []

    def start(self) -> TCPProxy:
        """Listen (again) on ``port``; the first start picks a free port when it is 0."""
        with self._lock:
            if self._listener is not None:
                return self
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))
            listener.listen(128)
            self.port = listener.getsockname()[1]
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Refuse new connections and reset the live ones."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone may not.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        self.cut()

    def cut(self) -> None:
        """Reset every live connection, both sides; keep listening."""
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _reset(sock)

    def close(self) -> None:
        self.stop()

    def requests(self, pattern: bytes) -> list[bytes]:
        """What clients sent that matches ``pattern`` (a regular expression), connection by
        connection, each in the order sent (a match never straddles two connections)."""
        if not self.record:
            raise ValueError("requests() needs a TCPProxy made with record=True")
        with self._lock:
            sent = [bytes(buffer) for buffer in self._sent]
        return [m.group(0) for data in sent for m in re.finditer(pattern, data)]

    @property
    def connections(self) -> int:
        """Client connections open through the proxy now."""
        with self._lock:
            return len(self._sockets) // 2

    def __enter__(self) -> TCPProxy:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _reset(client)
                    _reset(upstream)
                    return
                self._sockets.update((client, upstream))
                sent = bytearray() if self.record else None
                if sent is not None:
                    self._sent.append(sent)
            pumps = ((client, upstream, sent, False), (upstream, client, None, True))
            for source, sink, record, late in pumps:
                threading.Thread(
                    target=self._pump, args=(source, sink, record, late), daemon=True
                ).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        record: bytearray | None,
        late: bool,
    ) -> None:
        """Copy source to sink; ``record`` keeps what went through; ``late`` (the target's
        answers) waits answer_delay before each chunk."""
        try:
            while data := source.recv(65536):
                if record is not None:
                    record.extend(data)
                if late and self.answer_delay:
                    time.sleep(self.answer_delay)
                sink.sendall(data)
        except OSError:
            pass
        # One side ended or failed: end the pair, as a single TCP connection would.
        with self._lock:
            owned = source in self._sockets
            self._sockets.discard(source)
            self._sockets.discard(sink)
        if owned:
            _reset(source)
            _reset(sink)


def _reset(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()

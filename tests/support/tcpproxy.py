"""A TCP proxy on loopback that a test can cut and restore: a database restart or a partition.

Usage::

    with TCPProxy("127.0.0.1", 5432) as proxy:
        url = url.set(port=proxy.port)   # the process under test connects through the proxy
        proxy.cut()      # live connections reset, new ones refused (as a stopped server)
        proxy.restore()  # accepts again, on the same port

``stop()``/``start()`` are the same as ``cut()``/``restore()``.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from typing import Any

BUFFER = 65536


class TCPProxy:
    """Forwards every connection to ``target``, one thread per connection pair."""

    def __init__(self, target_host: str, target_port: int, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = port
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener: socket.socket | None = None
        self._closed = threading.Event()

    # --- life cycle ------------------------------------------------------------------------

    def __enter__(self) -> TCPProxy:
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()

    def restore(self) -> None:
        """Listen (again) on the proxy's port."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Stop listening and reset every live connection, both ways."""
        with self._lock:
            listener, self._listener = self._listener, None
            pairs, self._pairs = self._pairs, []
        if listener is not None:
            listener.close()
        for pair in pairs:
            for sock in pair:
                _reset(sock)

    start = restore
    stop = cut

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    # --- forwarding --------------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    _reset(client)
                    _reset(upstream)
                    return
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        peers = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            for sock in peers:
                selector.register(sock, selectors.EVENT_READ)
            try:
                while True:
                    for key, _ in selector.select():
                        sock: Any = key.fileobj
                        data = sock.recv(BUFFER)
                        if not data:
                            return
                        peers[sock].sendall(data)
            except (OSError, ValueError):
                return  # reset by cut(), or by either end
            finally:
                with self._lock:
                    if (client, upstream) in self._pairs:
                        self._pairs.remove((client, upstream))
                for sock in peers:
                    sock.close()


def _reset(sock: socket.socket) -> None:
    """Close with RST, as a server process that died does: the peer sees it at once."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # Wakes the pump thread's select() without sending anything; close() then resets.
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    sock.close()

"""tests/support/tcpproxy.py: cut() resets, stop() refuses, start() listens again."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from tests.support.tcpproxy import TCPProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _round_trip(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    return sock.recv(65536)


def test_proxy_cut_stop_start(echo: int) -> None:
    with TCPProxy("127.0.0.1", echo) as proxy:
        port = proxy.port
        live = socket.create_connection(("127.0.0.1", port), timeout=5)
        assert _round_trip(live, b"one") == b"one"
        assert proxy.connections == 1

        proxy.cut()
        with pytest.raises(OSError):
            live.sendall(b"two")
            if not live.recv(65536):
                raise ConnectionResetError("closed")
        live.close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as again:
            assert _round_trip(again, b"three") == b"three"

        proxy.stop()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)

        proxy.start()
        assert proxy.port == port
        with socket.create_connection(("127.0.0.1", port), timeout=5) as back:
            assert _round_trip(back, b"four") == b"four"


def test_answer_delay_makes_answers_late_on_a_live_connection(echo: int) -> None:
    with TCPProxy("127.0.0.1", echo) as proxy:
        live = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        proxy.answer_delay = 2.0
        live.settimeout(0.5)
        live.sendall(b"late")
        with pytest.raises(TimeoutError):
            live.recv(65536)  # the client gives up first, as a time-out would
        live.settimeout(5)
        assert live.recv(65536) == b"late"  # the answer still arrives, late
        proxy.answer_delay = 0
        assert _round_trip(live, b"on time") == b"on time"
        live.close()


def test_requests_are_what_clients_sent_per_connection(echo: int) -> None:
    with TCPProxy("127.0.0.1", echo, record=True) as proxy:
        first = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        second = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        # A request line split over two sends, another connection's sent in between.
        first.sendall(b"PUT /os-ser")
        assert first.recv(65536) == b"PUT /os-ser"
        assert _round_trip(second, b"GET /servers\r\n") == b"GET /servers\r\n"
        assert _round_trip(first, b"vices/1\r\n") == b"vices/1\r\n"
        assert proxy.requests(rb"PUT /os-services/\S+") == [b"PUT /os-services/1"]
        assert proxy.requests(rb"(GET|PUT) /\S+") == [b"PUT /os-services/1", b"GET /servers"]
        first.close()
        second.close()

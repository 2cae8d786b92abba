"""Idle and slow connections do not take request capacity away."""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests.support.api_process import STRICT, APIProcess, request

IDLE = 500
HALF_SENT = 100


def test_idle_and_half_sent_connections_leave_the_api_reachable(api: APIProcess) -> None:
    sockets: list[socket.socket] = []
    try:
        for _ in range(IDLE):
            sockets.append(socket.create_connection(("127.0.0.1", api.port), timeout=5))
        for _ in range(HALF_SENT):
            sock = socket.create_connection(("127.0.0.1", api.port), timeout=5)
            sock.sendall(b"POST /v1/segments HTTP/1.1\r\nHost: x\r\nContent-Le")
            sockets.append(sock)
        # A half-sent body too: headers complete, 10 of 100 bytes.
        sock = socket.create_connection(("127.0.0.1", api.port), timeout=5)
        sock.sendall(
            b"POST /v1/segments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"segment"'
        )
        sockets.append(sock)
        time.sleep(0.5)  # let the workers accept them all
        for _ in range(5):
            started = time.monotonic()
            status, _, body = request(api.port, "GET", "/v1/segments", timeout=5)
            elapsed = time.monotonic() - started
            assert status == 200
            assert json.loads(body) == {"segments": []}
            assert elapsed < 1.0, f"GET took {elapsed:.2f} s"
        assert request(api.port, "GET", "/healthcheck")[2] == b"OK"
    finally:
        for sock in sockets:
            sock.close()


def test_keep_alive_connection_serves_requests_one_after_the_other(api: APIProcess) -> None:
    with socket.create_connection(("127.0.0.1", api.port), timeout=5) as sock:
        for _ in range(3):
            sock.sendall(b"GET /v1/segments HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while not received.endswith(b'{"segments": []}'):
                chunk = sock.recv(65536)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 200")


@pytest.mark.skipif(not STRICT, reason="the upper-constraints' gunicorn does not pipeline")
def test_keep_alive_connection_serves_several_requests(api: APIProcess) -> None:
    with socket.create_connection(("127.0.0.1", api.port), timeout=5) as sock:
        get = b"GET /v1/segments HTTP/1.1\r\nHost: x\r\n\r\n"
        sock.sendall(get + get)
        received = b""
        while received.count(b"HTTP/1.1 200") < 2:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk

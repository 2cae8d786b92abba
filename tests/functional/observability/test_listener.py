"""The unauthenticated metrics listeners hold up against idle connections: a bounded number
of threads, idle connections closed after a timeout, and scrapes served again afterwards."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari.metrics import serve
from tests.support.ports import free_port


def _conf() -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    masakari_conf.register_opts(conf)
    conf([], project="masakari", default_config_files=[])
    return conf


def test_idle_connections_are_bounded_and_timed_out() -> None:
    port = free_port()
    before = threading.active_count()
    server, thread = serve.start_listener(_conf(), port, None, max_connections=4, idle_timeout=0.5)
    idle = []
    try:
        for _ in range(60):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.2)
        # The listener's own thread plus at most four connections, however many wait.
        assert threading.active_count() - before <= 1 + 4
        # Past the timeout the server has closed every idle connection: each reads EOF (or
        # a reset, for those closed at once while busy).
        for sock in idle:
            try:
                assert sock.recv(1) == b""
            except ConnectionResetError:
                pass
        time.sleep(0.3)
        assert threading.active_count() - before <= 1
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            assert resp.status == 200
    finally:
        for sock in idle:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

"""The unauthenticated metrics listeners ([metrics] api_port and engine_port): they answer
any path with the metrics, without authentication, so bind them where only Prometheus can
reach them ([metrics] listen). The API's own GET /metrics is masakari.api.metrics.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any
from wsgiref import simple_server

from oslo_config import cfg
from prometheus_client import exposition

from masakari.db.database import Database
from masakari.metrics import collect

LOG = logging.getLogger(__name__)


# A listener serves Prometheus, which scrapes over one connection at a time: a few threads are
# plenty, and a connection that sends nothing is closed after IDLE_TIMEOUT seconds. Without
# both, idle or half-open connections each held a thread and a file descriptor for ever.
MAX_CONNECTIONS = 8
IDLE_TIMEOUT = 10.0


class _Handler(simple_server.WSGIRequestHandler):
    timeout = IDLE_TIMEOUT  # socket timeout of each connection: reads and writes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """The listeners answer Prometheus only: no access line per scrape."""


class BoundedServer(simple_server.WSGIServer):
    """A thread per connection, at most ``max_connections`` of them; a connection beyond
    that is closed at once (the scraper retries at its next interval)."""

    # The listen backlog: a burst of connections waits to be accepted (and closed at once,
    # when busy) rather than have its SYNs dropped and retried a second later.
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], max_connections: int, idle_timeout: float):
        family = socket.getaddrinfo(
            address[0], address[1], type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0][0]
        self.address_family = family
        handler = type("Handler", (_Handler,), {"timeout": idle_timeout})
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            LOG.debug("Metrics listener busy: connection from %s closed", client_address)
            self.shutdown_request(request)
            return
        threading.Thread(
            target=self._serve, args=(request, client_address), name="metrics-conn", daemon=True
        ).start()

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A peer gone or silent past the timeout is routine here, not a traceback on stderr.
        LOG.debug("Metrics connection from %s ended: %s", client_address, sys.exc_info()[1])


def start_listener(
    conf: cfg.ConfigOpts,
    port: int,
    database: Callable[[], Database] | None,
    *,
    max_connections: int = MAX_CONNECTIONS,
    idle_timeout: float = IDLE_TIMEOUT,
) -> tuple[BoundedServer, threading.Thread]:
    """The metrics on [metrics] listen:``port``, served from a daemon thread."""
    registry = collect.scrape_registry(database)
    server = BoundedServer((conf.metrics.listen, port), max_connections, idle_timeout)
    server.set_app(exposition.make_wsgi_app(registry))
    thread = threading.Thread(target=server.serve_forever, name="metrics-listener", daemon=True)
    thread.start()
    LOG.info("Metrics served on %s:%s (no authentication)", conf.metrics.listen, port)
    return server, thread

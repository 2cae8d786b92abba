"""gunicorn settings from masakari.conf: what each [wsgi] / [DEFAULT] option becomes.

docs/configuration.md explains the choices; the numbers that are not options live here.
"""

from __future__ import annotations

import os
from typing import Any

import gunicorn
from oslo_config import cfg

# gunicorn's asyncio worker: connections wait in its event loop, idle or half-sent, at no
# thread's cost. The fast parser (gunicorn-h1c, picohttpparser) is the strictest one: it
# also refuses chunk sizes that overflow 64 bits, which the pure-Python parser accepts.
WORKER_CLASS = "gunicorn.workers.gasgi.ASGIWorker"
# The same, answering the parse errors that releases before STRICT_GUNICORN leave to the
# event loop (a traceback logged, the connection closed without an answer).
FALLBACK_WORKER_CLASS = "masakari.server.worker.Worker"
HTTP_PARSER = "fast"

# The first gunicorn whose asyncio worker answers every request its parser refuses with one
# 400 and closes, serves pipelined requests and says "Connection: close" when it closes. Older
# releases (the ones OpenStack's upper-constraints pin: 25.2.0, 26.0.0) still keep idle and
# half-sent connections off the threads and never pass an ambiguous request on, but leave most
# parser errors to the event loop (FALLBACK_WORKER_CLASS answers those) and drop the second
# of two pipelined requests (docs/deployment.md, "The HTTP server"; the `server` extra
# installs the newer one).
STRICT_GUNICORN = (27, 0, 1)


def gunicorn_version() -> tuple[int, ...]:
    return tuple(int(part) for part in gunicorn.__version__.split(".")[:3] if part.isdigit())


def strict_http() -> bool:
    return gunicorn_version() >= STRICT_GUNICORN


# Threads per worker process that run the application. The reference's
# [wsgi]/default_pool_size counts green threads, which cost nothing; real threads are capped.
MAX_THREADS = 64
MIN_THREADS = 8
# How long a thread may hold the GIL while another waits for it (Python's default: 5 ms).
# SQLite's driver lets the GIL go at every row it steps to: with several requests in one
# worker, a 1,000-row page waited up to the default at each of those hand-offs, and the
# event loop behind them. Measured: GET of 1,000 notifications, 4 clients on one worker,
# p50 47-53 ms at 5 ms, 38-44 ms at 1 ms, and less CPU per request.
GIL_SWITCH_INTERVAL = 0.001
# Seconds a stopping worker lets requests in progress finish.
GRACEFUL_TIMEOUT = 10
# A worker silent this long is restarted; a request body stalled this long is dropped (408).
WORKER_TIMEOUT = 30
# The longest request line gunicorn accepts (the reference's eventlet allows 8192 bytes).
REQUEST_LINE_LIMIT = 8190
# In memory, where it exists.
HEARTBEAT_DIR = "/dev/shm"
# client_socket_timeout = 0 means "never time out"; gunicorn wants a number of seconds.
FOREVER = 10 * 365 * 24 * 3600


def worker_count(conf: cfg.ConfigOpts) -> int:
    workers = conf.masakari_api_workers
    if workers is not None and workers < 0:
        raise ValueError(
            f"masakari_api_workers value of {workers} is invalid, must be greater than 0"
        )
    return int(workers or os.cpu_count() or 1)


def thread_count(conf: cfg.ConfigOpts) -> int:
    return max(MIN_THREADS, min(conf.wsgi.default_pool_size, MAX_THREADS))


def keepalive(conf: cfg.ConfigOpts) -> int:
    """Seconds a kept-alive connection waits for its next request; 0 closes it at once."""
    if not conf.wsgi.keep_alive:
        return 0
    return int(conf.wsgi.client_socket_timeout or FOREVER)


def bind_address(conf: cfg.ConfigOpts) -> str:
    host = conf.masakari_api_listen
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{conf.masakari_api_listen_port}"


def gunicorn_settings(conf: cfg.ConfigOpts) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bind": [bind_address(conf)],
        "workers": worker_count(conf),
        "worker_class": WORKER_CLASS if strict_http() else FALLBACK_WORKER_CLASS,
        "http_parser": HTTP_PARSER,
        "http_protocols": "h1",
        "keepalive": keepalive(conf),
        "graceful_timeout": GRACEFUL_TIMEOUT,
        "timeout": WORKER_TIMEOUT,
        "limit_request_line": REQUEST_LINE_LIMIT,
        # One header line, as the reference's max_header_line.
        "limit_request_field_size": conf.wsgi.max_header_line,
        # The application's own middleware (http_proxy_to_wsgi) reads forwarding headers
        # when [oslo_middleware] enable_proxy_headers_parsing says so; gunicorn must not
        # apply them on its own, even from loopback.
        "forwarded_allow_ips": "",
        "secure_scheme_headers": {},
        "proxy_protocol": "off",
        "asgi_lifespan": "off",
        # uvloop (a dependency) when it imports, else asyncio's loop.
        "asgi_loop": "auto",
        "control_socket_disable": True,
        # The worker's heartbeat touches a file every second from its event loop: on a
        # busy disk that stalls every connection of the worker (gunicorn's advice).
        "worker_tmp_dir": HEARTBEAT_DIR if os.path.isdir(HEARTBEAT_DIR) else None,
        "proc_name": "masakari-api",
        "logger_class": "masakari.server.logs.Logger",
        "pre_request": pre_request,
    }
    if conf.use_ssl:
        settings["certfile"] = conf.wsgi.ssl_cert_file
        settings["keyfile"] = conf.wsgi.ssl_key_file
        if conf.wsgi.ssl_ca_file:
            # As the reference: a CA file means client certificates are required.
            settings["ca_certs"] = conf.wsgi.ssl_ca_file
            settings["cert_reqs"] = 2  # ssl.CERT_REQUIRED
    return settings


def pre_request(worker: Any, req: Any) -> None:
    """gunicorn's request hook: a request the bridge refuses closes its connection.

    The bridge answers 400 to an HTTP/1.1 request without Host; an ASGI application has no
    way to close the connection itself, the hook does it here.
    """
    if req.version == (1, 1) and not any(name == "HOST" for name, _ in req.headers):
        req.must_close = True

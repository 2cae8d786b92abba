"""masakari-api: serve the API with cheroot on [DEFAULT]/masakari_api_listen:_listen_port.

``masakari_api_workers`` processes (unset or 0: one per CPU, as the reference) each run a
threaded cheroot server on the same port (SO_REUSEPORT). SIGTERM or SIGINT stops them
cleanly: no new connection is accepted, requests in progress finish. The database schema
is never touched here: run ``masakari-manage db sync`` first.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, cast

from cheroot import wsgi
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari.api import app as api_app
from masakari.db.database import Database

LOG = logging.getLogger(__name__)

# Threads per worker process. The reference's [wsgi]/default_pool_size counts green
# threads, which cost nothing; real threads are capped.
MAX_THREADS = 64
MIN_THREADS = 8
# Seconds a stopping worker waits for requests in progress.
SHUTDOWN_TIMEOUT = 10
# Header lines a request may have at [wsgi]/max_header_line each.
HEADER_LINES = 16
# A worker that keeps dying is restarted at most this often (seconds).
RESPAWN_DELAY = 1.0


def worker_count(conf: cfg.ConfigOpts) -> int:
    workers = conf.masakari_api_workers
    if workers is not None and workers < 0:
        raise ValueError(
            f"masakari_api_workers value of {workers} is invalid, must be greater than 0"
        )
    return workers or os.cpu_count() or 1


def make_server(conf: cfg.ConfigOpts, application: Any, reuse_port: bool) -> wsgi.Server:
    threads = max(MIN_THREADS, min(conf.wsgi.default_pool_size, MAX_THREADS))
    server = wsgi.Server(
        (conf.masakari_api_listen, conf.masakari_api_listen_port),
        application,
        numthreads=threads,
        max=threads,
        server_name="masakari-api",
        # 0 means "no timeout" in the reference; cheroot takes None for that.
        timeout=cast(int, conf.wsgi.client_socket_timeout or None),
        shutdown_timeout=SHUTDOWN_TIMEOUT,
        reuse_port=reuse_port,
    )
    # [wsgi]/max_header_line bounds one header line in the reference's server; cheroot
    # bounds the whole header block.
    server.max_request_header_size = conf.wsgi.max_header_line * HEADER_LINES
    if conf.use_ssl:
        from cheroot.ssl.builtin import BuiltinSSLAdapter

        server.ssl_adapter = BuiltinSSLAdapter(
            conf.wsgi.ssl_cert_file, conf.wsgi.ssl_key_file, conf.wsgi.ssl_ca_file
        )
    return server


def serve(conf: cfg.ConfigOpts, reuse_port: bool) -> None:
    """Build the application and serve until SIGTERM or SIGINT."""
    server = make_server(conf, api_app.build(conf), reuse_port)

    def stop(signum: int, _frame: Any) -> None:
        LOG.info("Signal %d received: stopping", signum)
        # stop() joins the worker threads: not from the signal handler's own frame.
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.prepare()
    LOG.info(
        "masakari-api listening on %s:%s (pid %d)",
        conf.masakari_api_listen,
        server.bind_addr[1],
        os.getpid(),
    )
    server.serve()


def supervise(conf: cfg.ConfigOpts, workers: int) -> None:
    """Fork ``workers`` serving processes and keep them running until told to stop."""
    children: dict[int, int] = {}
    stopping = threading.Event()

    def spawn(slot: int) -> None:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                serve(conf, reuse_port=True)
            except BaseException:  # the child must never return into the parent's loop
                LOG.exception("API worker failed")
                code = 1
            finally:
                os._exit(code)
        children[pid] = slot

    def stop(signum: int, _frame: Any) -> None:
        stopping.set()
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for slot in range(workers):
        spawn(slot)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid not in children:
            continue
        slot = children.pop(pid)
        if not stopping.is_set():
            LOG.error("API worker %d exited (status %d): restarting it", pid, status)
            time.sleep(RESPAWN_DELAY)
            spawn(slot)


def main(argv: Sequence[str] | None = None) -> int:
    conf = masakari_conf.load(list(sys.argv[1:] if argv is None else argv))
    masakari_conf.setup_logging(conf)
    try:
        workers = worker_count(conf)
        # Fail before forking when the configuration cannot make an application; each
        # worker then builds its own, with its own database connections.
        db = Database.from_conf(conf)
        try:
            api_app.build(conf, db=db)
        finally:
            db.dispose()
    except Exception as exc:
        LOG.error("Failed to start masakari-api: %s", exc)
        return 1
    if workers == 1:
        serve(conf, reuse_port=False)
    else:
        supervise(conf, workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())

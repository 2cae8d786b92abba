"""The gunicorn application: masakari.conf in, the API served by ``workers`` processes."""

from __future__ import annotations

import gc
import sys
from typing import Any

from gunicorn.app.base import BaseApplication
from oslo_config import cfg
from oslo_middleware import opts as middleware_opts

from masakari import reload
from masakari.api import app as api_app
from masakari.db.database import Database
from masakari.metrics import multiproc, serve
from masakari.server import bridge, settings


class APIServer(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """Each worker process builds its own application (and database connections)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._rereader = reload.Rereader(conf)
        super().__init__(prog="masakari-api")

    def reload(self) -> None:
        """gunicorn's SIGHUP, in the arbiter: the mutable options (log levels) are read
        again here, then gunicorn replaces every worker gracefully; the new ones build the
        application afresh, and read the policy file again."""
        self._rereader.reread()
        super().reload()

    def load_config(self) -> None:
        values = settings.gunicorn_settings(self.conf)
        if multiproc.wanted(self.conf):
            values["child_exit"] = lambda _arbiter, worker: multiproc.worker_exited(worker.pid)
        if self.conf.metrics.api_port:
            values["when_ready"] = self._serve_metrics
        for name, value in values.items():
            self.cfg.set(name, value)

    def _serve_metrics(self, _arbiter: Any) -> None:
        # In the arbiter: it outlives every worker and reads all their files.
        serve.start_listener(
            self.conf, self.conf.metrics.api_port, lambda: Database.from_conf(self.conf)
        )

    def load(self) -> Any:
        app = bridge.WSGIBridge(
            api_app.build(self.conf),
            max_body=server_body_limit(self.conf),
            threads=settings.thread_count(self.conf),
            access_format=self.conf.wsgi.wsgi_log_format,
        )
        freeze_startup_objects()
        sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL)
        return app


def freeze_startup_objects() -> None:
    """Keep what start-up built (modules, the application, oslo's tables) out of the
    garbage collector's full passes.

    Those objects live as long as the process, and there are over 150,000 of them: each
    full collection walked them all, a pause of 100-300 ms in the middle of whichever
    requests were running (the API's p99). Objects made afterwards are collected as usual.
    In the arbiter, before the fork, it also keeps the collector from writing to pages
    the workers share.
    """
    gc.collect()
    gc.freeze()


# The least the server buffers of one request body, whatever the application's limit.
MIN_SERVER_BODY_LIMIT = 1024 * 1024


def server_body_limit(conf: cfg.ConfigOpts) -> int:
    """What the server reads of a body before it answers 413 itself: at least 1 MiB, and
    never less than [oslo_middleware] max_request_body_size, so that the API's own size
    limit answers first on /v1 and the version document at / reads what it is sent."""
    for group, opts in middleware_opts.list_opts_sizelimit():
        conf.register_opts(opts, group=group)
    return max(MIN_SERVER_BODY_LIMIT, int(conf.oslo_middleware.max_request_body_size))

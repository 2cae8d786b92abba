"""The gunicorn application: masakari.conf in, the API served by ``workers`` processes."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication
from oslo_config import cfg
from oslo_middleware import opts as middleware_opts

from masakari.api import app as api_app
from masakari.server import bridge, settings


class APIServer(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """Each worker process builds its own application (and database connections)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        super().__init__(prog="masakari-api")

    def load_config(self) -> None:
        values = settings.gunicorn_settings(self.conf)
        for name, value in values.items():
            self.cfg.set(name, value)

    def load(self) -> Any:
        return bridge.WSGIBridge(
            api_app.build(self.conf),
            max_body=server_body_limit(self.conf),
            threads=settings.thread_count(self.conf),
            access_format=self.conf.wsgi.wsgi_log_format,
        )


# The least the server buffers of one request body, whatever the application's limit.
MIN_SERVER_BODY_LIMIT = 1024 * 1024


def server_body_limit(conf: cfg.ConfigOpts) -> int:
    """What the server reads of a body before it answers 413 itself: at least 1 MiB, and
    never less than [oslo_middleware] max_request_body_size, so that the API's own size
    limit answers first on /v1 and the version document at / reads what it is sent."""
    for group, opts in middleware_opts.list_opts_sizelimit():
        conf.register_opts(opts, group=group)
    return max(MIN_SERVER_BODY_LIMIT, int(conf.oslo_middleware.max_request_body_size))

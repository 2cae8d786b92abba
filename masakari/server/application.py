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
            max_body=max_request_body_size(self.conf),
            threads=settings.thread_count(self.conf),
            access_format=self.conf.wsgi.wsgi_log_format,
        )


def max_request_body_size(conf: cfg.ConfigOpts) -> int:
    """[oslo_middleware] max_request_body_size, the limit the API's sizelimit applies."""
    for group, opts in middleware_opts.list_opts_sizelimit():
        conf.register_opts(opts, group=group)
    return int(conf.oslo_middleware.max_request_body_size)

"""Dispatch by path prefix: /v1, /healthcheck, and everything else to the version list.

``urlmap_factory`` is the reference's paste composite (masakari.api.urlmap:urlmap_factory).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import webob.exc

WSGIApp = Callable[..., Any]

_SLASHES = re.compile("/{2,}")


class URLMap:
    """Longest matching prefix wins, on path segment boundaries; "" catches the rest.

    The prefix moves from PATH_INFO to SCRIPT_NAME, so that the mounted application sees
    its own paths and builds its links from its mount point. Runs of slashes count as one
    (``//v1//segments`` is ``/v1/segments``), as paste's urlmap in front of the reference
    normalises the path before matching it.
    """

    def __init__(self, mounts: Mapping[str, WSGIApp]) -> None:
        self.mounts = {prefix.rstrip("/"): app for prefix, app in mounts.items()}
        self._order = sorted(self.mounts, key=len, reverse=True)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = _SLASHES.sub("/", environ.get("PATH_INFO", ""))
        for prefix in self._order:
            if prefix and not (path == prefix or path.startswith(prefix + "/")):
                continue
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
            environ["PATH_INFO"] = path[len(prefix) :]
            return self.mounts[prefix](environ, start_response)
        return webob.exc.HTTPNotFound()(environ, start_response)


def urlmap_factory(loader: Any, global_conf: dict[str, Any], **local_conf: str) -> URLMap:
    """paste.deploy composite: ``/path = app name`` lines."""
    mounts = {}
    for path, app_name in local_conf.items():
        if path.startswith("/"):
            mounts[path] = loader.get_app(app_name, global_conf=global_conf)
    return URLMap(mounts)

"""Loading a deployer's api-paste.ini: the reference's factory names, bound to one app state.

paste.deploy calls factories with strings only; the app state (conf, database, enforcer)
of the load in progress is handed to the project's factories through a context variable
that is set only while ``load`` runs.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import Any

from oslo_config import cfg
from oslo_middleware import base as oslo_middleware_base
from paste import deploy

_STATE: contextvars.ContextVar[Any] = contextvars.ContextVar("masakari_api_state")

APP_NAME = "masakari_api"


def current_state() -> Any:
    """The app state of the paste load in progress (LookupError outside a load)."""
    return _STATE.get()


def load(path: str, state: Any, name: str = APP_NAME) -> Any:
    """The app ``name`` of the paste file at ``path``, built for ``state``.

    Filters of oslo.middleware and keystonemiddleware named in the file read the app's
    ConfigOpts: keystonemiddleware through ``oslo_config_config``, the oslo.middleware
    ones are given it after loading (paste gives them no configuration object).
    """
    token = _STATE.set(state)
    try:
        app = deploy.loadapp(
            f"config:{path}", name=name, global_conf={"oslo_config_config": state.conf}
        )
    finally:
        _STATE.reset(token)
    for middleware in _chain(app):
        if (
            isinstance(middleware, oslo_middleware_base.ConfigurableMiddleware)
            and middleware.oslo_conf is cfg.CONF
        ):
            middleware.oslo_conf = state.conf
    return app


def _chain(app: Any, seen: set[int] | None = None) -> Iterator[Any]:
    """Every WSGI object reachable from ``app`` through the usual wrapper attributes."""
    seen = set() if seen is None else seen
    if app is None or id(app) in seen:
        return
    seen.add(id(app))
    yield app
    for attribute in ("application", "app", "_app"):
        yield from _chain(getattr(app, attribute, None), seen)
    for mounted in getattr(app, "mounts", {}).values():
        yield from _chain(mounted, seen)

"""Loading a deployer's api-paste.ini: the reference's factory names, bound to one app state.

paste.deploy calls factories with strings only; the app state (conf, database, enforcer)
of the load in progress is handed to the project's factories through a context variable
that is set only while ``load`` runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

from keystonemiddleware import auth_token
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

    paste hands factories strings only, so the middlewares of oslo.middleware and
    keystonemiddleware named in the file start on oslo.config's global object; they are
    given the app's ConfigOpts once the pipeline is built (a filter that names its own
    ``oslo_config_project``, like the reference's cors, keeps what it loaded).
    """
    token = _STATE.set(state)
    try:
        with _silenced(AUTHTOKEN_LOGGER):
            app = deploy.loadapp(f"config:{path}", name=name)
    finally:
        _STATE.reset(token)
    _adopt_conf(app, state.conf)
    return app


# keystonemiddleware's auth_token logs here (unless the paste file gives it a log_name).
AUTHTOKEN_LOGGER = "keystonemiddleware.auth_token"


def _drop(_record: logging.LogRecord) -> bool:
    return False


@contextlib.contextmanager
def _silenced(name: str) -> Iterator[None]:
    """While paste builds the pipeline, auth_token starts on oslo.config's global object,
    where none of masakari.conf's [keystone_authtoken] is set: what it warns about then
    (www_authenticate_uri missing, ...) is not the configuration that serves. The middleware
    _adopt_conf makes afterwards from masakari.conf warns about what really is missing."""
    logger = logging.getLogger(name)
    logger.addFilter(_drop)
    try:
        yield
    finally:
        logger.removeFilter(_drop)


def _adopt_conf(app: Any, conf: cfg.ConfigOpts) -> None:
    for parent, attribute, child in _links(app):
        if isinstance(child, auth_token.AuthProtocol) and child._conf.oslo_conf_obj is cfg.CONF:
            replacement = auth_token.AuthProtocol(child._app, {"oslo_config_config": conf})
            _set_link(parent, attribute, replacement)
        elif (
            isinstance(child, oslo_middleware_base.ConfigurableMiddleware)
            and child.oslo_conf is cfg.CONF
        ):
            child.oslo_conf = conf


def _links(app: Any) -> Iterator[tuple[Any, str | None, Any]]:
    """(parent, attribute or mount, child) for every WSGI object reachable from ``app``."""
    seen: set[int] = set()
    pending: list[tuple[Any, str | None, Any]] = [(None, None, app)]
    while pending:
        parent, attribute, child = pending.pop()
        if child is None or id(child) in seen:
            continue
        seen.add(id(child))
        yield parent, attribute, child
        for name in ("application", "app", "_app"):
            pending.append((child, name, getattr(child, name, None)))
        for prefix, mounted in getattr(child, "mounts", {}).items():
            pending.append((child, "mounts:" + prefix, mounted))


def _set_link(parent: Any, attribute: str | None, value: Any) -> None:
    if attribute is None:
        raise ValueError("the pipeline's outermost filter cannot be replaced")
    if attribute.startswith("mounts:"):
        parent.mounts[attribute.split(":", 1)[1]] = value
    else:
        setattr(parent, attribute, value)

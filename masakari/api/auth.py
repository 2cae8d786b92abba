"""Request contexts from the token middleware's headers (keystone) or from nothing (noauth2).

The class and factory names are the reference's, so that its api-paste.ini loads this code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import webob.exc

from masakari.api import faults, pasteload
from masakari.api.request import CONTEXT_KEY
from masakari.context import RequestContext

WSGIApp = Callable[..., Any]

INVALID_CATALOG = "Invalid service catalog json."


class InvalidCatalog(ValueError):
    """X-Service-Catalog is not JSON: the client's error, a 400 (the reference says 500)."""


class _ContextMiddleware:
    """Puts a RequestContext in ``environ["masakari.context"]``."""

    def __init__(self, application: WSGIApp, state: Any) -> None:
        self.application = application
        self.state = state

    @classmethod
    def factory(cls, global_conf: dict[str, Any], **local_conf: Any) -> Callable[[WSGIApp], Any]:
        """paste.deploy filter factory; the app state comes from the loader in progress."""
        state = pasteload.current_state()
        return lambda app: cls(app, state)

    def _context(self, environ: dict[str, Any], **extra: Any) -> RequestContext:
        # Read from the environ itself: these middlewares sit on every request, and a
        # webob request and response per layer cost more than what they do.
        remote_address = environ.get("REMOTE_ADDR")
        if self.state.conf.use_forwarded_for:
            remote_address = environ.get("HTTP_X_FORWARDED_FOR", remote_address)
        catalog = None
        header = environ.get("HTTP_X_SERVICE_CATALOG")
        if header is not None:
            try:
                catalog = json.loads(header)
            except ValueError as exc:
                raise InvalidCatalog(INVALID_CATALOG) from exc
        return RequestContext.from_environ(
            environ,
            enforcer=self.state.enforcer,
            remote_address=remote_address,
            service_catalog=catalog,
            **extra,
        )


class MasakariKeystoneContext(_ContextMiddleware):
    """auth_strategy = keystone: the context of the token auth_token validated; 401 without
    a user id (plain text, as the reference)."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        try:
            ctx = self._context(environ, user_auth_plugin=environ.get("keystone.token_auth"))
        except InvalidCatalog as exc:
            return faults.fault(400, str(exc))(environ, start_response)
        if ctx.user_id is None:
            return webob.exc.HTTPUnauthorized()(environ, start_response)
        environ[CONTEXT_KEY] = ctx
        return self.application(environ, start_response)


class NoAuthMiddleware(_ContextMiddleware):
    """auth_strategy = noauth2: no credential checked, every caller is an administrator.

    The user and project come from X-User-Id and X-Project-Id when the client sends them.
    """

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        try:
            environ[CONTEXT_KEY] = self._context(environ, is_admin=True)
        except InvalidCatalog as exc:
            return faults.fault(400, str(exc))(environ, start_response)
        return self.application(environ, start_response)


def pipeline_factory_v1(loader: Any, global_conf: dict[str, Any], **local_conf: str) -> Any:
    """paste.deploy composite: the pipeline named after [DEFAULT]/auth_strategy."""
    names = local_conf[pasteload.current_state().conf.auth_strategy].split()
    app = loader.get_app(names[-1])
    for name in reversed(names[:-1]):
        app = loader.get_filter(name)(app)
    return app

"""The masakari-api WSGI application: the reference's api-paste.ini pipelines, built in code.

``build(conf)`` returns the application. When [wsgi]/api_paste_config names an existing
file, that file is loaded instead (its factory names resolve to this package), so a
deployer's customised api-paste.ini keeps working.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_middleware import cors, healthcheck, http_proxy_to_wsgi, request_id, sizelimit
from oslo_middleware import opts as middleware_opts

from masakari.api import alertmanager, auth, dbcheck, faults, metrics, pasteload, router
from masakari.api.handlers.versions import VersionsApp
from masakari.api.state import AppState, make_state
from masakari.api.urlmap import URLMap
from masakari.db.database import Database
from masakari.policies import metrics as metrics_policies

LOG = logging.getLogger(__name__)

WSGIApp = Callable[..., Any]

# /v1, outermost first (etc/masakari/api-paste.ini of the reference). CORS answers
# preflights before anything else; the proxy headers must be applied before anything
# reads the URL; the request id is set before faults are logged; the size limit refuses
# big bodies before authentication spends a Keystone call on them; the token is checked
# before the context is built from its headers; routing comes last, so that an unknown
# path with a bad token is a 401.
V1_PIPELINES = {
    "keystone": (
        "cors",
        "http_proxy_to_wsgi",
        "request_id",
        "faultwrap",
        "sizelimit",
        "authtoken",
        "keystonecontext",
    ),
    "noauth2": ("cors", "http_proxy_to_wsgi", "request_id", "faultwrap", "sizelimit", "noauth2"),
}
# Alertmanager's webhook: its own credentials (masakari.api.alertmanager), a size limit.
ALERTMANAGER_PIPELINE = ("http_proxy_to_wsgi", "request_id", "sizelimit")
# GET / is served without authentication nor size limit.
ROOT_PIPELINE = ("faultwrap", "http_proxy_to_wsgi")

HEALTHCHECK_DISABLE_FILE = "/etc/masakari/healthcheck_disable"


def build(
    conf: cfg.ConfigOpts,
    db: Database | None = None,
    check_compute: Callable[[str], None] | None = None,
) -> WSGIApp:
    """The application for ``conf``; ``db`` and ``check_compute`` are test seams."""
    state = make_state(conf, db, check_compute)
    paste_file = paste_config_file(conf)
    if paste_file is not None:
        LOG.info("Loading the API pipelines of %s", paste_file)
        return pasteload.load(paste_file, state)
    mounts = {
        "/v1": v1_app(state),
        "/healthcheck": healthcheck_app(conf, state.db),
        "": _wrap(VersionsApp(state), ROOT_PIPELINE, state),
    }
    if conf.metrics.enabled:
        mounts["/metrics"] = metrics_app(state)
    if alertmanager.enabled(conf):
        mounts[alertmanager.PATH] = _wrap(
            alertmanager.AlertmanagerApp(state), ALERTMANAGER_PIPELINE, state
        )
    return URLMap(mounts)


def paste_config_file(conf: cfg.ConfigOpts) -> str | None:
    """The deployer's api-paste.ini when [wsgi]/api_paste_config names an existing file
    (a relative name is looked for next to the configuration files)."""
    name = conf.wsgi.api_paste_config
    if not name:
        return None
    path = name if os.path.isabs(name) else conf.find_file(name)
    return path if path and os.path.exists(path) else None


def v1_app(state: AppState) -> WSGIApp:
    pipeline = V1_PIPELINES[state.conf.auth_strategy]
    app: WSGIApp = router.Router(state, state.conf.osapi_v1.project_id_regex)
    return _wrap(app, pipeline, state)


def metrics_app(state: AppState) -> WSGIApp:
    """GET /metrics behind the /v1 pipeline: the same authentication, then its own rule.

    The rule is registered here, not among the defaults the policy entry point lists, so
    that at default options the rules are exactly the reference's.
    """
    if metrics_policies.SHOW not in state.enforcer.registered_rules:
        state.enforcer.register_defaults(metrics_policies.RULES)
        state.enforcer.load_rules(force_reload=True)
    app: WSGIApp = metrics.MetricsApp(lambda: state.db)
    return _wrap(app, V1_PIPELINES[state.conf.auth_strategy], state)


def _wrap(app: WSGIApp, pipeline: tuple[str, ...], state: AppState) -> WSGIApp:
    for name in reversed(pipeline):
        app = FILTERS[name](app, state)
    return app


def _cors(app: WSGIApp, state: AppState) -> WSGIApp:
    return cors.CORS(app, state.conf)


def _authtoken(app: WSGIApp, state: AppState) -> WSGIApp:
    return auth_token.AuthProtocol(app, {"oslo_config_config": state.conf})


FILTERS: dict[str, Callable[[WSGIApp, AppState], WSGIApp]] = {
    "cors": _cors,
    "http_proxy_to_wsgi": lambda app, state: http_proxy_to_wsgi.HTTPProxyToWSGI(app, state.conf),
    "request_id": lambda app, state: request_id.RequestId(app, state.conf),
    "faultwrap": lambda app, state: faults.FaultWrapper(app),
    "sizelimit": lambda app, state: sizelimit.RequestBodySizeLimiter(app, state.conf),
    "authtoken": _authtoken,
    "keystonecontext": auth.MasakariKeystoneContext,
    "noauth2": auth.NoAuthMiddleware,
}


def healthcheck_app(conf: cfg.ConfigOpts, db: Database | None = None) -> WSGIApp:
    """oslo.middleware's healthcheck: the reference's disable_by_file backend, and the
    database (masakari.api.dbcheck), which answers 503 while it cannot be reached."""
    conf.register_opts(middleware_opts.list_opts_healthcheck()[0][1], group="healthcheck")
    conf.set_default("backends", ["disable_by_file", dbcheck.NAME], group="healthcheck")
    conf.set_default("disable_by_file_path", HEALTHCHECK_DISABLE_FILE, group="healthcheck")
    if db is not None:
        dbcheck.share_database(conf, db)
    return healthcheck.Healthcheck(None, conf)

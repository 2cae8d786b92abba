"""POST /alertmanager: Alertmanager's webhook receiver ([quarantine], masakari.ha.alerts).

Served beside /v1, not behind Keystone (Alertmanager sends static credentials): it answers
only requests with the basic credentials or bearer token of [quarantine], compared in
constant time, and is mounted only when those are set and quarantine is enabled. Every
answer to an authenticated, well-formed body is 200 with what became of each alert, so that
Alertmanager does not retry a host masakari does not know; a body it cannot read is 400, a
database outage 503 (Alertmanager retries both until its own time-out).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from typing import Any

import webob
import webob.exc
from oslo_config import cfg

from masakari.db import database
from masakari.ha import alerts

LOG = logging.getLogger(__name__)

PATH = "/alertmanager"


def enabled(conf: cfg.ConfigOpts) -> bool:
    options = conf.quarantine
    basic = bool(options.alertmanager_username and options.alertmanager_password)
    return bool(options.enabled and (basic or options.alertmanager_bearer_token))


class AlertmanagerApp:
    def __init__(self, state: Any) -> None:
        self.state = state

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        req = webob.Request(environ)
        return self._answer(req)(environ, start_response)

    def _answer(self, req: webob.Request) -> webob.Response:
        if req.path_info not in ("", "/"):
            return webob.exc.HTTPNotFound()
        if req.method != "POST":
            return webob.exc.HTTPMethodNotAllowed(headers=[("Allow", "POST")])
        if not authorized(self.state.conf, req.headers.get("Authorization", "")):
            return _json(
                401,
                {"error": "Alertmanager's credentials are missing or wrong."},
                [("WWW-Authenticate", 'Basic realm="masakari"')],
            )
        try:
            body = json.loads(req.body or b"null")
            said = alerts.handle(self.state.conf, self.state.db, body)
        except ValueError:
            return _json(400, {"error": "The body is not JSON."})
        except alerts.BadAlerts as exc:
            return _json(400, {"error": exc.message})
        except Exception as exc:
            if database.unreachable(exc):
                return _json(
                    503,
                    {"error": "The database is unreachable; retry later."},
                    [("Retry-After", "5")],
                )
            raise
        for entry in said:
            if entry["outcome"] in ("requested", "held", "refused"):
                LOG.warning("Alertmanager alert for host %s: %s", entry["host"], entry)
        return _json(200, {"alerts": said})


def authorized(conf: cfg.ConfigOpts, header: str) -> bool:
    options = conf.quarantine
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and options.alertmanager_bearer_token:
        return hmac.compare_digest(
            value.strip().encode(), options.alertmanager_bearer_token.encode()
        )
    if (
        scheme.lower() == "basic"
        and options.alertmanager_username
        and options.alertmanager_password
    ):
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        user, _, password = decoded.partition(":")
        expected = f"{options.alertmanager_username}:{options.alertmanager_password}"
        return hmac.compare_digest(f"{user}:{password}".encode(), expected.encode())
    return False


def _json(status: int, body: Any, headers: list[tuple[str, str]] | None = None) -> webob.Response:
    resp = webob.Response(status=status, json_body=body, headerlist=[])
    resp.content_type = "application/json"
    for name, value in headers or []:
        resp.headers[name] = value
    return resp


def app_factory(global_conf: dict[str, Any], **local_conf: str) -> AlertmanagerApp:
    """paste.deploy: ``[app:alertmanager] paste.app_factory =
    masakari.api.alertmanager:app_factory`` mounted as ``/alertmanager`` in a deployer's
    api-paste.ini."""
    from masakari.api import pasteload

    return AlertmanagerApp(pasteload.current_state())

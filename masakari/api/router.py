"""The /v1 route table and the router that matches, checks and dispatches a request.

ROUTES lists, in matching order, every path the reference's mapper generates under /v1
and, per method, the handler or -- for a route generated but not implemented -- the
name of its mapper action (405 badMethod). A path or method outside the table is the
mapper's plain-text 404. Each path also answers with a ``.json`` or ``.xml`` suffix and
under ``/{project_id}`` (the token's project, checked after the body is parsed).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

import webob
import webob.exc

from masakari import exception
from masakari.api import errors, faults, microversion, outage
from masakari.api.handlers import (
    drills,
    extensions,
    hosts,
    notifications,
    quarantines,
    segments,
    versions,
    vmoves,
)
from masakari.api.request import CONTEXT_KEY, ApiRequest, Handler, Reply


@dataclasses.dataclass(frozen=True)
class Since:
    """A handler served from a microversion on; older versions get the mapper action's 405."""

    version: str
    handler: Handler
    action: str


Target = Handler | str | Since

ROUTES: dict[str, Mapping[str, Target]] = {
    # The version document of /v1 (the reference's custom routes, no suffix, no project).
    "": {"GET": versions.show},
    "/": {"GET": versions.show},
    "/versions": {"POST": "create", "GET": "index"},
    "/versions/new": {"GET": "new"},
    "/versions/{id}/edit": {"GET": "edit"},
    "/versions/{id}": {"PUT": "update", "DELETE": "delete", "GET": versions.show},
    "/extensions": {"POST": "create", "GET": extensions.index},
    "/extensions/new": {"GET": "new"},
    "/extensions/{id}/edit": {"GET": "edit"},
    "/extensions/{id}": {"PUT": "update", "DELETE": "delete", "GET": extensions.show},
    "/segments": {"POST": segments.create, "GET": segments.index},
    "/segments/new": {"GET": "new"},
    "/segments/{id}/action": {"POST": "action"},
    "/segments/{id}/edit": {"GET": "edit"},
    "/segments/{id}": {"PUT": segments.update, "DELETE": segments.delete, "GET": segments.show},
    # 1.5 (issue 9), like recovery_plan below.
    "/segments/{id}/readiness": {"GET": segments.readiness},
    "/segments/{segment_id}/hosts": {"POST": hosts.create, "GET": hosts.index},
    "/segments/{segment_id}/hosts/new": {"GET": "new"},
    "/segments/{segment_id}/hosts/{id}/edit": {"GET": "edit"},
    "/segments/{segment_id}/hosts/{id}": {
        "PUT": hosts.update,
        "DELETE": hosts.delete,
        "GET": hosts.show,
    },
    # 1.5 (issue 9): below it, or when api_max_microversion is lower, an unknown path.
    "/segments/{segment_id}/hosts/{id}/recovery_plan": {"GET": hosts.recovery_plan},
    "/segments/{segment_id}/hosts/{id}/quarantine": {"POST": quarantines.create},
    "/quarantines": {"GET": quarantines.index},
    "/quarantines/{id}": {"GET": quarantines.show},
    "/quarantines/{id}/action": {"POST": quarantines.action},
    # 1.9 (issue 29): fire drills, an unknown path below it, as recovery_plan.
    "/segments/{segment_id}/drills": {"POST": drills.create, "GET": drills.index},
    "/segments/{segment_id}/drills/{drill_id}": {"GET": drills.show},
    "/notifications": {"POST": notifications.create, "GET": notifications.index},
    "/notifications/new": {"GET": "new"},
    "/notifications/{id}/action": {"POST": Since("1.4", notifications.action, "action")},
    "/notifications/{id}/edit": {"GET": "edit"},
    "/notifications/{id}": {"PUT": "update", "DELETE": "delete", "GET": notifications.show},
    "/notifications/{notification_id}/vmoves": {"POST": "create", "GET": vmoves.index},
    "/notifications/{notification_id}/vmoves/new": {"GET": "new"},
    "/notifications/{notification_id}/vmoves/{id}/edit": {"GET": "edit"},
    "/notifications/{notification_id}/vmoves/{id}": {
        "PUT": "update",
        "DELETE": "delete",
        "GET": vmoves.show,
    },
}

# Paths that take neither a format suffix nor a project prefix.
_BARE = ("", "/")

# The reference's default [osapi_v1]/project_id_regex: a Keystone id, with or without dashes.
DEFAULT_PROJECT_ID_REGEX = r"[0-9a-f\-]+"

_PARAM = re.compile(r"\{(\w+)\}")


def _compile(path: str, project_regex: str | None) -> re.Pattern[str]:
    # Path parameters are non-greedy so that a .json/.xml suffix is not part of the last
    # one; any other suffix is (GET /v1/segments/<uuid>.yaml looks up "<uuid>.yaml").
    parts: list[str] = []
    position = 0
    for param in _PARAM.finditer(path):
        parts.append(re.escape(path[position : param.start()]))
        parts.append(f"(?P<{param.group(1)}>[^/]+?)")
        position = param.end()
    parts.append(re.escape(path[position:]))
    body = "".join(parts)
    prefix = "" if project_regex is None else f"/(?P<project_id>{project_regex})"
    suffix = "" if path in _BARE else r"(?:\.(?:json|xml))?"
    return re.compile(f"^{prefix}{body}{suffix}$")


class Router:
    """WSGI app for /v1: route, then run the reference's request stack in its order.

    version header (400/406) -> request media type (415) -> unimplemented action (405)
    -> JSON body of POST/PUT (400) -> project id of the URL (400) -> handler, whose
    errors become faults carrying the version.
    """

    def __init__(self, state: Any, project_id_regex: str | None = None) -> None:
        self.state = state
        regex = project_id_regex or DEFAULT_PROJECT_ID_REGEX
        self._table: list[tuple[re.Pattern[str], Mapping[str, Target]]] = []
        for path, methods in ROUTES.items():
            self._table.append((_compile(path, None), methods))
        for path, methods in ROUTES.items():
            if path not in _BARE:
                self._table.append((_compile(path, regex), methods))

    def match(self, method: str, path: str) -> tuple[Target, dict[str, str]] | None:
        """The first route whose path and method both match, as the reference's mapper does."""
        for pattern, methods in self._table:
            target = methods.get(method)
            if target is None:
                continue
            found = pattern.match(path)
            if found:
                return target, {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        req = ApiRequest(environ)
        found = self.match(req.method, req.path_info)
        if found is None or not self._served(found[0], req):
            return webob.exc.HTTPNotFound()(environ, start_response)
        target, args = found
        return self._dispatch(req, target, args)(environ, start_response)

    def _served(self, target: Target, req: ApiRequest) -> bool:
        """Whether a route added by a microversion exists for this request: not below its
        version, so that the reference's API is unchanged (its paths are served at every
        version)."""
        since = getattr(target, "since", None)
        if since is None:
            return True
        try:
            maximum = microversion.enabled_max(self.state.conf)
            version = microversion.from_environ(req.environ, maximum)
        except exception.MasakariError:
            return False
        return version >= microversion.parse_string(since)

    def _dispatch(self, req: ApiRequest, target: Target, args: dict[str, str]) -> webob.Response:
        try:
            version = microversion.from_environ(
                req.environ, microversion.enabled_max(self.state.conf)
            )
        except microversion.UnsupportedVersion as exc:
            return faults.fault(406, exc.format_message(), vary=True)
        except exception.InvalidAPIVersionString as exc:
            return faults.fault(400, exc.format_message())
        req.api_version = version
        req.state = self.state
        if isinstance(target, Since):
            served = version >= microversion.parse_string(target.version)
            target = target.handler if served else target.action
        try:
            req.request_media_type()
            media_type = req.response_media_type()
            if isinstance(target, str):
                raise errors.ActionNotImplemented(method=req.method, action=target)
            req.body_data = req.parse_body() if req.method in ("POST", "PUT") else None
            project_id = args.pop("project_id", None)
            context = req.environ.get(CONTEXT_KEY)
            if project_id is not None and context is not None and project_id != context.project_id:
                raise exception.MalformedURL(
                    project_id=project_id, context_project_id=context.project_id
                )
            req.route_args = args
            reply = target(req)
        except Exception as exc:  # every error becomes a fault, as the reference's handler
            return faults.from_exception(exc, version)
        outage.OUTAGES.succeeded()
        return _serialise(reply, media_type, version)


def _serialise(reply: Reply, media_type: str, version: microversion.Version) -> webob.Response:
    response = webob.Response(status=reply.status)
    if isinstance(reply.body, bytes):
        response.body = reply.body
    elif reply.body is not None:
        response.body = json.dumps(reply.body).encode("utf-8")
    response.headers["Content-Type"] = media_type
    response.headers[microversion.HEADER] = microversion.header_text(version)
    response.headers.add("Vary", microversion.HEADER)
    return response

"""Version documents: GET / (every version, no authentication) and GET /v1 (this one)."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib import parse

import webob

from masakari.api import errors, faults, microversion
from masakari.api.request import ApiRequest, Reply, ok

VERSIONS: dict[str, dict[str, Any]] = {
    "v1.0": {
        "id": "v1.0",
        "status": "CURRENT",
        "version": microversion.to_string(microversion.MAX_VERSION),
        "min_version": microversion.to_string(microversion.MIN_VERSION),
        "updated": "2016-07-01T11:33:21Z",
        "links": [
            {"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"}
        ],
        "media-types": [
            {
                "base": "application/json",
                "type": "application/vnd.openstack.masakari+json;version=1",
            }
        ],
    }
}
URL_VERSION = "v1"


def link_prefix(url: str, prefix: str | None) -> str:
    """``url`` rebased on [DEFAULT]/osapi_masakari_link_prefix when set, without trailing /."""
    if not prefix:
        return url
    parts = list(parse.urlsplit(url))
    prefix_parts = parse.urlsplit(prefix)
    parts[0:2] = [prefix_parts.scheme, prefix_parts.netloc]
    parts[2] = prefix_parts.path + parts[2]
    return parse.urlunsplit(parts).rstrip("/")


def url_join(*parts: str) -> str:
    """Parts joined with single slashes; an empty last part leaves a trailing slash."""
    cleaned = [part.strip("/") for part in parts if part]
    if not parts[-1]:
        cleaned.append("")
    return "/".join(cleaned)


def show(req: ApiRequest) -> Reply:
    """GET /v1 (and /v1/versions/{id}): 200 with the version document, for any role."""
    version_id = req.route_args.get("id", "v1.0")
    if version_id not in VERSIONS:
        raise errors.ResourceNotFound()
    document = copy.deepcopy(VERSIONS[version_id])
    document["version"] = served_max(req.state.conf)
    prefix = link_prefix(req.application_url, req.state.conf.osapi_masakari_link_prefix)
    document["links"].insert(0, {"rel": "self", "href": prefix.rstrip("/") + "/"})
    return ok({"version": document})


def served_max(conf: Any) -> str:
    """The max_version to advertise: [DEFAULT]/api_max_microversion (1.3 by default)."""
    limit = getattr(conf, "api_max_microversion", None)
    return microversion.to_string(microversion.max_version(limit))


def versions(base_url: str, max_version: str | None = None) -> dict[str, Any]:
    """GET /: every version with its self link."""
    return {
        "versions": [
            {
                "id": version["id"],
                "status": version["status"],
                "version": max_version or version["version"],
                "min_version": version["min_version"],
                "updated": version["updated"],
                "links": [{"rel": "self", "href": url_join(base_url, URL_VERSION, "")}],
            }
            for _, version in sorted(VERSIONS.items())
        ]
    }


def choices(base_url: str, path: str) -> dict[str, Any]:
    """Any other path outside /v1: 300 with where the path would be under each version."""
    return {
        "choices": [
            {
                "id": version["id"],
                "status": version["status"],
                "links": [{"rel": "self", "href": url_join(base_url, URL_VERSION, path)}],
                "media-types": version["media-types"],
            }
            for _, version in sorted(VERSIONS.items())
        ]
    }


class VersionsApp:
    """The application at ``/``: the version list for ``/`` (any method), 300 elsewhere."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        req = ApiRequest(environ)
        try:
            req.request_media_type()
            media_type = req.response_media_type()
            if req.method in ("POST", "PUT"):
                req.parse_body()
        except Exception as exc:
            return faults.from_exception(exc, None)(environ, start_response)
        base_url = link_prefix(req.application_url, self.state.conf.osapi_masakari_link_prefix)
        if req.path_info == "/":
            status, body = 200, versions(base_url, served_max(self.state.conf))
        else:
            status, body = 300, choices(base_url, req.path)
        response = webob.Response(status=status, body=json.dumps(body).encode("utf-8"))
        response.headers["Content-Type"] = media_type
        return response(environ, start_response)

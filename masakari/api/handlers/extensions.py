"""The reference's extension list: /v1/extensions and /v1/extensions/{alias}."""

from __future__ import annotations

from typing import Any

from masakari.api import errors
from masakari.api.request import ApiRequest, Reply, ok
from masakari.policies import base as base_policies
from masakari.policies import extension_info as policies

# alias -> (name, description), as the reference's extensions declare them.
EXTENSIONS: dict[str, tuple[str, str]] = {
    "extensions": ("Extensions", "Extension information."),
    "notifications": ("Notifications", "Notifications support."),
    "os-hosts": ("Hosts", "Hosts controller"),
    "segments": ("Segments", "Segments Extension."),
    "versions": ("Versions", "API Version information."),
    "vmoves": ("vmoves", "vmoves controller"),
}


def _discoverable(req: ApiRequest) -> dict[str, dict[str, Any]]:
    """The extensions the caller may discover (rule os_masakari_api:<alias>:discoverable)."""
    shown = {}
    for alias, (name, description) in sorted(EXTENSIONS.items()):
        action = f"{base_policies.PREFIX}:{alias}:discoverable"
        if req.context.can(action, fatal=False):
            shown[alias] = {
                "name": name,
                "alias": alias,
                "description": description,
                "namespace": "",
                "updated": "",
                "links": [],
            }
    return shown


def index(req: ApiRequest) -> Reply:
    """GET /v1/extensions: 200 with the discoverable extensions, sorted by alias."""
    req.can(policies.INDEX)
    return ok({"extensions": list(_discoverable(req).values())})


def show(req: ApiRequest) -> Reply:
    """GET /v1/extensions/{alias}: 200 with the extension, 404 for an unknown alias."""
    req.can(policies.DETAIL)
    extension = _discoverable(req).get(req.route_args["id"])
    if extension is None:
        raise errors.ResourceNotFound()
    return ok({"extension": extension})

"""The name the reference's api-paste.ini gives the version list's factory.

``masakari.api.openstack.ha.versions:Versions.factory``.
"""

from __future__ import annotations

from typing import Any

from masakari.api import pasteload
from masakari.api.handlers.versions import VersionsApp


class Versions:
    """paste.deploy app factory for the version list at /."""

    @classmethod
    def factory(cls, global_conf: dict[str, Any], **local_conf: Any) -> VersionsApp:
        return VersionsApp(pasteload.current_state())

"""Names the reference's api-paste.ini uses (masakari.api.openstack.ha:APIRouterV1.factory)."""

from __future__ import annotations

from typing import Any

from masakari.api import pasteload, router


class APIRouterV1:
    """paste.deploy app factory for the /v1 router of the app state being loaded."""

    @classmethod
    def factory(cls, global_conf: dict[str, Any], **local_conf: Any) -> router.Router:
        state = pasteload.current_state()
        return router.Router(state, state.conf.osapi_v1.project_id_regex)

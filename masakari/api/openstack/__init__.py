"""Names the reference's api-paste.ini uses (masakari.api.openstack:FaultWrapper.factory)."""

from __future__ import annotations

from masakari.api.faults import FaultWrapper

__all__ = ["FaultWrapper"]

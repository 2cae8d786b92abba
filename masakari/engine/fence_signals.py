"""The seam between the verdict (masakari.engine.verdict) and host fencing: what fencing
knows of a failed host. Host fencing (docs/operations.md § Host fencing) fills it; without
it, :class:`NoFencing` says nothing."""

from __future__ import annotations

import dataclasses
from typing import Protocol

from masakari.db import evidence as ev


@dataclasses.dataclass(frozen=True)
class FenceView:
    """What host fencing (docs/operations.md § Host fencing) says about the failed host."""

    # What proved the host off or crashed ("IPMI power off confirmed", "kdump message"), None.
    proof: str | None = None
    # A BMC reads the host powered on: it is running, whatever else says.
    power_on: bool = False
    # The host has fencing configured: the recovery proves it off before evacuating.
    can_fence: bool = False
    evidence: tuple[ev.Evidence, ...] = ()


class HostFencing(Protocol):
    """The seam host fencing fills: what it knows of a failed host, read by the verdict."""

    def view(self, notification_uuid: str, host_name: str) -> FenceView: ...


class NoFencing:
    """No host fencing: no proof, no veto, nothing to fence with."""

    def view(self, notification_uuid: str, host_name: str) -> FenceView:
        return FenceView()

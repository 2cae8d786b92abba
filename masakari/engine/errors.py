"""How a recovery run is stopped from outside, and how a wait ends."""

from __future__ import annotations


class Cancelled(Exception):
    """The run must stop now: the engine is stopping or lost its claim. Nothing is reverted."""


class PollTimeout(Exception):
    """A confirmation poll ran out of time."""


class Held(Exception):
    """The run holds its notification for an operator instead of recovering it (host fencing
    did not prove the failed host dead, or the verdict did not confirm the failure): the
    hold is written, and the claim given up with it, before this is raised."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

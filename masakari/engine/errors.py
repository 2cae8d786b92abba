"""How a recovery run is stopped from outside, and how a wait ends."""

from __future__ import annotations


class Cancelled(Exception):
    """The run must stop now: the engine is stopping or lost its claim. Nothing is reverted."""


class PollTimeout(Exception):
    """A confirmation poll ran out of time."""


class Held(Exception):
    """Host fencing did not prove the failed host dead: the notification is held for an
    operator, and the claim given up with it (already written when this is raised)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

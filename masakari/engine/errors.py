"""How a recovery run is stopped from outside, and how a wait ends."""

from __future__ import annotations


class Cancelled(Exception):
    """The run must stop now: the engine is stopping or lost its claim. Nothing is reverted."""


class PollTimeout(Exception):
    """A confirmation poll ran out of time."""

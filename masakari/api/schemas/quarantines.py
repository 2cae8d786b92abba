"""Bodies of the quarantine API (1.10)."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def create() -> dict[str, Any]:
    """{"quarantine": {"reason": "..."}}: why the host is taken out of service."""
    return {
        "type": "object",
        "properties": {
            "quarantine": {
                "type": "object",
                "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 4000}},
                "required": ["reason"],
                "additionalProperties": False,
            }
        },
        "required": ["quarantine"],
        "additionalProperties": False,
    }


@functools.cache
def action() -> dict[str, Any]:
    """Exactly one verb with a null argument: start, cancel or release."""
    return {
        "type": "object",
        "properties": {
            "start": {"type": "null"},
            "cancel": {"type": "null"},
            "release": {"type": "null"},
        },
        "minProperties": 1,
        "maxProperties": 1,
        "additionalProperties": False,
    }


CREATE = {"1.10": create}
ACTION = {"1.10": action}

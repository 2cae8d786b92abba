"""Fire drill bodies (microversion 1.9): ``{"drill": {"host": ..., flags}}``."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def create_v1_9() -> dict[str, Any]:
    flag = {"type": "boolean"}  # new surface: JSON booleans only, no "yes"/"1" strings
    return {
        "type": "object",
        "properties": {
            "drill": {
                "type": "object",
                "properties": {
                    # The host's name or uuid.
                    "host": {"type": "string", "minLength": 1, "maxLength": 255},
                    "no_fence": flag,
                    "allow_untagged": flag,
                    "move_back": flag,
                },
                "required": ["host"],
                "additionalProperties": False,
            }
        },
        "required": ["drill"],
        "additionalProperties": False,
    }


CREATE = {"1.9": create_v1_9}

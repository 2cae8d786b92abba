"""Host bodies: create and update (the same at every microversion)."""

from __future__ import annotations

import functools
from typing import Any

from masakari.api.schemas import types


def _base() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "host": {
                "type": "object",
                "properties": {
                    "name": types.name(),
                    "type": types.host_type(),
                    "control_attributes": types.description(),
                    "reserved": types.boolean(),
                    "on_maintenance": types.boolean(),
                },
                "additionalProperties": False,
            }
        },
        "required": ["host"],
        "additionalProperties": False,
    }


@functools.cache
def create() -> dict[str, Any]:
    schema = _base()
    schema["properties"]["host"]["required"] = ["name", "type", "control_attributes"]
    return schema


@functools.cache
def update() -> dict[str, Any]:
    schema = _base()
    schema["properties"]["host"]["anyOf"] = [
        {"required": [field]}
        for field in ("name", "type", "control_attributes", "reserved", "on_maintenance")
    ]
    return schema


CREATE = {"1.0": create}
UPDATE = {"1.0": update}

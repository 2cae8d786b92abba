"""Segment bodies: create and update, before and from microversion 1.2 (``enabled``)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from masakari.api.schemas import types
from masakari.db.statuses import RECOVERY_METHODS


def _base() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "segment": {
                "type": "object",
                "properties": {
                    "name": types.name(),
                    "description": types.description(),
                    "recovery_method": {"type": "string", "enum": list(RECOVERY_METHODS)},
                    "service_type": types.name(),
                },
                "additionalProperties": False,
            }
        },
        "required": ["segment"],
        "additionalProperties": False,
    }


@functools.cache
def create() -> dict[str, Any]:
    schema = _base()
    schema["properties"]["segment"]["required"] = ["name", "recovery_method", "service_type"]
    return schema


@functools.cache
def create_v1_2() -> dict[str, Any]:
    schema = copy.deepcopy(create())
    schema["properties"]["segment"]["properties"]["enabled"] = types.boolean()
    return schema


@functools.cache
def update() -> dict[str, Any]:
    schema = _base()
    schema["properties"]["segment"]["anyOf"] = [
        {"required": ["name"]},
        {"required": ["description"]},
        {"required": ["recovery_method"]},
        {"required": ["service_type"]},
    ]
    return schema


@functools.cache
def update_v1_2() -> dict[str, Any]:
    schema = copy.deepcopy(update())
    segment = schema["properties"]["segment"]
    segment["properties"]["enabled"] = types.boolean()
    segment["anyOf"].append({"required": ["enabled"]})
    return schema


# Starting microversion -> schema factory.
CREATE = {"1.0": create, "1.2": create_v1_2}
UPDATE = {"1.0": update, "1.2": update_v1_2}

"""Notification bodies: the envelope, then one payload schema per notification type."""

from __future__ import annotations

import functools
from typing import Any

from masakari.api.schemas import types

# Tuples, not lists: the 400 message shows the enum as the reference's tuple does.
TYPES = ("COMPUTE_HOST", "VM", "PROCESS")
EVENTS = ("STARTED", "STOPPED")
HOST_STATUSES = ("NORMAL", "UNKNOWN")
CLUSTER_STATUSES = ("ONLINE", "OFFLINE")


@functools.cache
def create() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "notification": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": TYPES},
                    "hostname": types.hostname(),
                    "generated_time": {"type": "string", "format": "date-time"},
                    "payload": types.payload(),
                },
                "required": ["type", "hostname", "generated_time", "payload"],
                "additionalProperties": False,
            }
        },
        "required": ["notification"],
        "additionalProperties": False,
    }


@functools.cache
def compute_host_payload() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "host_status": {"enum": HOST_STATUSES, "type": "string"},
            "cluster_status": {"enum": CLUSTER_STATUSES, "type": "string"},
            "event": {"enum": EVENTS, "type": "string"},
        },
        "required": ["event"],
        "additionalProperties": False,
    }


@functools.cache
def process_payload() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "process_name": {"type": "string", "minLength": 1, "maxLength": 4096},
            "event": {"enum": EVENTS, "type": "string"},
        },
        "required": ["process_name", "event"],
        "additionalProperties": False,
    }


@functools.cache
def vm_payload() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "instance_uuid": {"type": "string", "format": "uuid"},
            "vir_domain_event": {"type": "string", "minLength": 1, "maxLength": 255},
            "event": {"type": "string", "minLength": 1, "maxLength": 255},
        },
        "required": ["instance_uuid", "vir_domain_event", "event"],
        "additionalProperties": False,
    }


@functools.cache
def action() -> dict[str, Any]:
    """Exactly one verb, with a null argument: {"release": null} or {"cancel": null}."""
    return {
        "type": "object",
        "properties": {"release": {"type": "null"}, "cancel": {"type": "null"}},
        "minProperties": 1,
        "maxProperties": 1,
        "additionalProperties": False,
    }


CREATE = {"1.0": create}
ACTION = {"1.4": action}
PAYLOADS = {"COMPUTE_HOST": compute_host_payload, "VM": vm_payload, "PROCESS": process_payload}

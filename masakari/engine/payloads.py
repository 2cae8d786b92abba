"""What monitors put in a notification's payload, read leniently into typed records.

The API validates only that the payload is an object; the engine reads the keys it knows
and treats anything else as absent, as the reference does.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def _decode(text: str | None) -> dict[str, Any]:
    try:
        payload = json.loads(text or "{}")
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclasses.dataclass(frozen=True)
class HostPayload:
    """COMPUTE_HOST: ``event`` STARTED/STOPPED, ``host_status`` (NORMAL: fenced off);
    ``detector``: the failure detector that made the report (masakari.detection), None for a
    monitor's."""

    event: str | None
    host_status: str | None
    detector: str | None = None

    @classmethod
    def parse(cls, text: str | None) -> HostPayload:
        raw = _decode(text)
        return cls(
            _text(raw.get("event")), _text(raw.get("host_status")), _text(raw.get("detector"))
        )


@dataclasses.dataclass(frozen=True)
class ProcessPayload:
    """PROCESS: ``event`` STARTED/STOPPED of ``process_name``."""

    event: str | None
    process_name: str | None

    @classmethod
    def parse(cls, text: str | None) -> ProcessPayload:
        raw = _decode(text)
        return cls(_text(raw.get("event")), _text(raw.get("process_name")))


@dataclasses.dataclass(frozen=True)
class InstancePayload:
    """VM: a libvirt ``event`` and its ``vir_domain_event`` detail, for ``instance_uuid``."""

    event: str | None
    vir_domain_event: str | None
    instance_uuid: str | None
    raw: dict[str, Any]

    @classmethod
    def parse(cls, text: str | None) -> InstancePayload:
        raw = _decode(text)
        return cls(
            _text(raw.get("event")),
            _text(raw.get("vir_domain_event")),
            _text(raw.get("instance_uuid")),
            raw,
        )

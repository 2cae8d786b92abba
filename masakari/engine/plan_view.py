"""What a recovery plan says (masakari.engine.plan computes it): steps, reserved-host
attempts, the verdict, and the body ``GET .../recovery_plan`` and ``host plan`` show."""

from __future__ import annotations

import dataclasses
from typing import Any

from masakari.engine.selection import Instance


@dataclasses.dataclass
class Step:
    instance: Instance
    target: str | None  # a reserved host, SCHEDULER, or None when it is left behind
    fits: bool | None  # None: capacity not known (no target)
    reason: str | None = None
    # Where its evacuation is sent, in order: a reserved host per reserved-host attempt.
    attempts: list[str] = dataclasses.field(default_factory=list)

    def view(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance.id,
            "name": self.instance.name,
            "ha_enabled": self.instance.ha,
            "priority": self.instance.priority,
            "group": self.instance.group,
            "resources": dict(self.instance.resources),
            "target": self.target,
            "fits": self.fits,
            "reason": self.reason,
            "attempts": list(self.attempts),
        }


@dataclasses.dataclass
class Candidate:
    """A reserved host as the reserved-host flow tries it."""

    host: str
    sent: list[str]  # the instances evacuated to it, in order
    fitting: list[str]  # those of ``sent`` it has room for
    reason: str | None  # why the flow goes on to the next one, or does not use this one

    def view(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "sent": list(self.sent),
            "fits": list(self.fitting),
            "reason": self.reason,
        }


@dataclasses.dataclass
class Plan:
    host: str
    recovery_method: str
    options: dict[str, Any]
    steps: list[Step]
    not_evacuated: list[tuple[Instance, str]]
    reserved_hosts: list[str]
    then: str | None  # what the method tries when the first flow fails
    messages: list[str]
    candidates: list[Candidate] = dataclasses.field(default_factory=list)
    grouped: bool = False

    @property
    def verdict(self) -> str:
        """fits: every evacuation has room; partial: some are left behind; none: all are;
        empty: nothing to evacuate; unknown: capacity could not be read."""
        if not self.steps:
            return "empty"
        if any(s.fits is None for s in self.steps):
            return "unknown"
        fitting = sum(1 for s in self.steps if s.fits)
        if fitting == len(self.steps):
            return "fits"
        return "partial" if fitting else "none"

    @property
    def left_behind(self) -> list[str]:
        return [s.instance.id for s in self.steps if s.fits is False]

    def groups(self) -> list[dict[str, Any]]:
        """The ordering groups in the order they start, with their instances (those sent)."""
        if not self.grouped:
            return []
        found: list[dict[str, Any]] = []
        for step in self.steps:
            if not step.attempts:
                continue
            if not found or found[-1]["group"] != step.instance.group:
                found.append({"group": step.instance.group, "instances": []})
            found[-1]["instances"].append(step.instance.id)
        return found

    def view(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "recovery_method": self.recovery_method,
            "options": dict(self.options),
            "verdict": self.verdict,
            "instances": [s.view() for s in self.steps],
            "groups": self.groups(),
            "left_behind": self.left_behind,
            "not_evacuated": [
                {"instance_id": i.id, "name": i.name, "reason": reason}
                for i, reason in self.not_evacuated
            ],
            "reserved_hosts": list(self.reserved_hosts),
            "reserved_host_attempts": [c.view() for c in self.candidates],
            "then": self.then,
            "messages": list(self.messages),
        }

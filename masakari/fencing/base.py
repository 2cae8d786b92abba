"""The contract of a power fencing driver, and one driver's entry in the fencing file.

A host's entry in the fencing file ([fencing]/config_file) is an ordered *escalation list*
of :class:`DriverSpec`: the engine tries them in order until one proves the host dead. A
power driver (IPMI, Redfish, a fence agent) implements :class:`PowerDriver`; the others are
no power switch: ``kdump`` is the host's word that it crashed
(:mod:`masakari.engine.kdump_proof`), ``lease`` its shared-disk lease
(:mod:`masakari.fencing.lease`), ``ceph`` a cut off its storage
(:mod:`masakari.fencing.ceph`). Drivers never log or raise secrets: :class:`DriverSpec`
keeps them out of ``repr``, and :meth:`DriverSpec.describe` is what evidence, logs and the
API show.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Protocol

__all__ = [
    "DriverSpec",
    "FenceError",
    "PowerDriver",
    "PowerState",
    "Refused",
    "Unreachable",
    "why_of",
]

# The driver types of the fencing file.
IPMI = "ipmi"
REDFISH = "redfish"
AGENT = "agent"
KDUMP = "kdump"
# The host's shared-disk lease (masakari.fencing.lease): a veto while it renews, a proof once
# it expired; no power driver either.
LEASE = "lease"
# Storage fencing: the host cut off its Ceph RBD disks (masakari.fencing.ceph).
CEPH = "ceph"
TYPES = (IPMI, REDFISH, AGENT, KDUMP, LEASE, CEPH)


class PowerState(enum.Enum):
    ON = "on"
    OFF = "off"
    # The BMC answered without a power state we understand (neither on nor off).
    UNKNOWN = "unknown"


class FenceError(Exception):
    """A driver could not do what it was asked, and why, without secrets.

    ``why`` is the reason alone; ``driver`` the entry that raised it (its
    :meth:`DriverSpec.describe`), when a driver did. ``str()`` names the driver, then why,
    for a message that stands alone; what already shows the driver (an attempt's row, a
    check's, the hold reason's "<entry>: <why>") takes ``why``, so that the driver is named
    once.
    """

    def __init__(self, why: str, driver: str | None = None) -> None:
        super().__init__(f"{driver}: {why}" if driver else why)
        self.why = why
        self.driver = driver


def why_of(exc: BaseException) -> str:
    """An error's reason without the driver's name (for a place that shows the driver)."""
    return exc.why if isinstance(exc, FenceError) else str(exc)


class Unreachable(FenceError):
    """No answer within the driver's timeout (the BMC is down, or cut off)."""


class Refused(FenceError):
    """The BMC or agent answered and refused: bad credentials, an unknown system, a command
    it does not accept."""


@dataclasses.dataclass(frozen=True)
class DriverSpec:
    """One entry of a host's escalation list, as the fencing file gives it.

    ``address``: the BMC's host name or IP (IPMI), base URL (Redfish), the host's address
    its kdump messages come from (kdump), the agent's ``ip`` argument (agents; ``port`` is
    its ``ipport``), the shared device's path (lease).
    ``timeout``: seconds one call of this driver may take (a power action, a status read).
    ``options``: the rest of the entry, driver-specific (Redfish's ``system``, ``verify``;
    an agent's ``agent`` and its ``key=value`` arguments; kdump's wait), secrets included.
    """

    type: str
    address: str | None = None
    port: int | None = None
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    timeout: float = 10.0
    options: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    # The label evidence shows: the file's ``name`` or, by default, the type.
    name: str = ""

    def describe(self) -> str:
        """The driver as evidence and logs show it: type, label and address, never a
        credential."""
        where = self.address or ""
        if self.port is not None and where:
            where = f"{where}:{self.port}"
        what = f"{self.type} {where}".strip()
        return f"{self.name}: {what}" if self.name else what


class PowerDriver(Protocol):
    """A way to switch one host's power and read it. Every call returns within
    ``spec.timeout`` (raising :class:`Unreachable` when the BMC does not answer) and raises
    :class:`FenceError` for any other failure."""

    spec: DriverSpec

    def power_off(self) -> None:
        """Ask for a hard power off (not a graceful shutdown). Returns once the BMC accepted
        it; whether the host is off is :meth:`power_status`'s to say. A BMC that refuses
        because the host is already off is not a failure: the caller reads the state."""

    def power_status(self) -> PowerState: ...

    def power_on(self) -> None: ...

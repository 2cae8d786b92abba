"""What an engine needs to fence failed hosts: the fencing file, read once, and its drivers.

Built by masakari-engine at start when ``[fencing] config_file`` is set (a bad file stops
the engine there); without it there is no :class:`HostFencing` and recovery trusts the
monitor's report, as masakari 22.0.0 does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from oslo_config import cfg

from masakari.conf import fencing as fencing_opts
from masakari.fencing.base import DriverSpec, PowerDriver, PowerState


class FencingPlan(Protocol):
    """The fencing file, read (masakari.fencing.config.FencingFile): a host's escalation
    list (its own entry, the first pattern that matches its name, or its segment's
    default by uuid or name; None or empty when none)."""

    def drivers_for(
        self,
        host_name: str,
        segment_name: str | None = None,
        segment_uuid: str | None = None,
    ) -> Sequence[DriverSpec] | None: ...


@dataclasses.dataclass(frozen=True)
class FencedHost:
    """A host as the fencing file names it: its name, and its segment's name and uuid."""

    name: str
    segment_name: str | None = None
    segment_uuid: str | None = None


@dataclasses.dataclass(frozen=True)
class HostFencing:
    plan: FencingPlan
    # A driver for one entry of a list (masakari.fencing's registry).
    power_driver: Callable[[DriverSpec], PowerDriver]
    unfenced_hosts: str = fencing_opts.UNFENCED_RECOVER
    confirm_interval: float = 1.0
    confirm_timeout: float = 30.0
    kdump_max_age: float = 600.0
    power_on_after_recovery: bool = False
    # The read-only check of one entry (the readiness doctor); by default its power status.
    status_check: Callable[[DriverSpec], PowerState] | None = None

    @classmethod
    def with_options(
        cls,
        conf: cfg.ConfigOpts,
        plan: FencingPlan,
        power_driver: Callable[[DriverSpec], PowerDriver],
    ) -> HostFencing:
        options = conf.fencing
        return cls(
            plan=plan,
            power_driver=power_driver,
            unfenced_hosts=options.unfenced_hosts,
            confirm_interval=options.confirm_interval,
            confirm_timeout=options.confirm_timeout,
            kdump_max_age=float(options.kdump_max_age),
            power_on_after_recovery=options.power_on_after_recovery,
        )

    @property
    def holds_unfenced(self) -> bool:
        return self.unfenced_hosts == fencing_opts.UNFENCED_HOLD

    def drivers_for(self, host: FencedHost) -> list[DriverSpec]:
        return list(self.plan.drivers_for(host.name, host.segment_name, host.segment_uuid) or [])

    def check(self, spec: DriverSpec) -> PowerState:
        """A read-only call that proves the entry usable: credentials valid, BMC reachable."""
        if self.status_check is not None:
            return self.status_check(spec)
        return self.power_driver(spec).power_status()

    def spec_at(self, host: FencedHost, position: int, described: str) -> DriverSpec | None:
        """The entry at ``position`` of the host's list if it is still the one recorded (the
        file may have changed since an attempt was made)."""
        specs = self.drivers_for(host)
        if 0 <= position < len(specs) and specs[position].describe() == described:
            return specs[position]
        return None

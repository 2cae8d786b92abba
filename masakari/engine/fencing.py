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
from masakari.fencing.base import DriverSpec, PowerDriver


class FencingPlan(Protocol):
    """The fencing file, read: a host's escalation list (its own entry, the first pattern
    that matches its name, or its segment's default; empty when none)."""

    def drivers_for(self, host_name: str, segment: str | None) -> Sequence[DriverSpec]: ...


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

    def drivers_for(self, host_name: str, segment: str | None) -> list[DriverSpec]:
        return list(self.plan.drivers_for(host_name, segment))

    def spec_at(
        self, host_name: str, segment: str | None, position: int, described: str
    ) -> DriverSpec | None:
        """The entry at ``position`` of the host's list if it is still the one recorded (the
        file may have changed since an attempt was made)."""
        specs = self.drivers_for(host_name, segment)
        if 0 <= position < len(specs) and specs[position].describe() == described:
            return specs[position]
        return None

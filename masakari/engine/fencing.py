"""What an engine needs to fence failed hosts: the fencing file, read once, and its drivers.

Built by masakari-engine at start when ``[fencing] config_file`` is set (a bad file stops
the engine there); without it there is no :class:`HostFencing` and recovery trusts the
monitor's report, as masakari 22.0.0 does.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from oslo_config import cfg

from masakari.conf import fencing as fencing_opts
from masakari.db import fencing as evidence
from masakari.db.database import Database, transaction
from masakari.fencing import drivers
from masakari.fencing.base import IPMI, DriverSpec, PowerDriver
from masakari.fencing.config import FencingFile

LOG = logging.getLogger(__name__)


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
    # [fencing] kdump_trust: a kdump entry's messages prove the crash, or only hint at it.
    kdump_trust: str = fencing_opts.KDUMP_PROOF
    power_on_after_recovery: bool = False
    # The read-only check of one entry (the readiness doctor).
    check: Callable[[DriverSpec], drivers.Check] = drivers.check
    # The file's entries whose driver cannot be built, found when it was read: said at the
    # engine's start rather than by the first fence that fails through them.
    unbuildable: tuple[drivers.Unbuildable, ...] = ()
    path: str | None = None
    # The file has an ipmi entry: the engine starts the IPMI session worker with itself.
    uses_ipmi: bool = False

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> HostFencing | None:
        """The engine's host fencing: ``[fencing] config_file`` read and checked now (a
        file that does not load raises FencingFileError, naming the file and the entry),
        and every entry's driver built once (:attr:`unbuildable`); None when it is unset."""
        if not fencing_opts.enabled(conf):
            return None
        plan = FencingFile.load(conf.fencing.config_file)
        return dataclasses.replace(
            cls.with_options(conf, plan, drivers.power_driver),
            unbuildable=tuple(drivers.unbuildable(plan.entries(), drivers.power_driver)),
            path=plan.path,
            uses_ipmi=any(spec.type == IPMI for _, spec in plan.entries()),
        )

    def say_unbuildable(self) -> None:
        """Log each entry whose driver cannot be built, at ERROR."""
        for found in self.unbuildable:
            LOG.error(
                "Host fencing: fencing file %s: %s; a host whose list reaches this entry is "
                "not fenced by it",
                self.path,
                found,
            )

    @classmethod
    def with_options(
        cls,
        conf: cfg.ConfigOpts,
        plan: FencingPlan,
        power_driver: Callable[[DriverSpec], PowerDriver],
        check: Callable[[DriverSpec], drivers.Check] = drivers.check,
    ) -> HostFencing:
        options = conf.fencing
        return cls(
            plan=plan,
            power_driver=power_driver,
            check=check,
            unfenced_hosts=options.unfenced_hosts,
            confirm_interval=options.confirm_interval,
            confirm_timeout=options.confirm_timeout,
            kdump_trust=options.kdump_trust,
            power_on_after_recovery=options.power_on_after_recovery,
        )

    @property
    def kdump_proves(self) -> bool:
        return self.kdump_trust == fencing_opts.KDUMP_PROOF

    @property
    def holds_unfenced(self) -> bool:
        return self.unfenced_hosts == fencing_opts.UNFENCED_HOLD

    def drivers_for(self, host: FencedHost) -> list[DriverSpec]:
        return list(self.plan.drivers_for(host.name, host.segment_name, host.segment_uuid) or [])

    def spec_at(self, host: FencedHost, position: int, described: str) -> DriverSpec | None:
        """The entry at ``position`` of the host's list if it is still the one recorded (the
        file may have changed since an attempt was made)."""
        specs = self.drivers_for(host)
        if 0 <= position < len(specs) and specs[position].describe() == described:
            return specs[position]
        return None


class KdumpStore:
    """The sink of an engine's kdump listener: each message a row every engine reads.

    A message that cannot be stored (the database is away) raises: the listener counts it,
    logs it and goes on; the crashing host sends one every few seconds (fence_kdump_send's
    interval) until it reboots.
    """

    def __init__(self, db: Database, engine: str) -> None:
        self.db = db
        self.engine = engine

    def __call__(self, source_address: str, received_at: datetime.datetime) -> None:
        transaction(
            self.db,
            lambda s: evidence.record_kdump(s, source_address, received_at, self.engine),
        )
        LOG.info("kdump message from %s at %s stored", source_address, received_at)

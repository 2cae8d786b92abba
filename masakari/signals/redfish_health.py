"""Quarantine's Redfish signal: the health of every host that has a Redfish fencing entry.

A periodic task of the engine that runs the periodic tasks ([quarantine]
redfish_health_interval; with [coordination], the leader): for each host of the database
whose fencing-file list has a ``redfish`` entry, the first such entry's ComputerSystem
``Status.Health`` and ``Status.HealthRollup`` are read. A value listed in
``redfish_health_quarantine`` requests the host's quarantine (source ``redfish``, signal
``redfish:<host>``: a repeat changes nothing); both back to OK end the signal (a quarantine
not started is withdrawn). A BMC that does not answer is counted and logged, never a
quarantine: an unreachable BMC says nothing about the host.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable

from oslo_config import cfg

from masakari import exception
from masakari.db import fencing as fencing_db
from masakari.db.database import Database
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.fencing.base import REDFISH, DriverSpec, FenceError, Refused, Unreachable
from masakari.fencing.redfish import Health, RedfishDriver
from masakari.ha import quarantines
from masakari.metrics import quarantine as quarantine_metrics

LOG = logging.getLogger(__name__)

# BMCs read at once: each read waits up to its entry's timeout.
AT_ONCE = 8
SIGNAL_PREFIX = "redfish:"
OK = "ok"
# Worst first: what a read counts as when Health and HealthRollup differ.
_SEVERITY = ("critical", "warning", OK)


def signal_of(host_name: str) -> str:
    return SIGNAL_PREFIX + host_name


def read_health(spec: DriverSpec) -> Health:
    return RedfishDriver(spec).health()


@dataclasses.dataclass(frozen=True)
class Watched:
    host: FencedHost
    spec: DriverSpec


class RedfishHealth:
    """One pass over every watched host (:meth:`run`, the periodic task)."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        fencing_: HostFencing,
        read: Callable[[DriverSpec], Health] = read_health,
    ) -> None:
        self.conf = conf
        self.db = db
        self.fencing = fencing_
        self.read = read
        self.quarantine_on = {v.strip().lower() for v in conf.quarantine.redfish_health_quarantine}

    def run(self) -> None:
        watched = self.watched()
        if not watched:
            return
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=min(AT_ONCE, len(watched)), thread_name_prefix="redfish-health"
        ) as pool:
            found = list(pool.map(self._read, watched))
        open_signals = quarantines.open_signals(self.db, SIGNAL_PREFIX)
        for item, health in zip(watched, found, strict=True):
            if health is not None:
                self.judge(item, health, signal_of(item.host.name) in open_signals)

    def watched(self) -> list[Watched]:
        """The hosts of the database with a redfish entry, and their first one."""
        with self.db.reader() as session:
            hosts = fencing_db.hosts_to_check(session)
        found = []
        for name, segment_uuid, segment_name in hosts:
            host = FencedHost(name, segment_name, segment_uuid)
            spec = next((s for s in self.fencing.drivers_for(host) if s.type == REDFISH), None)
            if spec is not None:
                found.append(Watched(host, spec))
        return found

    def _read(self, item: Watched) -> Health | None:
        try:
            return self.read(item.spec)
        except Unreachable as exc:
            result, why = "unreachable", str(exc)
        except Refused as exc:
            result, why = "refused", str(exc)
        except FenceError as exc:
            result, why = "failed", str(exc)
        except Exception as exc:  # a driver's bug is this host's finding, not the pass's end
            LOG.exception("Redfish health of %s failed", item.host.name)
            result, why = "failed", f"{type(exc).__name__}: {exc}"
        quarantine_metrics.redfish_read(result)
        LOG.warning("Redfish health of host %s not read: %s", item.host.name, why)
        return None

    def judge(self, item: Watched, health: Health, quarantine_open: bool) -> None:
        values = [v.strip().lower() for v in health.values()]
        quarantine_metrics.redfish_read(next((s for s in _SEVERITY if s in values), "unknown"))
        name = item.host.name
        if self.quarantine_on & set(values):
            self._request(item, health)
        elif values and all(v == OK for v in values) and quarantine_open:
            ended = quarantines.signal_ended(self.db, signal_of(name))
            LOG.info(
                "Redfish health of host %s is OK again: its quarantine signal ended (%s)",
                name,
                ", ".join(f"{row.uuid} {row.status}" for row in ended) or "none open",
            )

    def _request(self, item: Watched, health: Health) -> None:
        reason = (
            f"Redfish health of {item.spec.describe()}: Health {health.health or 'unset'}, "
            f"HealthRollup {health.rollup or 'unset'}"
        )
        try:
            quarantines.request(
                self.conf,
                self.db,
                item.host.name,
                quarantines.REDFISH,
                reason,
                signal=signal_of(item.host.name),
            )
        except exception.MasakariError as exc:
            # Off, the host's failure being recovered, the host gone since the list was read:
            # the next pass asks again.
            LOG.info("Quarantine of host %s (%s) not requested: %s", item.host.name, reason, exc)

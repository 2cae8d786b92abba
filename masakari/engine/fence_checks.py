"""The readiness checks of host fencing: every host's drivers, before any failure.

A periodic task of the engine that runs the periodic tasks ([fencing] check_interval; with
a coordination backend one engine, otherwise each): for every host of the database, each
driver of its escalation list answers a read-only power status call (credentials valid,
BMC reachable), a host without drivers is listed; the results replace the host's earlier
ones in ``masakari_fence_checks``, which the readiness doctor reports (the API never reads
the fencing file). ``masakari-manage segment check`` runs :meth:`FenceChecker.check_all`
live when it can read the file, recording nothing.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging

from masakari.db import fencing
from masakari.db.database import Database, transaction
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.engine.ports import Clock
from masakari.fencing.base import CEPH, KDUMP, LEASE, DriverSpec

LOG = logging.getLogger(__name__)

# Hosts checked at once: each check waits on a BMC for up to its driver's timeout.
AT_ONCE = 8


class FenceChecker:
    def __init__(
        self,
        db: Database,
        fencing_: HostFencing,
        clock: Clock,
        engine: str,
        kdump_listener: str | None = None,
    ) -> None:
        self.db = db
        self.fencing = fencing_
        self.clock = clock
        self.engine = engine
        self.kdump_listener = kdump_listener

    def run(self) -> None:
        """Check every host and record the results (the periodic task)."""
        with self.db.reader() as session:
            hosts = fencing.hosts_to_check(session)
        for host_name, found in self.check_hosts(hosts).items():
            transaction(
                self.db, functools.partial(fencing.replace_checks, host_name=host_name, found=found)
            )
        names = [name for name, _, _ in hosts]
        transaction(self.db, functools.partial(fencing.forget_checks_except, host_names=names))

    def check_all(self, segment: str | None = None) -> list[fencing.Check]:
        """Every host's checks (of one segment, by uuid or name), live, recorded nowhere."""
        with self.db.reader() as session:
            hosts = fencing.hosts_to_check(session)
        if segment is not None:
            hosts = [h for h in hosts if segment in (h[1], h[2])]
        return [c for found in self.check_hosts(hosts).values() for c in found]

    def check_hosts(self, hosts: list[tuple[str, str, str]]) -> dict[str, list[fencing.Check]]:
        """host name -> its checks, hosts checked ``AT_ONCE`` at a time."""
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=AT_ONCE, thread_name_prefix="fence-check"
        ) as pool:
            futures = {
                name: pool.submit(self.check_host, FencedHost(name, segment_name, segment_uuid))
                for name, segment_uuid, segment_name in hosts
            }
            return {name: future.result() for name, future in futures.items()}

    def check_host(self, host: FencedHost) -> list[fencing.Check]:
        host_name = host.name
        specs = self.fencing.drivers_for(host)
        if not specs:
            return [self._row(host_name, 0, "", fencing.UNFENCED, "no driver", None)]
        return [self._check(host_name, i, spec) for i, spec in enumerate(specs)]

    def _check(self, host_name: str, position: int, spec: DriverSpec) -> fencing.Check:
        try:
            found = self.fencing.check(spec)
        except Exception as exc:  # a driver's bug is this host's finding, not the task's end
            LOG.exception("Fencing check of %s via %s failed", host_name, spec.describe())
            return self._row(
                host_name,
                position,
                spec.describe(),
                fencing.FAILED,
                f"{type(exc).__name__}: {exc}",
                None,
            )
        if found.ok:
            result = fencing.OK
            if spec.type == KDUMP:
                where = self.kdump_listener or "none on this engine ([fencing] kdump_listen)"
                message = f"address resolves; kdump listener: {where}"
            elif spec.type == LEASE:
                message = "its slot is renewed by an agent with a watchdog"
            elif spec.type == CEPH:
                message = "the OSD map's blocklist reads"
            else:
                message = "power state: " + (found.state.value if found.state else "unknown")
        else:
            result = (
                fencing.UNREACHABLE
                if found.reachable is False
                else fencing.REFUSED
                if found.credentials_valid is False
                else fencing.FAILED
            )
            message = found.error or "failed"
        return self._row(host_name, position, spec.describe(), result, message, found.duration)

    def _row(
        self,
        host_name: str,
        position: int,
        driver: str,
        result: str,
        message: str | None,
        seconds: float | None,
    ) -> fencing.Check:
        return fencing.Check(
            host_name=host_name,
            position=position,
            driver=driver,
            result=result,
            message=message,
            checked_at=self.clock.now(),
            engine=self.engine,
            duration=seconds,
        )

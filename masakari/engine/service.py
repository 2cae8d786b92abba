"""masakari-engine: takes notifications from the database, recovers, and writes the outcome.

This module wires the parts (docs/engine.md, Layout): the intake thread that picks
candidates (:mod:`~masakari.engine.intake`), the workers that claim and recover them
(:mod:`~masakari.engine.workers`, :mod:`~masakari.engine.runner`), the claims' renewals and
the engine's liveness (:mod:`~masakari.engine.heartbeat`), and the periodic tasks
(:mod:`~masakari.engine.periodic`), all listed in :meth:`EngineService.periodic_tasks`.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import uuid
from collections.abc import Sequence
from typing import Protocol

from oslo_config import cfg

from masakari import coordination, exception, notifier
from masakari.compute.nova import NovaClient
from masakari.compute.placement import PlacementClient
from masakari.db.database import Database
from masakari.engine import kdump_sources, locks, periodic, room, tasks, tolerance, wakeup
from masakari.engine.capacity import Capacities
from masakari.engine.clients import LazyPlacement
from masakari.engine.context import InstanceJudge
from masakari.engine.drills import schedule as drill_schedule
from masakari.engine.drills.runner import DrillRunner
from masakari.engine.fence_checks import FenceChecker
from masakari.engine.fencing import HostFencing, KdumpStore
from masakari.engine.heartbeat import Heartbeat, lease_timing
from masakari.engine.hostpoll import HostPoller
from masakari.engine.intake import Intake
from masakari.engine.kdump_sources import KdumpSources
from masakari.engine.outage import Outage
from masakari.engine.ports import Clock, Nova
from masakari.engine.quarantine import HostFailureRecorder, QuarantineRunner
from masakari.engine.recovery.flow import FlowTasks
from masakari.engine.runner import Runner
from masakari.engine.slots import EvacuationSlots
from masakari.engine.workers import Workers
from masakari.fencing import ipmi, kdump
from masakari.metrics import capacity as capacity_metrics
from masakari.metrics import kdump as kdump_metrics

__all__ = ["Addon", "EngineService", "engine_owner", "lease_timing"]

LOG = logging.getLogger(__name__)

# Retries recovered at once on top of [DEFAULT] executor_thread_pool_size new notifications.
DEFAULT_RETRY_WORKERS = 2
# Seconds between two sweeps of the queue (new rows the range scan missed, expired claims).
SWEEP_INTERVAL = 5.0
# Seconds a stopping engine waits for its cancelled recoveries to unwind.
STOP_GRACE = 5.0


def engine_owner(conf: cfg.ConfigOpts) -> str:
    """A fresh id per process: a restarted engine does not inherit its old claims, it takes
    them over once they expire like any other engine would."""
    return f"{conf.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Addon(Protocol):
    """Work the engine runs for another package on its schedule (the failure detector,
    which masakari-engine wires in: this package never imports it)."""

    def tasks(self) -> list[periodic.Task]: ...

    def stop(self) -> None: ...


class EngineService:
    """Everything one masakari-engine process runs. ``start()``, then ``stop()``.

    ``nova`` and ``placement`` are the process's clients (masakari-engine builds them from
    masakari.conf); without ``placement``, Placement on ``nova``'s session at its first use.
    ``fencing``: host fencing, read from [fencing] config_file by masakari-engine (None:
    hosts are not fenced). ``judge_instance``: judges each VM report before its instance is
    restarted (quarantine's storage signal, masakari.signals; None: none).
    ``record_host_failure``: the storage quarantines' fallback (masakari.signals; None: what
    they leave stays).
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        nova: Nova,
        *,
        placement: Capacities | None = None,
        clock: Clock | None = None,
        owner: str | None = None,
        workers: int | None = None,
        retry_workers: int = DEFAULT_RETRY_WORKERS,
        sweep_interval: float = SWEEP_INTERVAL,
        flows: FlowTasks | None = None,
        leadership: coordination.Leadership | None = None,
        addons: Sequence[Addon] = (),
        fencing: HostFencing | None = None,
        judge_instance: InstanceJudge | None = None,
        record_host_failure: HostFailureRecorder | None = None,
    ) -> None:
        self.conf = conf
        self.db = db
        self.nova = nova
        self.clock = clock or Clock()
        self.owner = owner or engine_owner(conf)
        self.addons = list(addons)
        self.sweep_interval = sweep_interval
        self._stopping = threading.Event()
        self._outage = Outage()
        # The reference's engine runs as many notifications at once as oslo.messaging's
        # executor has threads: the same option, with its meaning, bounds this engine.
        self.workers = Workers(workers or conf.executor_thread_pool_size, retry_workers)
        self.heartbeat = Heartbeat(conf, db, self.clock, self.owner, self.workers)
        cap = conf.max_evacuations_in_flight
        self.slots = EvacuationSlots(cap, self.clock) if cap > 0 else None
        self.host_poller = (
            HostPoller(nova, conf.verify_interval, self.clock)
            if conf.evacuation_batched_polling
            else None
        )
        # Read here unless given (masakari-engine reads it first, to stop on a bad file):
        # an engine built with [fencing] config_file set never recovers a host unfenced.
        self.fencing = fencing if fencing is not None else HostFencing.from_conf(conf)
        self.runner = Runner(
            conf=conf,
            db=db,
            nova=nova,
            placement=placement or _placement_beside(nova, conf),
            clock=self.clock,
            flows=flows or tasks.load_flows(conf),
            notifier=notifier.Notifier(conf, "masakari-engine"),
            release=self.heartbeat.release,
            slots=self.slots,
            host_poller=self.host_poller,
            fencing=self.fencing,
            judge_instance=judge_instance,
        )
        placement_used = self.runner.placement
        self.room = (
            room.Room(conf, db, nova, placement_used)
            if isinstance(placement_used, room.PlacementWrites)
            else None
        )
        self.runner.room = self.room
        self.quarantines = (
            QuarantineRunner(
                conf,
                db,
                nova,
                self.clock,
                self.owner,
                self.runner.notifier,
                placement=placement_used,
                record_host_failure=record_host_failure,
            )
            if conf.quarantine.enabled
            else None
        )
        self.intake = Intake(
            conf,
            db,
            self.clock,
            self.workers,
            self.heartbeat,
            self.runner.process,
            self._outage,
            self._stopping,
        )
        self._intake_thread = threading.Thread(
            target=self.intake.run, name="engine-loop", daemon=True
        )
        # Optional backends: a cast that ends the poll's wait early, and the election of the
        # engine that runs the periodic tasks. Neither is needed for correctness.
        self._listener = wakeup.listener(conf, self.wake)
        self.leadership = leadership or coordination.leadership(conf, self.owner)
        self.locks = locks.LockReconciler(
            db, lambda: self.nova, self.clock.now, self.clock.monotonic
        )
        self.kdump_sources = KdumpSources(db, self.fencing)
        self.kdump = _kdump_listener(conf, db, self.owner, self.kdump_sources)
        self.fence_checker = (
            FenceChecker(db, self.fencing, self.clock, self.owner, conf.fencing.kdump_listen)
            if self.fencing is not None
            else None
        )
        # Fire drills ([drill] enabled): none is taken, nor scheduled, unless it is set.
        self.drills = (
            DrillRunner(
                conf,
                db,
                nova,
                self.runner.placement,
                self.fencing,
                self.clock,
                self.owner,
                self.runner.notifier,
            )
            if conf.drill.enabled
            else None
        )
        self.periodic = periodic.Periodic(
            self.periodic_tasks(), self._outage, self.leadership, self.clock
        )

    def periodic_tasks(self) -> list[periodic.Task]:
        """Every task the engine runs on a schedule: the one place to add one."""
        conf = self.conf
        renew = self.heartbeat.renew_interval
        every = [
            # A round with nothing to renew does not reach the database: it proves nothing.
            periodic.Task("renew_claims", renew, self.heartbeat.renew_claims, proves_db_up=False),
            # A task of its own: a slow or locked heartbeat write never delays a renewal.
            periodic.Task("beat", renew, self.heartbeat.beat, at_start=True, proves_db_up=False),
            # Only asks the intake thread to sweep: it proves nothing about the database.
            periodic.Task(
                "sweep", self.sweep_interval, self.intake.request_sweep, proves_db_up=False
            ),
            # Every engine: each lock row is taken by one of them (a conditional update).
            periodic.Task("reconcile_locks", self.locks.interval, self.locks.reconcile),
        ]
        if self.kdump is not None:
            # Every engine: each listens for itself.
            every.append(
                periodic.Task("kdump_sources", kdump_sources.INTERVAL, self.kdump_sources.refresh)
            )
        if self.fence_checker is not None and conf.fencing.check_interval > 0:
            # One engine is enough (with [coordination], the leader): each check is a BMC
            # call per driver of every host.
            every.append(
                periodic.Task(
                    "check_fencing",
                    conf.fencing.check_interval,
                    self.fence_checker.run,
                    at_start=True,
                    leader_only=True,
                )
            )
        if conf.capacity.check_interval > 0:
            # One engine is enough: each round reads Nova and Placement for every host.
            every.append(
                periodic.Task(
                    "failures_tolerated",
                    conf.capacity.check_interval,
                    self.failures_tolerated,
                    at_start=True,
                    leader_only=True,
                )
            )
        if self.quarantines is not None:
            # Every engine: each quarantine is claimed by one of them.
            every.append(
                periodic.Task("quarantines", conf.quarantine.poll_interval, self.quarantines.poll)
            )
        if self.room is not None:
            # One engine: with hold_room off it only reads whether room is still held (to
            # give it back), and never touches Placement once none is.
            every.append(
                periodic.Task(
                    "hold_room",
                    conf.capacity.hold_interval,
                    self.hold_room,
                    at_start=True,
                    leader_only=True,
                )
            )
        if self.drills is not None:
            # Every engine looks (each drill is claimed by one, a conditional update).
            every += [
                periodic.Task("drills", conf.drill.poll_interval, self.drills.poll),
                periodic.Task(
                    "renew_drill",
                    self.drills.renew_interval,
                    self.drills.renew,
                    proves_db_up=False,
                ),
            ]
            if conf.drill.schedule_interval > 0:
                every.append(
                    periodic.Task(
                        "schedule_drills",
                        conf.drill.schedule_interval,
                        self.schedule_drills,
                        leader_only=True,
                    )
                )
        if conf.periodic_enable:
            every += [
                periodic.Task(
                    "process_unfinished_notifications",
                    conf.process_unfinished_notifications_interval,
                    self.intake.process_unfinished_notifications,
                    leader_only=True,
                ),
                periodic.Task(
                    "check_expired_notifications",
                    conf.check_expired_notifications_interval,
                    functools.partial(
                        periodic.check_expired_notifications,
                        conf,
                        self.db,
                        self.clock,
                        self.workers,
                        self._stopping,
                    ),
                    leader_only=True,
                ),
            ]
        return every + [task for addon in self.addons for task in addon.tasks()]

    def hold_room(self) -> None:
        """Every segment's failover room held, or given back ([capacity] hold_room)."""
        assert self.room is not None
        passes = self.room.hold_all()
        capacity_metrics.room_held(passes)

    def failures_tolerated(self) -> None:
        """Every segment's failures tolerated, into the metrics ([capacity] check_interval)."""
        found = tolerance.of_segments(self.conf, self.db, self.nova, self.runner.placement)
        capacity_metrics.failures_tolerated(found)

    def schedule_drills(self) -> None:
        """A drill on one spare of each quiet segment ([drill] schedule_interval)."""
        drill_schedule.schedule(self.conf, self.db, self.nova, self.clock)

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        LOG.info("masakari-engine %s starting", self.owner)
        if self.fencing is not None:
            self.fencing.say_unbuildable()
        if self.kdump is not None:
            self.kdump.start()  # first: an address that cannot be bound stops the engine here
            self._kdump_sources_now()
        if self.fencing is not None and self.fencing.uses_ipmi:
            # Its start-up (a Python with pyghmi) is then off the first fence's path.
            ipmi.SESSIONS.start()
        if self.host_poller is not None:
            self.host_poller.start()
        self._intake_thread.start()
        self.periodic.start()
        self.leadership.start()
        if self._listener is not None:
            self._listener.start()

    def _kdump_sources_now(self) -> None:
        """The listener's sources before the first message, if the database answers (the
        periodic task tries again otherwise)."""
        try:
            self.kdump_sources.refresh()
        except Exception as exc:
            LOG.warning("fence_kdump listener: its sources not read yet: %s", exc)

    def wake(self) -> None:
        """Look in the database now rather than at the end of the poll interval."""
        self.intake.wake()

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop taking work, cancel the recoveries, release what did not finish."""
        LOG.info("masakari-engine %s stopping", self.owner)
        self._stopping.set()
        if self.quarantines is not None:
            self.quarantines.stopping.set()
        self.intake.wake()
        if self._listener is not None:
            self._listener.stop()
        if self.kdump is not None:
            self.kdump.stop()
        self.leadership.stop()
        self.periodic.stop(grace)
        for addon in self.addons:
            addon.stop()
        if self.drills is not None:
            self.drills.stop(grace)
        if self._intake_thread.is_alive():
            self._intake_thread.join(timeout=grace)
        left = self.workers.stop(grace)
        if left:
            self.heartbeat.release(left)
        if self.host_poller is not None:
            self.host_poller.stop()
        # After the workers: a recovery still fencing has had its grace. The worker is the
        # process's (not this engine's): another engine of the process starts a new one.
        ipmi.SESSIONS.stop()
        self.heartbeat.forget()
        LOG.info("masakari-engine %s stopped", self.owner)


def _kdump_listener(
    conf: cfg.ConfigOpts, db: Database, owner: str, sources: KdumpSources
) -> kdump.KdumpListener | None:
    """fence_kdump's messages received on [fencing] kdump_listen from the fencing file's
    kdump addresses, stored for every engine."""
    if not conf.fencing.kdump_listen:
        return None
    try:
        host, port = kdump.parse_listen(conf.fencing.kdump_listen)
    except ValueError as exc:
        raise exception.InvalidConfiguration(message=f"[fencing] kdump_listen: {exc}") from exc
    return kdump.KdumpListener(
        KdumpStore(db, owner),
        host,
        port,
        allows=sources.allows,
        counted=kdump_metrics.datagram,
    )


def _placement_beside(nova: Nova, conf: cfg.ConfigOpts) -> Capacities:
    """Placement on the session of a Nova client (an engine given only its Nova client)."""
    if not isinstance(nova, NovaClient):
        raise TypeError("EngineService needs placement= with a Nova that is not a NovaClient")
    return LazyPlacement(lambda: PlacementClient.beside(nova, conf))

"""Running quarantines ([quarantine]): a degraded host disabled in Nova with a reason (never
forced down, never fenced), put on maintenance in masakari, and its instances
live-migrated away, a few at a time, in the recovery order and scope rules of host failures.

Every engine looks for work every ``poll_interval`` and claims one quarantine at a time
(masakari.db.quarantines.claim), renewing its claim while it runs; an engine that dies
leaves a claim that runs out, and the next engine takes the quarantine over from what the
database and Nova hold: migrations already sent are followed, never sent again. It stops
sending at an operator's cancel and when the host fails meanwhile (a host failure
notification for it): the host failure's recovery then takes the instances still there.

A quarantine asked for by a lost storage path (source ``storage``) that leaves instances
on the host falls back, with ``[quarantine] storage_loss_fallback``, to a host failure of
the host when the segment has the room for them (the recovery plan of the host places
every one): they hang on the lost path, and fencing the host and evacuating them is the
only recovery left. Without that room, nothing is fenced: they are left, and said so.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import exception, notifier
from masakari.compute import retry
from masakari.compute.servers import FAILED, SUCCEEDED, Server, compute_service
from masakari.db import hosts as hosts_db
from masakari.db import quarantines as q
from masakari.db.database import Database
from masakari.db.models import Quarantine, QuarantineMove, utcnow
from masakari.engine import capacity, plan, selection
from masakari.engine.capacity import Capacities
from masakari.engine.ports import Clock, Nova
from masakari.metrics import quarantine as quarantine_metrics

LOG = logging.getLogger(__name__)

# Live migration needs a running (or paused) instance; the others stay, said so.
MIGRATABLE = ("ACTIVE", "PAUSED")
# Nova's clock against ours, as for evacuations (masakari.engine.nova_effects).
CLOCK_SKEW = datetime.timedelta(seconds=5)
# A migration Nova has not recorded this long after an ambiguous send was not made.
UNSEEN_GRACE = datetime.timedelta(seconds=60)
# Claims last this many poll intervals without a renewal.
LEASE_POLLS = 6

# Records a host failure of the host (its name) for the storage fallback, through the intake
# (masakari.signals.storage_loss.record_host_failure; the engine must not reach masakari.ha),
# calling the fence first in its transaction; returns its outcome and what it did.
HostFailureRecorder = Callable[[str, Callable[[Any], None]], tuple[str, str]]


class Stop(Exception):
    """The run ends without sending more: ``status`` says why."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclasses.dataclass
class QuarantineRunner:
    conf: cfg.ConfigOpts
    db: Database
    nova: Nova
    clock: Clock
    owner: str
    notifier: notifier.Notifier
    max_running: int = 2
    # Both needed for the storage fallback; without either, what stays is left.
    placement: Capacities | None = None
    record_host_failure: HostFailureRecorder | None = None
    # Set when the engine stops: runs end at their next look, their claims run out, and
    # another engine takes them over.
    stopping: threading.Event = dataclasses.field(default_factory=threading.Event)
    _running: set[str] = dataclasses.field(default_factory=set)
    # When each running quarantine's claim was last renewed (monotonic seconds).
    _renewed: dict[str, float] = dataclasses.field(default_factory=dict)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    @property
    def lease(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self.conf.quarantine.poll_interval * LEASE_POLLS)

    def poll(self) -> None:
        """The periodic task: claim what is waiting, each run on a thread of its own."""
        while True:
            with self._lock:
                if len(self._running) >= self.max_running:
                    return
            now = self.clock.now()
            with self.db.writer() as session:
                row = q.claim(session, self.owner, now, now + self.lease)
                if row is not None:
                    session.expunge(row)
            if row is None:
                return
            with self._lock:
                self._running.add(row.uuid)
            threading.Thread(
                target=self._run_and_forget, args=(row,), name=f"quarantine-{row.host_name}"
            ).start()

    def _run_and_forget(self, row: Quarantine) -> None:
        try:
            self.run(row)
        except Exception:
            LOG.exception("Quarantine %s of host %s stopped", row.uuid, row.host_name)
        finally:
            with self._lock:
                self._running.discard(row.uuid)
                self._renewed.pop(row.uuid, None)

    # --- one quarantine ---------------------------------------------------------------------

    def run(self, row: Quarantine) -> str:
        """Run a claimed quarantine to its end; its status."""
        self._emit("quarantine.start", row)
        started = self.clock.monotonic()
        try:
            self._take_out_of_service(row)
            self._migrate(row)
            status, detail = self._outcome(row.uuid)
            if status in (q.PARTIAL, q.FAILED) and row.source == q.STORAGE:
                status, detail = self._fall_back(row, status, detail)
        except Stop as stop:
            if stop.status == q.RUNNING:
                return q.RUNNING  # not ours to end: the claim runs out, an engine goes on
            status, detail = stop.status, stop.detail
        except exception.NovaError as exc:
            # Nova failed past the retries: the claim runs out and an engine tries again.
            LOG.warning("Quarantine of host %s: %s; tried again later", row.host_name, exc)
            self._note(row.uuid, f"Nova failed: {exc}; tried again")
            return q.RUNNING
        with self.db.writer() as session:
            ended = q.set_status(
                session,
                row.uuid,
                status,
                (q.RUNNING, q.CANCELLED),
                detail=detail,
                ended_at=utcnow(),
                owner=None,
                lease_until=None,
            )
        if ended:
            quarantine_metrics.ended(row.source, status, self.clock.monotonic() - started)
            LOG.warning("Quarantine of host %s ended %s: %s", row.host_name, status, detail)
            with self.db.reader() as session:
                final = q.get(session, row.uuid)
                if final is not None:
                    session.expunge(final)
            self._emit("quarantine.end", final or row)
        return status

    def _take_out_of_service(self, row: Quarantine) -> None:
        service = compute_service(self.nova.find_compute_services(row.host_name), row.host_name)
        if service.status != "disabled":
            reason = f"{self.conf.quarantine.disable_reason}: {row.reason}"[:255]
            try:
                self.nova.disable_service(service.id, reason)
            except exception.NovaError as exc:
                if not retry.ambiguous(exc):
                    raise
                again = compute_service(
                    self.nova.find_compute_services(row.host_name), row.host_name
                )
                if again.status != "disabled":
                    raise
        with self.db.writer() as session:
            hosts_db.put_on_maintenance(session, row.host_uuid, unreserve=False)
        self._note(row.uuid, f"Disabled nova-compute on {row.host_name}, on maintenance")

    def _migrate(self, row: Quarantine) -> None:
        host = row.host_name
        listed = self.nova.list_servers_on_host(host)
        chosen = selection.select(self.conf, self.nova, host, listed, None)
        servers = {s.id: s for s in (Server.of(x) for x in listed)}
        with self.db.writer() as session:
            known = {m.server_id: m.status for m in q.moves(session, row.uuid)}
            for inst, why in chosen.left():
                if inst.id not in known:
                    q.move(
                        session,
                        row.uuid,
                        inst.id,
                        _name(servers, inst.id),
                        status=q.LEFT,
                        detail=why,
                    )
            for inst in chosen.moving():
                if inst.id in known:
                    continue
                status = (servers[inst.id].status or "") if inst.id in servers else ""
                if status.upper() in MIGRATABLE:
                    q.move(session, row.uuid, inst.id, _name(servers, inst.id))
                else:
                    q.move(
                        session,
                        row.uuid,
                        inst.id,
                        _name(servers, inst.id),
                        status=q.LEFT,
                        detail=f"a live migration needs it ACTIVE or PAUSED; it is {status}",
                    )
        interval = self.conf.quarantine.poll_interval
        while True:
            self._check(row)
            moves = self._moves(row.uuid)
            in_flight = [m for m in moves if m.status == q.MIGRATING]
            pending = [m for m in moves if m.status == q.PENDING]
            for m in in_flight:
                self._follow(row, m)
            room = self.conf.quarantine.max_concurrent_migrations - len(
                [m for m in self._moves(row.uuid) if m.status == q.MIGRATING]
            )
            for m in pending[: max(0, room)]:
                self._send(row, m)
            if not any(m.status in (q.PENDING, q.MIGRATING) for m in self._moves(row.uuid)):
                return
            self.clock.sleep(min(interval, 1.0), self.stopping)

    def _check(self, row: Quarantine) -> None:
        """Renew the claim when a third of it has passed (a write), else read that it is
        still this engine's; stop at a cancel, a host failure or a lost claim."""
        now, tick = self.clock.now(), self.clock.monotonic()
        due = tick - self._renewed.get(row.uuid, -1e18) >= self.lease.total_seconds() / 3
        with self.db.writer() if due else self.db.reader() as session:
            if due:
                renewed = q.renew(session, row.uuid, self.owner, now + self.lease)
                if renewed:
                    self._renewed[row.uuid] = tick
            current = q.get(session, row.uuid)
            if not due:
                renewed = current is not None and current.owner == self.owner
            started = current.started_at if current is not None else None
            failure = q.recovering(session, row.host_uuid) or q.failed_since(
                session, row.host_uuid, started
            )
        if current is not None and current.status == q.CANCELLED:
            self._leave_pending(row, "cancelled by an operator")
            raise Stop(q.CANCELLED, "Cancelled: no more migrations sent.")
        if not renewed or self.stopping.is_set():
            raise Stop(q.RUNNING, "claim lost or engine stopping")
        if failure is not None:
            self._leave_pending(
                row, f"the host failed (notification {failure}): its recovery evacuates it"
            )
            raise Stop(
                q.SUPERSEDED,
                f"Host {row.host_name} failed meanwhile (notification {failure}): its "
                "recovery takes the instances still there.",
            )

    def _send(self, row: Quarantine, move: QuarantineMove) -> None:
        block: Any = {"auto": "auto", "true": True, "false": False}[
            self.conf.quarantine.block_migration
        ]
        sent = self.clock.now()
        self._set(row, move, status=q.MIGRATING, sent_at=sent, detail=None)
        try:
            self.nova.live_migrate(move.server_id, None, block)
        except exception.NovaError as exc:
            if retry.ambiguous(exc):
                # Maybe sent: the follow-up reads Nova's migrations and decides.
                self._set(row, move, detail=f"sent, answer lost ({exc})")
                return
            self._set(row, move, status=q.MOVE_FAILED, detail=str(exc), ended_at=self.clock.now())
            quarantine_metrics.migration("refused")

    def _follow(self, row: Quarantine, move: QuarantineMove) -> None:
        """Where the instance is now. Nova's migration record says when a live migration is
        over (the server reaches its destination a moment before the record completes);
        an instance that left the host without this live migration was evacuated."""
        server = self.nova.get_server(move.server_id)
        sent = move.sent_at or self.clock.now()
        made = [
            m
            for m in self.nova.list_migrations(move.server_id)
            if m.created_at is None or m.created_at >= sent - CLOCK_SKEW
        ]
        newest = made[0] if made else None
        elsewhere = bool(server.host) and server.host != row.host_name and not server.task_state
        now = self.clock.now()
        if newest is not None and newest.outcome == SUCCEEDED:
            target = newest.dest_compute or server.host
            self._set(row, move, status=q.MOVED, target=target, ended_at=now)
            quarantine_metrics.migration("moved", (now - sent).total_seconds())
        elif elsewhere and (newest is None or newest.outcome == FAILED):
            # Moved, not by this live migration: the host failure's evacuation.
            detail = f"moved to {server.host} by another (an evacuation)"
            self._set(row, move, status=q.LEFT, detail=detail, ended_at=now)
        elif newest is not None and newest.outcome == FAILED and not server.task_state:
            detail = (
                f"Nova's live migration ended {newest.status}; the instance stays on "
                f"{row.host_name}"
            )
            self._set(row, move, status=q.MOVE_FAILED, detail=detail, ended_at=now)
            quarantine_metrics.migration("failed")
        elif newest is None and not server.task_state and now - sent > UNSEEN_GRACE:
            detail = "Nova recorded no live migration for it"
            self._set(row, move, status=q.MOVE_FAILED, detail=detail, ended_at=now)
            quarantine_metrics.migration("failed")
        elif (now - sent).total_seconds() > self.conf.quarantine.migration_timeout:
            detail = "not moved within [quarantine] migration_timeout"
            self._set(row, move, status=q.LEFT, detail=detail, ended_at=now)
            quarantine_metrics.migration("timeout")

    def _fall_back(self, row: Quarantine, status: str, detail: str) -> tuple[str, str]:
        """A storage quarantine's instances that did not move: a host failure when the room
        for every one of them is there, else left (``status`` and ``detail`` kept, the
        reason added)."""
        if not self.conf.quarantine.storage_loss_fallback:
            return status, detail
        if self.placement is None or self.record_host_failure is None:
            return status, f"{detail} Not fenced: this engine cannot judge the room."
        self._check(row)
        try:
            found = plan.for_host(
                self.conf,
                self.db,
                self.nova,
                capacity.unheld(self.db, self.placement),
                row.host_name,
                row.segment_uuid,
            )
        except exception.NovaError as exc:
            quarantine_metrics.fallback("unknown")
            return status, f"{detail} Not fenced: the room for them is not known ({exc})."
        if not found.steps:
            return status, detail
        homeless = [step for step in found.steps if step.fits is not True]
        if homeless:
            quarantine_metrics.fallback("no_room")
            why = homeless[0].reason or "capacity not known"
            return status, (
                f"{detail} Not fenced: the recovery of the host would leave {len(homeless)} of "
                f"the {len(found.steps)} instance(s) still there behind ({why})."
            )

        def fence(session: Any) -> None:
            # Recorded only while the run is still this engine's.
            until = self.clock.now() + self.lease
            if not q.renew(session, row.uuid, self.owner, until):
                raise Stop(q.RUNNING, "claim lost")

        outcome, what = self.record_host_failure(row.host_name, fence)
        quarantine_metrics.fallback(outcome)
        if outcome not in ("recorded", "duplicate"):
            return status, f"{detail} Not fenced: {what}."
        LOG.warning(
            "Quarantine of host %s: %d instance(s) could not be live-migrated off its lost "
            "storage path: %s",
            row.host_name,
            len(found.steps),
            what,
        )
        return q.SUPERSEDED, (
            f"{detail} The room for the {len(found.steps)} instance(s) still there is there: "
            f"{what}; the host is fenced and they are evacuated."
        )

    def _outcome(self, uuid: str) -> tuple[str, str]:
        moves = self._moves(uuid)
        moved = [m for m in moves if m.status == q.MOVED]
        failed = [m for m in moves if m.status == q.MOVE_FAILED]
        left = [m for m in moves if m.status == q.LEFT]
        said = f"{len(moved)} moved, {len(failed)} failed, {len(left)} left"
        if len(moved) == len(moves):
            return q.DONE, f"Every instance moved ({said})."
        if not moved and failed:
            return q.FAILED, f"No instance moved ({said})."
        return q.PARTIAL, f"Some instances stay on the host ({said})."

    # --- records ----------------------------------------------------------------------------

    def _moves(self, uuid: str) -> list[QuarantineMove]:
        with self.db.reader() as session:
            found = q.moves(session, uuid)
            for m in found:
                session.expunge(m)
        return found

    def _set(self, row: Quarantine, move: QuarantineMove, **values: Any) -> None:
        with self.db.writer() as session:
            q.move(session, row.uuid, move.server_id, move.server_name, **values)
        for key, value in values.items():
            setattr(move, key, value)

    def _leave_pending(self, row: Quarantine, why: str) -> None:
        for m in self._moves(row.uuid):
            if m.status == q.PENDING:
                self._set(row, m, status=q.LEFT, detail=why, ended_at=self.clock.now())

    def _note(self, uuid: str, detail: str) -> None:
        with self.db.writer() as session:
            q.note(session, uuid, detail)

    def _emit(self, event: str, row: Quarantine) -> None:
        if self.notifier.enabled:
            self.notifier.emit(event, notifier.quarantine_payload(row))


def _name(servers: dict[str, Server], server_id: str) -> str:
    found = servers.get(server_id)
    return found.name if found is not None else ""

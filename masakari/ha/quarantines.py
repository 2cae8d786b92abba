"""Quarantines as the API, masakari-manage and the degradation signals ask for them: the
request with its gate, start past the gate, cancel, release, a signal's end, and the view.

An engine runs them (masakari.engine.quarantine); docs/operations.md, Quarantine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg
from oslo_utils import uuidutils
from sqlalchemy import orm

from masakari import exception
from masakari.db import hosts as hosts_db
from masakari.db import quarantines as q
from masakari.db.database import Database, transaction
from masakari.db.models import Host, Quarantine, QuarantineMove, utcnow
from masakari.db.quarantines import (  # noqa: F401 (the sources, for its callers)
    ALERTMANAGER,
    OPERATOR,
    REDFISH,
    SOURCES,
    STORAGE,
)
from masakari.ha.notifications import INTAKE_RACES

LOG = logging.getLogger(__name__)


class QuarantineOff(exception.Conflict):
    msg_fmt = "Quarantine is off ([quarantine] enabled = false)."


class QuarantineNotFound(exception.NotFound):
    msg_fmt = "No quarantine with id %(id)s."


class QuarantineConflict(exception.Conflict):
    msg_fmt = "Quarantine %(id)s is %(status)s: it cannot be %(verb)s."


class HostInRecovery(exception.Conflict):
    msg_fmt = (
        "Host %(host)s has a host failure being recovered (notification %(notification)s): "
        "its recovery moves its instances."
    )


def limit(conf: cfg.ConfigOpts, hosts: int) -> int:
    """How many of a segment's ``hosts`` may be in quarantine at once."""
    options = conf.quarantine
    share = hosts * options.max_percent // 100
    return max(1, min(options.max_hosts_per_segment, share))


def request(
    conf: cfg.ConfigOpts,
    db: Database,
    host: str,
    source: str,
    reason: str,
    signal: str | None = None,
    fence: Callable[[orm.Session], None] | None = None,
) -> tuple[Quarantine, bool]:
    """Quarantine ``host`` (uuid or name). Returns the quarantine and whether it is new: a
    host already in quarantine keeps its own (a repeated alert changes nothing). Past the
    segment's limit the new one is ``held`` for an operator. HostNotFound for an unknown
    host; HostInRecovery while its host failure is recovered; QuarantineOff when off.
    ``fence``: called first in the transaction, raises to refuse (an engine's claim on the
    notification that asked, masakari.engine.storage_loss)."""
    if not conf.quarantine.enabled:
        raise QuarantineOff()

    def record(session: orm.Session) -> tuple[Quarantine, bool]:
        if fence is not None:
            fence(session)
        row = _host(session, host)
        q.guard(session, row.failover_segment_id)
        existing = q.open_of_host(session, row.uuid)
        if existing is not None:
            return existing, False
        failure = q.recovering(session, row.uuid)
        if failure is not None:
            raise HostInRecovery(host=row.name, notification=failure)
        hosts = q.hosts_in_segment(session, row.failover_segment_id)
        allowed = limit(conf, hosts)
        busy = q.open_in_segment(session, row.failover_segment_id)
        held = busy >= allowed
        made = q.add(
            session,
            Quarantine(
                uuid=uuidutils.generate_uuid(),
                host_uuid=row.uuid,
                host_name=row.name,
                segment_uuid=row.failover_segment_id,
                source=source,
                reason=reason[:4000],
                signal=signal,
                status=q.HELD if held else q.REQUESTED,
                hold_reason=(
                    f"{busy} of the segment's {hosts} hosts already in quarantine (at most "
                    f"{allowed}: [quarantine] max_hosts_per_segment, max_percent): an "
                    "operator starts or cancels it"
                    if held
                    else None
                ),
            ),
        )
        return made, True

    found, new = transaction(db, record, policy=INTAKE_RACES)
    if new:
        LOG.warning(
            "Host %s %s for quarantine (%s): %s",
            found.host_name,
            "held" if found.status == q.HELD else "requested",
            source,
            reason,
        )
    return found, new


def start(db: Database, uuid: str) -> Quarantine:
    """An operator's word past the gate: a held quarantine is run."""
    return _change(db, uuid, q.REQUESTED, (q.HELD,), "started", hold_reason=None)


def cancel(db: Database, uuid: str) -> Quarantine:
    """Not started: withdrawn, nothing was changed. Running: the engine sends no more
    migrations (those in flight complete); the host stays disabled and on maintenance until
    released."""
    with db.reader() as session:
        row = _get(session, uuid)
    if row.status in q.WAITING:
        return _change(db, uuid, q.WITHDRAWN, q.WAITING, "cancelled", ended_at=utcnow())
    return _change(db, uuid, q.CANCELLED, (q.RUNNING,), "cancelled")


def release(conf: cfg.ConfigOpts, db: Database, nova: Any, uuid: str) -> Quarantine:
    """Return an ended quarantine's host to service: its nova-compute enabled (when the
    quarantine's reason still disables it: an operator's own disable is left), masakari's
    maintenance cleared."""
    with db.reader() as session:
        row = _get(session, uuid)
        if row.status not in q.ENDED:
            raise QuarantineConflict(id=uuid, status=row.status, verb="released")
        host_name, host_uuid = row.host_name, row.host_uuid
    from masakari.compute.servers import compute_service

    service = compute_service(nova.find_compute_services(host_name), host_name)
    reason = service.disabled_reason or ""
    if service.status == "disabled" and reason.startswith(conf.quarantine.disable_reason):
        nova.enable_service(service.id)
    with db.writer() as session:
        hosts_db.clear_maintenance(session, host_uuid)
    return _change(db, uuid, q.RELEASED, q.ENDED, "released", owner=None)


def signal_ended(db: Database, signal: str) -> list[Quarantine]:
    """The signal that asked for quarantines is over (an alert resolved): those not started
    are withdrawn; the others are marked (an operator releases the host once checked)."""
    now = utcnow()
    with db.writer() as session:
        rows = list(
            session.scalars(
                sa.select(Quarantine).where(
                    Quarantine.signal == signal, Quarantine.status.in_(q.OPEN)
                )
            )
        )
        for row in rows:
            if row.status in q.WAITING:
                row.status, row.ended_at = q.WITHDRAWN, now
            row.signal_ended_at = row.updated_at = now
        for row in rows:
            session.flush()
            session.refresh(row)
            session.expunge(row)
    return rows


def open_signals(db: Database, prefix: str) -> set[str]:
    """The signals starting with ``prefix`` that asked for quarantines still open, and did
    not end yet."""
    with db.reader() as session:
        return set(
            session.scalars(
                sa.select(Quarantine.signal).where(
                    Quarantine.signal.startswith(prefix, autoescape=True),
                    Quarantine.status.in_(q.OPEN),
                    Quarantine.signal_ended_at.is_(None),
                )
            )
        )


def get(db: Database, uuid: str) -> tuple[Quarantine, list[QuarantineMove]]:
    with db.reader() as session:
        row = _get(session, uuid)
        moves = q.moves(session, uuid)
        for item in (row, *moves):
            session.expunge(item)
    return row, moves


def list_(db: Database, statuses: list[str] | None = None) -> list[Quarantine]:
    with db.reader() as session:
        rows = q.list_(session, statuses)
        for row in rows:
            session.expunge(row)
    return rows


def view(row: Quarantine, moves: list[QuarantineMove] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.uuid,
        "host": row.host_name,
        "host_uuid": row.host_uuid,
        "segment_uuid": row.segment_uuid,
        "source": row.source,
        "reason": row.reason,
        "status": row.status,
        "hold_reason": row.hold_reason,
        "detail": row.detail,
        "signal_ended_at": _iso(row.signal_ended_at),
        "created_at": _iso(row.created_at),
        "updated_at": _iso(row.updated_at),
        "started_at": _iso(row.started_at),
        "ended_at": _iso(row.ended_at),
    }
    if moves is not None:
        out["instances"] = [
            {
                "instance_id": m.server_id,
                "name": m.server_name,
                "status": m.status,
                "target": m.target,
                "detail": m.detail,
                "sent_at": _iso(m.sent_at),
                "ended_at": _iso(m.ended_at),
            }
            for m in moves
        ]
    return out


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def _host(session: orm.Session, host: str) -> Host:
    found = session.scalar(
        sa.select(Host).where(sa.or_(Host.uuid == host, Host.name == host), Host.deleted == 0)
    )
    if found is None:
        raise exception.HostNotFound(id=host)
    return found


def _get(session: orm.Session, uuid: str) -> Quarantine:
    row = q.get(session, uuid)
    if row is None:
        raise QuarantineNotFound(id=uuid)
    return row


def _change(
    db: Database, uuid: str, status: str, expected: tuple[str, ...], verb: str, **values: Any
) -> Quarantine:
    with db.writer() as session:
        row = _get(session, uuid)
        if not q.set_status(session, uuid, status, expected, **values):
            raise QuarantineConflict(id=uuid, status=row.status, verb=verb)
        session.expire(row)
        row = _get(session, uuid)
        session.expunge(row)
    return row

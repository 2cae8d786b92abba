"""A quarantine as a timeline: its phases (requested, taken out of service, live migrations)
and one bar per instance, from its live migration's request to its end, drawn by the
recovery timeline's page (masakari.timeline.page) and printed by its text."""

from __future__ import annotations

import datetime

from sqlalchemy import orm

from masakari.db import quarantines as q
from masakari.db.models import Quarantine, QuarantineMove
from masakari.ha.quarantines import QuarantineNotFound
from masakari.timeline.model import Bar, Timeline


def load(session: orm.Session, uuid: str) -> Timeline:
    row = q.get(session, uuid)
    if row is None:
        raise QuarantineNotFound(id=uuid)
    moves = q.moves(session, uuid)
    selected = _selected_at(row, moves)
    return Timeline(
        notification_uuid=row.uuid,
        type=f"quarantine of {row.host_name} ({row.source}: {row.reason})",
        status=row.status,
        generated_time=row.created_at,
        created_at=row.created_at,
        updated_at=row.ended_at or row.updated_at,
        tasks=_phases(row, moves, selected),
        instances=[_instance(row, m, selected) for m in moves],
        failure_reason=row.detail if row.status in (q.FAILED, q.PARTIAL) else None,
        hold_reason=row.hold_reason if row.status == q.HELD else None,
        title="Quarantine",
    )


def _phases(
    row: Quarantine, moves: list[QuarantineMove], selected: datetime.datetime | None
) -> list[Bar]:
    """What the engine did, in order. The engine takes the host out of service between its
    claim and its first live migration: that phase ends at ``selected``, the first request
    sent (the run's end when none was)."""
    waited = row.started_at or (row.updated_at if row.status == q.WITHDRAWN else None)
    waiting = {q.HELD: "held", q.WITHDRAWN: "withdrawn"}.get(row.status, "pending")
    bars = [
        Bar(
            "task",
            "requested",
            "done" if row.started_at is not None else waiting,
            row.created_at,
            waited,
            detail=row.hold_reason or "",
            ident="requested",
        )
    ]
    if row.started_at is None:
        return bars
    sent = any(m.sent_at is not None for m in moves)
    running = row.status == q.RUNNING
    bars.append(
        Bar(
            "task",
            "out of service",
            "done" if selected is not None else "running",
            row.started_at,
            selected,
            detail=f"{row.host_name} disabled in Nova, on maintenance",
            ident="out-of-service",
        )
    )
    if sent:
        bars.append(
            Bar(
                "task",
                "live migrations",
                "running" if running else row.status,
                selected,
                None if running else row.ended_at,
                detail=row.detail or "",
                ident="migrations",
            )
        )
    if row.status == q.RELEASED or row.signal_ended_at is not None:
        bars.append(
            Bar(
                "task",
                "released" if row.status == q.RELEASED else "signal ended",
                "done",
                row.updated_at if row.status == q.RELEASED else row.signal_ended_at,
                row.updated_at if row.status == q.RELEASED else row.signal_ended_at,
                ident="end",
            )
        )
    return bars


def _selected_at(row: Quarantine, moves: list[QuarantineMove]) -> datetime.datetime | None:
    """About when the engine chose what moves: its first request, else the run's end."""
    sent = [m.sent_at for m in moves if m.sent_at is not None]
    return min(sent) if sent else row.ended_at


def _instance(row: Quarantine, move: QuarantineMove, selected: datetime.datetime | None) -> Bar:
    # One never sent is a mark when it was left (chosen, or at a cancel or a host failure).
    start = move.sent_at or move.ended_at or selected
    end = move.ended_at if move.sent_at is not None else start
    return Bar(
        "instance",
        move.server_name or move.server_id,
        move.status,
        start,
        end,
        detail=move.detail or "",
        source=row.host_name,
        destination=move.target,
        ident=move.server_id,
    )

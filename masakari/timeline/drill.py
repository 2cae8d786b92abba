"""A fire drill as a timeline: one bar per phase and per canary evacuated, drawn by the
recovery timeline's page (masakari.timeline.page)."""

from __future__ import annotations

import datetime

from sqlalchemy import orm

from masakari import exception
from masakari.db import drills as drills_db
from masakari.timeline.model import Bar, Timeline


def load(session: orm.Session, drill_uuid: str) -> Timeline:
    row = drills_db.get(session, drill_uuid)
    if row is None:
        raise exception.DrillNotFound(uuid=drill_uuid, segment="any")
    phases = drills_db.phases(session, drill_uuid)
    tasks = [
        Bar(
            "task",
            p.name,
            p.result,
            p.started_at,
            p.ended_at,
            detail=(p.detail or "")
            + ("" if p.predicted_seconds is None else f" (predicted {p.predicted_seconds:g} s)"),
            ident=str(p.id),
        )
        for p in phases
    ]
    report = drills_db.report_of(row)
    evacuated = next((p for p in phases if p.name == "evacuate"), None)
    instances = []
    for canary in report.get("canaries") or []:
        start = evacuated.started_at if evacuated else None
        seconds = canary.get("seconds")
        end = None
        if start is not None and seconds is not None:
            end = start + datetime.timedelta(seconds=seconds)
        instances.append(
            Bar(
                "instance",
                canary.get("name") or canary["id"],
                "ok" if canary.get("landed") else "failed",
                start,
                end,
                detail=f"plan: {canary.get('predicted')}",
                source=row.host_name,
                destination=canary.get("landed"),
                ident=canary["id"],
            )
        )
    return Timeline(
        notification_uuid=row.uuid,
        type=f"fire drill of {row.host_name} ({row.requested_by})",
        status=row.status,
        generated_time=row.created_at,
        created_at=row.created_at,
        updated_at=row.ended_at,
        tasks=tasks,
        instances=instances,
        failure_reason=row.failure_reason,
        title="Fire drill",
    )

"""A recovery's timeline for a terminal."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from masakari import terminal
from masakari.timeline.model import Timeline


def when(value: datetime.datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if value else "-"


def lasted(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def text(timeline: Timeline) -> str:
    """The timeline for a terminal; every value is made inert (masakari.terminal): instance
    names are the tenants', messages are Nova's."""
    t = timeline
    c = terminal.clean
    lines = [
        f"notification {c(t.notification_uuid)}  type {c(t.type)}  status {c(t.status)}",
        f"reported {when(t.generated_time)}  received {when(t.created_at)}"
        f"  last change {when(t.updated_at)}",
        *([f"failure reason: {c(t.failure_reason)}"] if t.failure_reason is not None else []),
        *([f"held: {c(t.hold_reason)}"] if t.hold_reason is not None else []),
    ]
    if t.evidence:
        lines += ["", "evidence:"]
        lines += _table(
            [("time", "kind", "source", "says", "detail")]
            + [
                (when(b.start), b.ident, b.label.split(": ", 1)[1], b.result, b.detail)
                for b in t.evidence
            ]
        )
    lines += ["", "tasks:"]
    table: list[tuple[str, ...]] = [("task", "result", "start", "end", "duration", "last message")]
    table += [
        (b.label, b.result, when(b.start), when(b.end), lasted(b.seconds), b.detail)
        for b in t.tasks
    ]
    lines += _table(table) if t.tasks else ["  (none)"]
    if t.fence_attempts:
        lines += ["", "host fencing:"]
        table = [("#", "driver", "action", "result", "start", "duration", "message")]
        table += [
            (
                str(a.position),
                a.driver,
                a.action,
                a.result,
                a.started_at.isoformat(sep=" ", timespec="milliseconds"),
                "-" if a.duration is None else f"{a.duration:.2f}s",
                a.message or "",
            )
            for a in t.fence_attempts
        ]
        lines += _table(table)
    lines += ["", "instances:"]
    table = [("instance", "source", "destination", "result", "start", "end", "duration")]
    table += [
        (
            f"{b.label} ({b.ident})",
            b.source or "-",
            b.destination or "-",
            b.result,
            when(b.start),
            when(b.end),
            lasted(b.seconds),
        )
        for b in t.instances
    ]
    lines += _table(table) if t.instances else ["  (none)"]
    return "\n".join(lines) + "\n"


def _table(cells: Sequence[tuple[str, ...]]) -> list[str]:
    rows = [tuple(terminal.clean(cell) for cell in row) for row in cells]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]

"""A recovery as a timeline: its tasks, host fencing calls and instances, with times,
results and durations.

``load`` reads one notification's rows (its recovery tasks, fence attempts and vmoves, and
the evidence its host failure was judged on); ``text`` prints them for a terminal and
``html`` draws them as one self-contained page (inline SVG, no script, no external
resource): one bar per task, per fence attempt and per instance over time, coloured by
result, and a mark per piece of evidence. ``masakari-manage notification show UUID [--html
FILE]`` uses both.
"""

from __future__ import annotations

import dataclasses
import datetime
import html as html_lib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception, terminal
from masakari.db import evidence as evidence_db
from masakari.db import failures, holds
from masakari.db import fencing as fence_rows
from masakari.db.models import Notification, RecoveryTask, VMove
from masakari.ha import failed_task

COLOURS = {
    "succeeded": "#2e7d32",
    "SUCCESS": "#2e7d32",
    "failed": "#c62828",
    "FAILURE": "#c62828",
    "REVERTED": "#ef6c00",
    "ignored": "#757575",
    "ongoing": "#1565c0",
    "RUNNING": "#1565c0",
    "pending": "#9e9e9e",
    # Evidence: says the host failed, says it runs, cannot tell; a verdict.
    "says failed": "#c62828",
    "says up": "#2e7d32",
    "cannot tell": "#9e9e9e",
    "confirmed": "#2e7d32",
    "not confirmed": "#ef6c00",
    # host fencing's results: proven dead, sent and unanswered, and the failures
    "off": "#2e7d32",
    "crashed": "#2e7d32",
    "dead": "#2e7d32",
    "done": "#2e7d32",
    "sent": "#1565c0",
    "on": "#c62828",
    "unknown": "#c62828",
    "unreachable": "#c62828",
    "refused": "#c62828",
    "timeout": "#c62828",
    "no message": "#c62828",
}
DEFAULT_COLOUR = "#6a1b9a"


@dataclasses.dataclass(frozen=True)
class Bar:
    """One row of the timeline: a task of an attempt, or an instance's move."""

    kind: str  # "task", "fence", "instance" or "evidence"
    label: str
    result: str
    start: datetime.datetime | None
    end: datetime.datetime | None
    detail: str = ""
    source: str | None = None
    destination: str | None = None
    ident: str = ""

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max((self.end - self.start).total_seconds(), 0.0)


@dataclasses.dataclass(frozen=True)
class Timeline:
    notification_uuid: str
    type: str
    status: str
    generated_time: datetime.datetime
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    tasks: list[Bar]
    instances: list[Bar]
    failure_reason: str | None = None
    fencing: list[Bar] = dataclasses.field(default_factory=list)
    fence_attempts: list[fence_rows.Attempt] = dataclasses.field(default_factory=list)
    evidence: list[Bar] = dataclasses.field(default_factory=list)
    # Why it waits for an operator (a guard, or host fencing that did not prove the host dead).
    hold_reason: str | None = None

    @property
    def bars(self) -> list[Bar]:
        return [*self.evidence, *self.tasks, *self.fencing, *self.instances]


def _parse(timestamp: str | None) -> datetime.datetime | None:
    # Progress details carry str(datetime) timestamps, as the reference's taskflow did.
    if not timestamp:
        return None
    try:
        return datetime.datetime.fromisoformat(timestamp).replace(tzinfo=None)
    except ValueError:
        return None


def load(session: orm.Session, notification_uuid: str) -> Timeline:
    row = session.scalar(
        sa.select(Notification).where(
            Notification.notification_uuid == notification_uuid, Notification.deleted == 0
        )
    )
    if row is None:
        raise exception.NotificationNotFound(id=notification_uuid)
    rows = list(
        session.scalars(
            sa.select(RecoveryTask)
            .where(RecoveryTask.notification_uuid == notification_uuid)
            .order_by(RecoveryTask.attempt, RecoveryTask.position)
        )
    )
    shown = [
        {"progress": task.progress, "progress_details": json.loads(task.details or "[]")}
        for task in rows
    ]
    failure = failures.get(session, notification_uuid) if failed_task.failed(row.status) else None
    shown = failed_task.with_reason(shown, failure)
    tasks = []
    for task, entry in zip(rows, shown, strict=True):
        details = entry["progress_details"]
        times = [t for t in (_parse(d.get("timestamp")) for d in details) if t is not None]
        last = details[-1]["message"] if details else ""
        tasks.append(
            Bar(
                kind="task",
                label=f"#{task.attempt} {task.name}",
                result=task.state,
                start=min(times) if times else task.created_at,
                end=max(times) if times else task.updated_at,
                detail=last,
                ident=f"{task.attempt}:{task.position}",
            )
        )
    instances = [
        Bar(
            kind="instance",
            label=move.instance_name or move.instance_uuid,
            result=move.status or "",
            start=move.start_time,
            end=move.end_time,
            detail=move.message or "",
            source=move.source_host,
            destination=move.dest_host,
            ident=move.instance_uuid,
        )
        for move in session.scalars(
            sa.select(VMove)
            .where(VMove.notification_uuid == notification_uuid, VMove.deleted == 0)
            .order_by(VMove.start_time, VMove.id)
        )
    ]
    attempts = fence_rows.attempts(session, notification_uuid)
    fencing = [
        Bar(
            kind="fence",
            label=f"fence #{a.position} {a.driver} {a.action}",
            result=a.result,
            start=a.started_at,
            end=None
            if a.duration is None
            else a.started_at + datetime.timedelta(seconds=a.duration),
            detail=a.message or "",
            source=a.host_name,
            ident=str(a.id),
        )
        for a in attempts
    ]
    return Timeline(
        evidence=[_evidence_bar(item) for item in evidence_db.of(session, notification_uuid)],
        notification_uuid=row.notification_uuid,
        type=row.type,
        status=row.status,
        generated_time=row.generated_time,
        created_at=row.created_at,
        updated_at=row.updated_at,
        tasks=tasks,
        instances=instances,
        failure_reason=None if failure is None else failure.reason,
        fencing=fencing,
        fence_attempts=attempts,
        hold_reason=holds.reasons(session, [notification_uuid]).get(notification_uuid),
    )


def _evidence_bar(item: evidence_db.Evidence) -> Bar:
    if item.kind == evidence_db.VERDICT:
        result = "confirmed" if item.failed else "not confirmed"
    else:
        result = {True: "says failed", False: "says up", None: "cannot tell"}[item.failed]
    return Bar(
        kind="evidence",
        label=f"{item.kind}: {item.source}",
        result=result,
        start=item.observed_at,
        end=item.observed_at,
        detail=item.detail,
        ident=item.kind,
    )


def _clock(value: datetime.datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if value else "-"


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def text(timeline: Timeline) -> str:
    """The timeline for a terminal; every value is made inert (masakari.terminal): instance
    names are the tenants', messages are Nova's."""
    t = timeline
    c = terminal.clean
    lines = [
        f"notification {c(t.notification_uuid)}  type {c(t.type)}  status {c(t.status)}",
        f"reported {_clock(t.generated_time)}  received {_clock(t.created_at)}"
        f"  last change {_clock(t.updated_at)}",
        *([f"failure reason: {c(t.failure_reason)}"] if t.failure_reason is not None else []),
        *([f"held: {c(t.hold_reason)}"] if t.hold_reason is not None else []),
    ]
    if t.evidence:
        lines += ["", "evidence:"]
        lines += _table(
            [("time", "kind", "source", "says", "detail")]
            + [
                (_clock(b.start), b.ident, b.label.split(": ", 1)[1], b.result, b.detail)
                for b in t.evidence
            ]
        )
    lines += ["", "tasks:"]
    table: list[tuple[str, ...]] = [("task", "result", "start", "end", "duration", "last message")]
    table += [
        (b.label, b.result, _clock(b.start), _clock(b.end), _duration(b.seconds), b.detail)
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
            _clock(b.start),
            _clock(b.end),
            _duration(b.seconds),
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


# Page geometry, in SVG user units.
LABEL_WIDTH = 320
PLOT_WIDTH = 720
ROW = 26
TOP = 40


def html(timeline: Timeline) -> str:
    """One page, no script and no external resource: it opens anywhere, also offline."""
    t = timeline
    times = [x for b in t.bars for x in (b.start, b.end) if x is not None]
    if t.created_at is not None:
        times.append(t.created_at)
    origin = min(times) if times else t.generated_time
    span = max(((max(times) - origin).total_seconds() if times else 0.0), 1.0)

    def x(value: datetime.datetime | None) -> float:
        if value is None:
            return LABEL_WIDTH
        return LABEL_WIDTH + PLOT_WIDTH * (value - origin).total_seconds() / span

    rows = []
    for i, bar in enumerate(t.bars):
        y = TOP + i * ROW
        start = x(bar.start)
        # A move still under way (or never started) runs to the end of the plot.
        end = x(bar.end) if bar.end is not None else LABEL_WIDTH + PLOT_WIDTH
        colour = COLOURS.get(bar.result, DEFAULT_COLOUR)
        where = ""
        if bar.kind == "instance":
            where = f" {bar.source or '?'} \u2192 {bar.destination or '?'}"
        tip = (
            f"{bar.label}{where}: {bar.result}, {_clock(bar.start)} \u2013 {_clock(bar.end)}"
            f" ({_duration(bar.seconds)}) {bar.detail}"
        )
        took = _duration(bar.seconds)
        if bar.kind == "evidence":  # a moment, not a span
            tip = f"{bar.label}: {bar.result}, {_clock(bar.start)} {bar.detail}"
            took = ""
        rows.append(
            f'<g class="bar {bar.kind}" data-id="{_e(bar.ident)}" data-result="{_e(bar.result)}">'
            f"<title>{_e(tip)}</title>"
            f'<text x="8" y="{y + 17}">{_e(bar.label)}</text>'
            f'<rect x="{start:.1f}" y="{y + 4}" width="{max(end - start, 3):.1f}" '
            f'height="{ROW - 8}" rx="3" fill="{colour}"/>'
            f'<text class="result" x="{min(end, LABEL_WIDTH + PLOT_WIDTH) + 6:.1f}" '
            f'y="{y + 17}">{_e(bar.result)} {_e(took)}{_e(where)}</text></g>'
        )
    height = TOP + ROW * max(len(t.bars), 1) + 30
    axis = []
    for step in range(6):
        pos = LABEL_WIDTH + PLOT_WIDTH * step / 5
        axis.append(
            f'<line x1="{pos:.1f}" y1="{TOP - 8}" x2="{pos:.1f}" y2="{height - 24}" '
            f'stroke="#ddd"/><text class="axis" x="{pos:.1f}" y="{TOP - 14}">'
            f"+{span * step / 5:.{0 if span >= 10 else 1}f}s</text>"
        )
    width = LABEL_WIDTH + PLOT_WIDTH + 300
    failure = ""
    if t.failure_reason is not None:
        failure = f"<dt>failure reason</dt><dd>{_e(t.failure_reason)}</dd>"
    if t.hold_reason is not None:
        failure += f"<dt>held</dt><dd>{_e(t.hold_reason)}</dd>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Recovery of notification {_e(t.notification_uuid)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
svg text {{ font-size: 13px; }}
svg text.axis {{ font-size: 11px; fill: #666; text-anchor: middle; }}
svg text.result {{ font-size: 11px; fill: #444; }}
dl {{ display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }}
dt {{ color: #666; }}
</style></head>
<body>
<h1>Recovery of notification <code>{_e(t.notification_uuid)}</code></h1>
<dl>
<dt>type</dt><dd>{_e(t.type)}</dd><dt>status</dt><dd>{_e(t.status)}</dd>
<dt>reported</dt><dd>{_e(_clock(t.generated_time))}</dd>
<dt>received</dt><dd>{_e(_clock(t.created_at))}</dd>
{failure}<dt>evidence</dt><dd>{len(t.evidence)}</dd>
<dt>tasks</dt><dd>{len(t.tasks)}</dd><dt>fence attempts</dt><dd>{len(t.fencing)}</dd>
<dt>instances</dt><dd>{len(t.instances)}</dd>
</dl>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"
 aria-label="recovery timeline">
<text x="8" y="{TOP - 14}" font-weight="bold">time since {_e(_clock(origin))}</text>
{"".join(axis)}
{"".join(rows)}
</svg>
</body></html>
"""


def _e(value: object) -> str:
    # Inert for a terminal too: the page is a file an operator may cat.
    return html_lib.escape(terminal.clean(value), quote=True)

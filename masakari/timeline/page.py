"""A recovery's timeline as one self-contained HTML page (inline SVG, no script, no external
resource)."""

from __future__ import annotations

import datetime
import html as html_lib

from masakari import terminal
from masakari.timeline.model import Timeline
from masakari.timeline.text import lasted, when

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
    # A fire drill's phases: done, done later than predicted.
    "ok": "#2e7d32",
    "late": "#ef6c00",
    "running": "#1565c0",
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
    # A quarantine and its instances (masakari.timeline.quarantine).
    "moved": "#2e7d32",
    "released": "#2e7d32",
    "migrating": "#1565c0",
    "held": "#ef6c00",
    "left": "#ef6c00",
    "partial": "#ef6c00",
    "superseded": "#ef6c00",
    "cancelled": "#757575",
    "withdrawn": "#757575",
}
DEFAULT_COLOUR = "#6a1b9a"


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
            f"{bar.label}{where}: {bar.result}, {when(bar.start)} \u2013 {when(bar.end)}"
            f" ({lasted(bar.seconds)}) {bar.detail}"
        )
        took = lasted(bar.seconds)
        if bar.kind == "evidence":  # a moment, not a span
            tip = f"{bar.label}: {bar.result}, {when(bar.start)} {bar.detail}"
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
<title>{_e(t.title)} {_e(t.notification_uuid)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
svg text {{ font-size: 13px; }}
svg text.axis {{ font-size: 11px; fill: #666; text-anchor: middle; }}
svg text.result {{ font-size: 11px; fill: #444; }}
dl {{ display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }}
dt {{ color: #666; }}
</style></head>
<body>
<h1>{_e(t.title)} <code>{_e(t.notification_uuid)}</code></h1>
<dl>
<dt>type</dt><dd>{_e(t.type)}</dd><dt>status</dt><dd>{_e(t.status)}</dd>
<dt>reported</dt><dd>{_e(when(t.generated_time))}</dd>
<dt>received</dt><dd>{_e(when(t.created_at))}</dd>
{failure}<dt>evidence</dt><dd>{len(t.evidence)}</dd>
<dt>tasks</dt><dd>{len(t.tasks)}</dd><dt>fence attempts</dt><dd>{len(t.fencing)}</dd>
<dt>instances</dt><dd>{len(t.instances)}</dd>
</dl>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"
 aria-label="recovery timeline">
<text x="8" y="{TOP - 14}" font-weight="bold">time since {_e(when(origin))}</text>
{"".join(axis)}
{"".join(rows)}
</svg>
</body></html>
"""


def _e(value: object) -> str:
    # Inert for a terminal too: the page is a file an operator may cat.
    return html_lib.escape(terminal.clean(value), quote=True)

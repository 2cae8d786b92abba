"""The readiness doctor's host fencing findings: can each host of a segment be proven dead?

The API never reads the fencing file (it is the engine's alone): the engines check every
host's drivers periodically ([fencing] check_interval; a read-only power status call per
driver) and record the results (``masakari_fence_checks``), which the doctor reports.
``masakari-manage segment check`` may instead run the checks live when it can read the file.
With no check recorded (host fencing not configured), there is no finding at all: the
readiness bodies are those of a deployment without host fencing.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from oslo_config import cfg

from masakari.conf import fencing as fencing_opts
from masakari.db import fencing
from masakari.db.database import Database
from masakari.db.models import utcnow

CHECK = "fencing"
SUCCESS, WARNING, FAILURE = 0, 1, 2
# Checks older than this many check intervals are stale: no engine checks any more.
STALE_AFTER = 3


def recorded(db: Database) -> list[fencing.Check]:
    with db.reader() as session:
        return fencing.checks(session)


def findings(
    conf: cfg.ConfigOpts,
    checks: Sequence[fencing.Check],
    segment: str,
    host_names: Sequence[str],
    now: datetime.datetime | None = None,
) -> list[tuple[int, str, str]]:
    """(code, check, detail) for the hosts of one segment; empty when nothing was checked."""
    if not checks:
        return []
    by_host: dict[str, list[fencing.Check]] = {}
    for check in checks:
        by_host.setdefault(check.host_name, []).append(check)
    found: list[tuple[int, str, str]] = []
    proven = 0
    for name in host_names:
        rows = by_host.get(name)
        if rows is None:
            found.append(
                (WARNING, CHECK, f"Host '{name}': no fencing check recorded yet (a new host?).")
            )
            continue
        code, detail = _host(conf, name, rows)
        if code == SUCCESS:
            proven += 1
        else:
            found.append((code, CHECK, detail))
    if proven:
        found.insert(0, (SUCCESS, CHECK, f"{proven} host(s) with a fencing driver that answers."))
    stale = _stale(conf, [c for n in host_names for c in by_host.get(n, [])], now)
    if stale is not None:
        found.append((WARNING, CHECK, stale))
    return found


def _host(conf: cfg.ConfigOpts, name: str, rows: list[fencing.Check]) -> tuple[int, str]:
    if rows[0].result == fencing.UNFENCED:
        if conf.fencing.unfenced_hosts == fencing_opts.UNFENCED_HOLD:
            return WARNING, (
                f"Host '{name}' has no power fencing configured: its failure is held for an "
                "operator ([fencing] unfenced_hosts = hold)."
            )
        return WARNING, (
            f"Host '{name}' has no power fencing configured: its failure is recovered on "
            "the monitor's report alone."
        )
    answered = [r for r in rows if r.result == fencing.OK]
    failed = [r for r in rows if r.result != fencing.OK]
    said = "; ".join(_said(r) for r in failed)
    if not answered:
        return FAILURE, (
            f"Host '{name}': no fencing driver answers ({said}): its failure would be held."
        )
    if failed:
        return WARNING, (
            f"Host '{name}': {said}; fenced by {answered[0].driver} (position "
            f"{answered[0].position}) instead."
        )
    return SUCCESS, ""


def _said(check: fencing.Check) -> str:
    return f"{check.driver}: {check.result}" + (f" ({check.message})" if check.message else "")


def _stale(
    conf: cfg.ConfigOpts, rows: list[fencing.Check], now: datetime.datetime | None
) -> str | None:
    interval = conf.fencing.check_interval
    if not rows or interval <= 0:
        return None
    newest = max(r.checked_at for r in rows)
    age = ((now or utcnow()) - newest).total_seconds()
    if age <= STALE_AFTER * interval:
        return None
    return (
        f"The fencing checks were last made at {newest.isoformat(sep=' ', timespec='seconds')}"
        f" ({age:.0f} s ago): no engine checks them now."
    )

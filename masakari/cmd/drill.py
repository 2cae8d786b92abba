"""masakari-manage's fire drills: ``drill run SEGMENT --host H``, ``drill show UUID``,
``drill list [SEGMENT]`` (docs/operations.md, Fire drills).

``run`` writes the drill for masakari-engine to take, waits for its end and prints the
report; it exits 1 when the drill failed (``--no-wait``: prints the drill and returns).
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

from masakari import exception, terminal, timeline
from masakari.db import drills as drills_db
from masakari.db.database import Database
from masakari.db.models import Segment
from masakari.ha import drills as drills_api
from masakari.timeline import drill as drill_timeline

ENDED = (drills_db.SUCCEEDED, drills_db.FAILED)


class DrillCommandFailed(Exception):
    """The command, or the drill it ran, failed; the message is printed as is."""


def _segment_uuid(db: Database, segment: str) -> str:
    """A segment named by its uuid or its name."""
    with db.reader() as session:
        found = session.scalar(
            sa.select(Segment.uuid).where(
                Segment.deleted == 0, sa.or_(Segment.uuid == segment, Segment.name == segment)
            )
        )
    if found is None:
        raise DrillCommandFailed(f"No failover segment {segment}.")
    return str(found)


def run(conf: cfg.ConfigOpts) -> None:
    args = conf.category
    db = Database.from_conf(conf)
    try:
        try:
            drill = drills_api.request(
                conf,
                db,
                _segment_uuid(db, args.segment),
                args.drill_host,
                no_fence=args.no_fence,
                allow_untagged=args.allow_untagged,
                move_back=args.move_back,
                requested_by="cli",
            )
        except exception.MasakariError as exc:
            raise DrillCommandFailed(exc.format_message()) from exc
        print(f"drill {drill['id']} of {drill['host_name']}: {drill['status']}", flush=True)
        if args.no_wait:
            return
        deadline = time.monotonic() + args.timeout if args.timeout else None
        while True:
            found = drills_api.get(db, None, drill["id"])
            if found["status"] in ENDED:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise DrillCommandFailed(
                    f"drill {drill['id']} still {found['status']} after {args.timeout:g} s "
                    "(it goes on: masakari-manage drill show UUID)"
                )
            time.sleep(1.0)
        _report(found)
        _html(db, drill["id"], args.html)
    finally:
        db.dispose()
    if found["status"] == drills_db.FAILED:
        raise DrillCommandFailed(f"drill failed: {found['failure_reason']}")


def show(conf: cfg.ConfigOpts) -> None:
    db = Database.from_conf(conf)
    try:
        try:
            found = drills_api.get(db, None, conf.category.uuid)
        except exception.DrillNotFound as exc:
            raise DrillCommandFailed(exc.format_message()) from exc
        if conf.category.format == "json":
            print(json.dumps({"drill": found}, indent=2, sort_keys=True))
        else:
            _report(found)
        _html(db, conf.category.uuid, conf.category.html)
    finally:
        db.dispose()


def list_(conf: cfg.ConfigOpts) -> None:
    db = Database.from_conf(conf)
    try:
        segment = _segment_uuid(db, conf.category.segment) if conf.category.segment else None
        found = drills_api.list_(db, segment)
    finally:
        db.dispose()
    if not found:
        print("no drill")
        return
    table = [("id", "host", "status", "by", "created", "ended", "failure reason")]
    table += [
        (
            d["id"],
            d["host_name"],
            d["status"],
            d["requested_by"],
            d["created_at"] or "-",
            d["ended_at"] or "-",
            d["failure_reason"] or "",
        )
        for d in found
    ]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def _report(drill: dict[str, Any]) -> None:
    c = terminal.clean
    print(
        f"drill {drill['id']} of host {c(drill['host_name'])}: {drill['status']}"
        f" (engine {c(drill['engine'] or '-')})"
    )
    if drill["failure_reason"]:
        print(f"failure reason: {c(drill['failure_reason'])}")
    print("phases:")
    for phase in drill.get("phases") or []:
        took = "-" if phase["seconds"] is None else f"{phase['seconds']:.2f}s"
        predicted = phase["predicted_seconds"]
        budget = "" if predicted is None else f" (predicted {predicted:g}s)"
        detail = c(phase["detail"] or "").replace("\n", "; ")
        print(f"  {phase['name']:<12} {phase['result']:<8} {took:>9}{budget}  {detail}")
    report = drill.get("report") or {}
    for canary in report.get("canaries") or []:
        print(
            f"  canary {c(canary['id'])}: planned {c(canary.get('predicted'))}, landed "
            f"{c(canary.get('landed') or '-')}"
            + (", moved back" if canary.get("moved_back") else "")
        )
    for finding in report.get("findings") or []:
        print(f"  finding: {c(finding)}")


def _html(db: Database, drill_uuid: str, path: str | None) -> None:
    if not path:
        return
    with db.reader() as session:
        page = timeline.html(drill_timeline.load(session, drill_uuid))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"timeline drawn in {path}")


def add_parsers(subparsers: Any) -> None:
    drill = subparsers.add_parser("drill", help="fire drills: the recovery path on a host, undone")
    actions = drill.add_subparsers(dest="action")
    actions.required = True
    run_ = actions.add_parser("run", help="fence, disable, evacuate HOST's canaries, restore")
    run_.add_argument("segment", help="the segment (uuid or name)")
    run_.add_argument("--host", dest="drill_host", required=True, help="the host (name or uuid)")
    run_.add_argument(
        "--no-fence",
        dest="no_fence",
        action="store_true",
        help="force nova-compute down instead of a power off",
    )
    run_.add_argument(
        "--allow-untagged",
        dest="allow_untagged",
        action="store_true",
        help="evacuate servers without the canary tag too",
    )
    run_.add_argument(
        "--move-back",
        dest="move_back",
        action="store_true",
        help="live-migrate the canaries back once the host is restored",
    )
    run_.add_argument(
        "--no-wait", dest="no_wait", action="store_true", help="print the new drill and return"
    )
    run_.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="give up waiting after this many seconds (default: wait to the end)",
    )
    run_.add_argument("--html", metavar="FILE", help="also write the timeline as an HTML page")
    show_ = actions.add_parser("show", help="one drill: phases, canaries, findings")
    show_.add_argument("uuid")
    show_.add_argument("--format", choices=("text", "json"), default="text")
    show_.add_argument("--html", metavar="FILE", help="also write the timeline as an HTML page")
    listed = actions.add_parser("list", help="the drills, newest first")
    listed.add_argument("segment", nargs="?", default=None, help="of this segment only")

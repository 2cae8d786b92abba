"""masakari-manage's quarantine commands: ``host quarantine HOST`` and ``quarantine
list|show|start|cancel|release`` (docs/operations.md, Quarantine)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import exception, timeline
from masakari.db.database import Database
from masakari.timeline import quarantine as quarantine_timeline


class QuarantineCommandError(Exception):
    """Refused (the message says why): masakari-manage prints it and exits 1."""


def _db(conf: cfg.ConfigOpts) -> Database:
    return Database.from_conf(conf)


def host_quarantine(conf: cfg.ConfigOpts) -> None:
    from masakari.ha import quarantines

    db = _db(conf)
    try:
        try:
            row, new = quarantines.request(
                conf,
                db,
                conf.category.host_name,
                quarantines.OPERATOR,
                conf.category.reason,
            )
        except exception.MasakariError as exc:
            raise QuarantineCommandError(exc.message) from exc
    finally:
        db.dispose()
    said = "requested" if new else "already in quarantine"
    print(f"Host {row.host_name}: {said}: quarantine {row.uuid} is {row.status}")
    if row.hold_reason:
        print(f"Held: {row.hold_reason}")


def quarantine_list(conf: cfg.ConfigOpts) -> None:
    from masakari.ha import quarantines

    db = _db(conf)
    try:
        rows = quarantines.list_(db)
    finally:
        db.dispose()
    for row in rows:
        print(f"{row.uuid}  {row.host_name:20} {row.status:10} {row.source:12} {row.reason}")


def quarantine_show(conf: cfg.ConfigOpts) -> None:
    from masakari.ha import quarantines

    db = _db(conf)
    try:
        try:
            row, moves = quarantines.get(db, conf.category.uuid)
        except exception.MasakariError as exc:
            raise QuarantineCommandError(exc.message) from exc
        _print(quarantines.view(row, moves))
        if conf.category.html:
            with db.reader() as session:
                page = timeline.html(quarantine_timeline.load(session, row.uuid))
            with open(conf.category.html, "w", encoding="utf-8") as fh:
                fh.write(page)
            print(f"timeline drawn in {conf.category.html}")
    finally:
        db.dispose()


def quarantine_change(conf: cfg.ConfigOpts) -> None:
    from masakari.compute.clients import Clients
    from masakari.ha import quarantines

    verb, uuid = conf.category.action, conf.category.uuid
    db = _db(conf)
    try:
        try:
            if verb == "start":
                row = quarantines.start(db, uuid)
            elif verb == "cancel":
                row = quarantines.cancel(db, uuid)
            else:
                row = quarantines.release(conf, db, Clients(conf).nova(), uuid)
        except exception.MasakariError as exc:
            raise QuarantineCommandError(exc.message) from exc
    finally:
        db.dispose()
    print(f"Quarantine {row.uuid} of host {row.host_name}: {row.status}")


def _print(view: dict[str, Any]) -> None:
    for key in ("id", "host", "status", "source", "reason", "hold_reason", "detail"):
        if view.get(key):
            print(f"{key}: {view[key]}")
    for key in ("created_at", "started_at", "ended_at", "signal_ended_at"):
        if view.get(key):
            print(f"{key}: {view[key]}")
    for inst in view.get("instances", []):
        target = f" -> {inst['target']}" if inst["target"] else ""
        detail = f": {inst['detail']}" if inst["detail"] else ""
        print(f"  {inst['instance_id']} {inst['name']} {inst['status']}{target}{detail}")


def add_host_parser(actions: Any) -> None:
    quarantine = actions.add_parser(
        "quarantine", help="take HOST out of service and live-migrate its instances away"
    )
    quarantine.add_argument("host_name", metavar="HOST", help="the host's name")
    quarantine.add_argument("--reason", required=True, help="why (shown in Nova's reason)")


def add_parsers(subparsers: Any) -> None:
    category = subparsers.add_parser("quarantine", help="quarantined hosts")
    actions = category.add_subparsers(dest="action")
    actions.required = True
    actions.add_parser("list", help="every quarantine, newest first")
    show = actions.add_parser("show", help="one quarantine and its instances")
    show.add_argument("uuid", help="the quarantine's id")
    show.add_argument("--html", metavar="FILE", help="also write its timeline as an HTML page")
    for verb, text in (
        ("start", "run a quarantine its segment's limit held"),
        ("cancel", "send no more migrations (or withdraw one not started)"),
        ("release", "return the host to service"),
    ):
        parser = actions.add_parser(verb, help=text)
        parser.add_argument("uuid", help="the quarantine's id")


COMMANDS: dict[str, Callable[[cfg.ConfigOpts], None]] = {
    "list": quarantine_list,
    "show": quarantine_show,
    "start": quarantine_change,
    "cancel": quarantine_change,
    "release": quarantine_change,
}

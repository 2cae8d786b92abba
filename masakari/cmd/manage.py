"""masakari-manage: ``db sync [VERSION]``, ``db version``, ``db purge``, ``engine list``,
``notification show UUID [--html FILE]``.

Exit codes, as the reference's: 0 success; 1 the command refused its arguments or failed
(database error, unknown revision); 2 bad usage or unreadable configuration files.
"""

from __future__ import annotations

import datetime
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from alembic import util as alembic_util
from oslo_config import cfg
from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from masakari import conf as masakari_conf
from masakari import exception, timeline
from masakari.db import engines, migration, purge
from masakari.db.database import Database
from masakari.version import VERSION

MAX_INT = 0x7FFFFFFF
EXIT_FAILED = 1
EXIT_USAGE = 2


class CommandError(Exception):
    """A command refused its arguments or failed; the message is printed as is."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def db_sync(conf: cfg.ConfigOpts) -> None:
    version = conf.category.version
    if version is not None and version.isdigit():
        raise CommandError(
            "You requested an sqlalchemy-migrate database version; this is no longer supported"
        )
    db = Database.from_conf(conf)
    try:
        migration.upgrade(db.engine, version)
    except (exception.InvalidInput, alembic_util.CommandError) as exc:
        raise CommandError(str(exc)) from exc
    finally:
        db.dispose()


def db_version(conf: cfg.ConfigOpts) -> None:
    # Scripts read the revision from stdout: alembic's chatter must not precede it.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    db = Database.from_conf(conf)
    try:
        print(migration.current(db.engine))
    finally:
        db.dispose()


def db_purge(conf: cfg.ConfigOpts) -> None:
    age_in_days, max_rows = conf.category.age_in_days, conf.category.max_rows
    if max_rows < -1 or max_rows > MAX_INT:
        raise CommandError(
            f"Invalid input received: max_rows must be >= -1 and <= {MAX_INT}, got {max_rows}",
        )
    if max_rows == 0:
        raise CommandError("Must supply value greater than 0 for max_rows.")
    if age_in_days < 0:
        raise CommandError("Must supply a non-negative value for age.")
    if age_in_days >= int(time.time()) // 86400:
        raise CommandError("Maximal age is count of days since epoch.")
    db = Database.from_conf(conf)
    try:
        counts = purge.purge(db, age_in_days, None if max_rows == -1 else max_rows)
    finally:
        db.dispose()
    for table, count in counts.items():
        print(f"{table}: {count} row(s) purged")


# Engines listed by ``engine list``; engines.FORGET_AFTER keeps the table far smaller.
MAX_ENGINES = 1000


def engine_list(conf: cfg.ConfigOpts) -> None:
    """Every engine that recorded a heartbeat, the most recently alive first.

    An engine is ``alive`` while its last heartbeat is younger than engine_claim_timeout:
    past that its claims have expired too, and other engines take its work over.
    """
    db = Database.from_conf(conf)
    try:
        with db.reader() as session:
            rows = engines.latest(session, MAX_ENGINES)
    finally:
        db.dispose()
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    table = [("engine", "host", "started", "last heartbeat", "age (s)", "state")]
    for row in rows:
        age = max((now - row.heartbeat_at).total_seconds(), 0.0)
        state = "alive" if age < conf.engine_claim_timeout else "stale"
        table.append(
            (
                row.engine,
                row.host,
                row.started_at.isoformat(sep=" ", timespec="seconds"),
                row.heartbeat_at.isoformat(sep=" ", timespec="seconds"),
                f"{age:.0f}",
                state,
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )


def notification_show(conf: cfg.ConfigOpts) -> None:
    """The recovery of one notification as a timeline; ``--html FILE`` also draws it."""
    db = Database.from_conf(conf)
    try:
        with db.reader() as session:
            found = timeline.load(session, conf.category.uuid)
    except exception.NotificationNotFound as exc:
        raise CommandError(str(exc)) from exc
    finally:
        db.dispose()
    print(timeline.text(found), end="")
    if conf.category.html:
        with open(conf.category.html, "w", encoding="utf-8") as fh:
            fh.write(timeline.html(found))
        print(f"\ntimeline drawn in {conf.category.html}")


COMMANDS: dict[str, dict[str, Callable[[cfg.ConfigOpts], None]]] = {
    "db": {"sync": db_sync, "version": db_version, "purge": db_purge},
    "engine": {"list": engine_list},
    "notification": {"show": notification_show},
}


def _add_parsers(subparsers: Any) -> None:  # argparse's _SubParsersAction is private
    db = subparsers.add_parser("db", help="database schema and maintenance")
    actions = db.add_subparsers(dest="action")
    actions.required = True
    sync = actions.add_parser("sync", help="upgrade the schema to the latest revision")
    sync.add_argument("version", nargs="?", default=None, help="alembic revision (default: head)")
    actions.add_parser("version", help="print the schema's current revision")
    purge_parser = actions.add_parser("purge", help="delete old soft-deleted and finished rows")
    purge_parser.add_argument(
        "--age_in_days", type=int, default=30, help="rows older than this (default: 30)"
    )
    purge_parser.add_argument(
        "--max_rows", type=int, default=-1, help="at most this many rows per table (-1: all)"
    )
    _add_engine_parsers(subparsers)


def _add_engine_parsers(subparsers: Any) -> None:
    engine = subparsers.add_parser("engine", help="the masakari-engine processes")
    actions = engine.add_subparsers(dest="action")
    actions.required = True
    actions.add_parser("list", help="each engine and its last heartbeat")
    notification = subparsers.add_parser("notification", help="one notification's recovery")
    actions = notification.add_subparsers(dest="action")
    actions.required = True
    show = actions.add_parser("show", help="the recovery as a timeline")
    show.add_argument("uuid", help="the notification's uuid")
    show.add_argument("--html", metavar="FILE", help="also write the timeline as an HTML page")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    conf = cfg.ConfigOpts()
    masakari_conf.register_opts(conf)
    conf.register_cli_opt(
        cfg.SubCommandOpt("category", title="Command categories", handler=_add_parsers)
    )
    if not argv:
        print(f"OpenStack masakari version: {VERSION}\n")
        categories = "".join(f"\n\t{name}" for name in COMMANDS)
        print(f"masakari-manage category action [<args>]\nAvailable categories:{categories}")
        return EXIT_USAGE
    try:
        conf(argv, project="masakari", prog="masakari-manage", version=VERSION)
    except cfg.ConfigDirNotFoundError as exc:
        print(f"Invalid directory: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except cfg.ConfigFilesNotFoundError as exc:
        print(
            f"Failed to read configuration file(s): {', '.join(exc.config_files)}", file=sys.stderr
        )
        return EXIT_USAGE
    masakari_conf.setup_logging(conf)
    command = COMMANDS[conf.category.name][conf.category.action]
    try:
        command(conf)
    except CommandError as exc:
        print(exc, file=sys.stderr)
        return exc.code
    except (sa_exc.SQLAlchemyError, db_exc.DBError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "The above error may show that the database has not been created.\n"
            "Please create a database using 'masakari-manage db sync' before running this "
            "command.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""masakari-manage: ``db sync [VERSION]``, ``db version``, ``db purge``, ``engine list``,
``notification show UUID [--html FILE]``, and the project's ``notification release|cancel
UUID`` (held notifications), ``host plan HOST``, ``segment check [SEGMENT]``,
``detection shadow [--hours N]``, ``config recommended [--merge FILE]`` and ``drill
run|show|list`` (fire drills, masakari.cmd.drill).

Exit codes, as the reference's: 0 success; 1 the command refused its arguments or failed
(database error, unknown revision); 2 bad usage or unreadable configuration files.
"""

from __future__ import annotations

import configparser
import datetime
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from alembic import util as alembic_util
from oslo_config import cfg
from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from masakari import conf as masakari_conf
from masakari import exception, terminal, timeline
from masakari.cmd import manage_quarantine
from masakari.conf import paths, recommended
from masakari.db import detector_shadow, engines, migration, purge
from masakari.db.database import Database
from masakari.ha import notifications as notifications_api
from masakari.version import VERSION

if TYPE_CHECKING:
    from masakari.engine.fencing import HostFencing

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


_DEFAULT_LOCATIONS = (cfg.Locations.opt_default, cfg.Locations.set_default)


def check_database_configured(conf: cfg.ConfigOpts) -> None:
    """Refuse to touch the built-in default database when it lies inside the installation.

    The default [database]/connection is a SQLite file under $state_path, whose own default
    is the directory holding the masakari package: without a configuration file the reference
    creates (and migrates) site-packages/masakari.sqlite, which no deployed service reads. A
    state_path or connection set anywhere (file, environment) is honoured as it is.
    """
    where = conf.get_location("connection", "database")
    if where is not None and where.location not in _DEFAULT_LOCATIONS:
        return
    if os.path.realpath(conf.state_path) != os.path.realpath(paths.package_parent()):
        return
    read = ", ".join(conf.config_file) or "none"
    raise CommandError(
        "No database is configured: [database]/connection is not set and [DEFAULT]/state_path "
        f"is the installation directory, so the database would be {conf.database.connection} "
        f"(configuration files read: {read}). Pass --config-file with a masakari.conf that sets "
        "[database]/connection (or state_path)."
    )


def _end_hold(conf: cfg.ConfigOpts, action: Callable[[Database, str], Any], done: str) -> None:
    notification_uuid = conf.category.notification_uuid
    db = Database.from_conf(conf)
    try:
        action(db, notification_uuid)
    except (exception.NotFound, exception.Conflict) as exc:
        raise CommandError(exc.format_message()) from exc
    finally:
        db.dispose()
    print(f"Notification {notification_uuid} {done}.")


def notification_release(conf: cfg.ConfigOpts) -> None:
    _end_hold(conf, notifications_api.release, "released")


def notification_cancel(conf: cfg.ConfigOpts) -> None:
    _end_hold(conf, notifications_api.cancel, "cancelled")


# --- planning: host plan, segment check (docs/operations.md "Planning") ----------------------


def host_plan(conf: cfg.ConfigOpts) -> None:
    """What recovering the host would do now, from live Nova and Placement data."""
    from masakari.compute.clients import Clients
    from masakari.ha import plans

    db = Database.from_conf(conf)
    try:
        try:
            host = plans.host_by_name(db, conf.category.host_name)
        except exception.HostNotFoundByName as exc:
            raise CommandError(exc.message) from exc
        try:
            clients = Clients(conf)
            found = plans.for_host(conf, db, clients.nova(), clients.placement(), host)
        except exception.PlacementUnavailable as exc:
            raise CommandError(exc.message) from exc
        except exception.NovaError as exc:
            raise CommandError(f"Cannot read Nova or Placement: {exc}") from exc
    finally:
        db.dispose()
    view = found.view()
    if conf.category.format == "json":
        print(json.dumps({"recovery_plan": view}, indent=2, sort_keys=True))
        return
    print(f"Host {view['host']} ({view['recovery_method']}): {view['verdict']}")
    grouped = view["options"]["order_in_groups"]
    for n, step in enumerate(view["instances"], 1):
        prio = "-" if step["priority"] is None else step["priority"]
        target = " then ".join(step["attempts"]) if len(step["attempts"]) > 1 else step["target"]
        ha = "HA" if step["ha_enabled"] else "  "
        group = "" if not grouped else " group " + _dash(step["group"]).rjust(3)
        print(
            f"{n:4} {step['instance_id']} {ha} prio {prio:>4}{group} -> {target or '(left behind)'}"
        )
        if step["reason"]:
            print(f"       {step['reason']}")
    for item in view["not_evacuated"]:
        print(f"   - {item['instance_id']} not evacuated: {item['reason']}")
    if view["groups"]:
        print(
            "Ordering groups, in the order they start: "
            + ", ".join(f"{_dash(g['group'])} ({len(g['instances'])})" for g in view["groups"])
        )
    if view["reserved_hosts"]:
        print("Reserved hosts, in the order tried:")
    for attempt in view["reserved_host_attempts"]:
        print(
            f"   {attempt['host']}: {len(attempt['sent'])} sent, {len(attempt['fits'])} with room"
            + (f"; {attempt['reason']}" if attempt["reason"] else "")
        )
    if view["then"]:
        print(f"If that fails: {view['then']}")
    for message in view["messages"]:
        print(message)


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def segment_check(conf: cfg.ConfigOpts) -> None:
    """The readiness doctor, then the failures each segment tolerates; exits with
    masakari-status's codes (0 ok, 1 warning, 2 failure: also a segment below its target)."""
    from masakari.compute.clients import Clients
    from masakari.compute.placement import describe
    from masakari.engine import room, tolerance
    from masakari.ha import doctor

    db = Database.from_conf(conf)
    clients = Clients(conf)
    try:
        fencing = _readable_fencing(conf)
        try:
            nova, placement = clients.nova(), clients.placement()
            findings = doctor.check(
                conf,
                db,
                nova,
                placement,
                conf.category.segment,
                fence_checks=_live_fence_checks(fencing, db, conf.category.segment),
            )
            tolerated = tolerance.of_segments(conf, db, nova, placement, conf.category.segment)
            room_held = {
                seg.name: room.held_of(db, seg.uuid)
                for seg, _ in tolerance.segments(db, conf.category.segment)
            }
        except (exception.SegmentNotFound, exception.InvalidInput) as exc:
            raise CommandError(exc.message, code=doctor.FAILURE) from exc
    finally:
        db.dispose()
    if fencing is not None:
        # The file's own: an entry no host reaches yet is still one that would fail.
        findings += [
            doctor.Finding(
                doctor.WARNING,
                "fencing",
                f"fencing file {fencing.path}: {found}: a host whose list reaches it is not "
                "fenced by it.",
            )
            for found in fencing.unbuildable
        ]
    for f in findings:
        where = f" [{f.segment}]" if f.segment else ""
        print(f"{doctor.LABELS[f.code]:8} {f.check}{where}: {f.detail}")
    code = doctor.worst(findings)
    for found in tolerated:
        # Unknown: Nova or Placement could not tell (the doctor's findings say more).
        said = doctor.WARNING if found.k is None else doctor.SUCCESS
        said = doctor.FAILURE if found.below_target else said
        code = max(code, said)
        print(
            f"{doctor.LABELS[said]:8} failures tolerated [{found.segment}]: {tolerance.line(found)}"
        )
    for name, held in room_held.items():
        for host, amounts in sorted(held.items()):
            print(f"{'INFO':8} room held [{name}]: {host} {describe(amounts)}")
    if code:
        raise CommandError(f"Result: {doctor.LABELS[code]}", code=code)
    print("Result: OK")


def segment_hold_room(conf: cfg.ConfigOpts) -> None:
    """One holding pass now, as the engine makes one every [capacity] hold_interval."""
    if not conf.capacity.hold_room:
        raise CommandError(
            "[capacity] hold_room is off: nothing is held (release-room gives back what was)"
        )
    _room_pass(conf, release=False)


def segment_release_room(conf: cfg.ConfigOpts) -> None:
    """Give back the room held in Placement: what masakari added to each inventory's
    reserved amount (before removing masakari, or to let boots use it for a while)."""
    _room_pass(conf, release=True)
    if conf.capacity.hold_room:
        print("[capacity] hold_room is on: the engine holds the room again at its next pass.")


def _room_pass(conf: cfg.ConfigOpts, release: bool) -> None:
    from masakari.compute.clients import Clients
    from masakari.compute.placement import describe
    from masakari.engine import room, tolerance

    db = Database.from_conf(conf)
    clients = Clients(conf)
    try:
        held = room.Room(conf, db, clients.nova(), clients.placement())
        try:
            found = tolerance.segments(db, conf.category.segment)
        except exception.SegmentNotFound as exc:
            raise CommandError(exc.message) from exc
        failed = False
        for seg, hosts in found:
            try:
                done = held.restore(seg.uuid, seg.name) if release else held.hold(seg, hosts)
            except exception.NovaError as exc:
                failed = True
                print(f"{seg.name}: {exc}")
                continue
            amounts = "; ".join(
                f"{host} {describe(resources)}" for host, resources in sorted(done.held.items())
            )
            extra = f" for notification {done.released_for}" if done.released_for else ""
            print(f"{seg.name}: {done.state}{extra}" + (f": {amounts}" if amounts else ""))
    finally:
        db.dispose()
    if failed:
        raise CommandError("Result: the room of some segment is not settled")


def _readable_fencing(conf: cfg.ConfigOpts) -> HostFencing | None:
    """The engine's host fencing, when this user can read the fencing file (the engine's
    user); None otherwise."""
    path = conf.fencing.config_file
    if not path or not os.access(path, os.R_OK):
        return None
    from masakari.engine.fencing import HostFencing
    from masakari.fencing.config import FencingFileError

    try:
        return HostFencing.from_conf(conf)
    except FencingFileError as exc:
        raise CommandError(str(exc), code=2) from exc


def _live_fence_checks(
    fencing: HostFencing | None, db: Database, segment: str | None
) -> list[Any] | None:
    """Host fencing's checks made now, when the file could be read; None otherwise: the
    doctor then reports those the engines recorded."""
    if fencing is None:
        return None
    from masakari.engine.fence_checks import FenceChecker
    from masakari.engine.ports import Clock

    return FenceChecker(db, fencing, Clock(), "masakari-manage").check_all(segment)


def host_unblocklist(conf: cfg.ConfigOpts) -> None:
    """Lift storage fencing's Ceph blocklist of a host by hand: the addresses of its ``ceph``
    entries still in the OSD map's blocklist (docs/operations.md "Storage fencing")."""
    from masakari.db import hosts as hosts_db
    from masakari.engine.fencing import FencedHost
    from masakari.fencing.base import CEPH, FenceError
    from masakari.fencing.ceph import CephBlocklist, entity

    fencing = _readable_fencing(conf)
    if fencing is None:
        raise CommandError(
            "The fencing file ([fencing] config_file) cannot be read: run this as "
            "masakari-engine's user"
        )
    db = Database.from_conf(conf)
    try:
        with db.reader() as session:
            try:
                row = hosts_db.get_by_name(session, conf.category.host_name)
            except exception.HostNotFoundByName as exc:
                raise CommandError(exc.message) from exc
            host = hosts_db.get_for_recovery(session, row.uuid)
    finally:
        db.dispose()
    assert host is not None
    fenced = FencedHost(host.name, host.segment_name, host.failover_segment_id)
    specs = [spec for spec in fencing.drivers_for(fenced) if spec.type == CEPH]
    if not specs:
        raise CommandError(f"Host {host.name} has no ceph entry in {fencing.path}")
    failed = False
    for spec in specs:
        try:
            blocklist = CephBlocklist(spec)
            removed = blocklist.remove(blocklist.ips())
        except FenceError as exc:
            print(f"{spec.describe()}: {exc.why}")
            failed = True
            continue
        shown = ", ".join(entity(ip) for ip in removed)
        print(f"{spec.describe()}: " + (f"removed {shown}" if removed else "not blocklisted"))
    if failed:
        raise CommandError("Result: the blocklist of some address may remain")


def _add_planning_parsers(subparsers: Any) -> None:
    host = subparsers.add_parser("host", help="hosts: recovery plans, Ceph blocklist")
    actions = host.add_subparsers(dest="action")
    actions.required = True
    plan = actions.add_parser("plan", help="what recovering HOST would do now (changes nothing)")
    plan.add_argument("host_name", metavar="HOST", help="the host's name")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    lift = actions.add_parser(
        "unblocklist", help="lift storage fencing's Ceph blocklist of HOST (its ceph entries)"
    )
    lift.add_argument("host_name", metavar="HOST", help="the host's name")
    manage_quarantine.add_host_parser(actions)
    segment = subparsers.add_parser("segment", help="segments: readiness checks")
    actions = segment.add_subparsers(dest="action")
    actions.required = True
    check = actions.add_parser("check", help="can the segment(s) recover a host failure now?")
    check.add_argument("segment", nargs="?", default=None, help="uuid or name (default: all)")
    hold = actions.add_parser(
        "hold-room", help="hold the failover room in Placement now ([capacity] hold_room)"
    )
    hold.add_argument("segment", nargs="?", default=None, help="uuid or name (default: all)")
    give = actions.add_parser("release-room", help="give back the failover room held in Placement")
    give.add_argument("segment", nargs="?", default=None, help="uuid or name (default: all)")


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
    _print_table(table)


def _print_table(table: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )


MAX_SHADOW_REPORTS = 1000


def detection_shadow(conf: cfg.ConfigOpts) -> None:
    """What the failure detector in shadow mode would have done in the last ``--hours``
    (docs/operations.md § Shadow mode), oldest first."""
    since = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    since -= datetime.timedelta(hours=conf.category.hours)
    db = Database.from_conf(conf)
    try:
        with db.reader() as session:
            found = detector_shadow.listed(session, since, MAX_SHADOW_REPORTS)
    finally:
        db.dispose()
    if not found:
        print(f"no shadow report in the last {conf.category.hours:g} hour(s)")
        return
    table = [("time", "host", "segment", "would", "gate", "engine", "detail")]
    for row in found:
        table.append(
            (
                row.observed_at.isoformat(sep=" ", timespec="seconds"),
                row.host_name,
                row.segment_uuid,
                row.decision,
                _dash(row.gate),
                row.engine,
                row.detail,
            )
        )
    _print_table(table)
    if len(found) == MAX_SHADOW_REPORTS:
        print(f"(the newest {MAX_SHADOW_REPORTS} only: give a shorter --hours)")


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


def config_recommended(conf: cfg.ConfigOpts) -> None:
    """Print the recommended settings, or add those FILE lacks (``--merge FILE``)."""
    target = conf.category.merge
    if target is None:
        print(recommended.TEXT, end="")
        return
    try:
        added = recommended.merge(target)
    except (OSError, configparser.Error) as exc:
        raise CommandError(f"Cannot merge into {target}: {exc}") from exc
    if not added:
        print(f"{target} already sets every recommended option.")
        return
    print(f"Added to {target}:")
    for line in added:
        print(f"  {line}")


# Commands that read no database (check_database_configured is not asked).
NO_DATABASE = {("config", "recommended")}

COMMANDS: dict[str, dict[str, Callable[[cfg.ConfigOpts], None]]] = {
    "config": {"recommended": config_recommended},
    "db": {"sync": db_sync, "version": db_version, "purge": db_purge},
    "notification": {
        "release": notification_release,
        "cancel": notification_cancel,
        "show": notification_show,
    },
    "host": {
        "plan": host_plan,
        "unblocklist": host_unblocklist,
        "quarantine": manage_quarantine.host_quarantine,
    },
    "quarantine": manage_quarantine.COMMANDS,
    "segment": {
        "check": segment_check,
        "hold-room": segment_hold_room,
        "release-room": segment_release_room,
    },
    "engine": {"list": engine_list},
    "detection": {"shadow": detection_shadow},
    "drill": {
        "run": lambda conf: _drill("run", conf),
        "show": lambda conf: _drill("show", conf),
        "list": lambda conf: _drill("list_", conf),
    },
}


def _drill(command: str, conf: cfg.ConfigOpts) -> None:
    """Fire drills (masakari.cmd.drill): their failures as this command's."""
    from masakari.cmd import drill

    try:
        getattr(drill, command)(conf)
    except drill.DrillCommandFailed as exc:
        raise CommandError(str(exc)) from exc


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
    notification = subparsers.add_parser("notification", help="one notification")
    verbs = notification.add_subparsers(dest="action")
    verbs.required = True
    for verb, text in (("release", "let the engine recover"), ("cancel", "end, unrecovered")):
        verb_parser = verbs.add_parser(verb, help=f"{text} a held notification")
        verb_parser.add_argument("notification_uuid", help="the notification's uuid")
    show = verbs.add_parser("show", help="the recovery as a timeline")
    show.add_argument("uuid", help="the notification's uuid")
    show.add_argument("--html", metavar="FILE", help="also write the timeline as an HTML page")

    _add_planning_parsers(subparsers)
    manage_quarantine.add_parsers(subparsers)
    config = subparsers.add_parser("config", help="masakari.conf")
    actions = config.add_subparsers(dest="action")
    actions.required = True
    rec = actions.add_parser(
        "recommended", help="the recommended settings (etc/masakari/masakari.conf.recommended)"
    )
    rec.add_argument(
        "--merge", metavar="FILE", help="add each recommended setting FILE does not set yet"
    )
    engine = subparsers.add_parser("engine", help="the masakari-engine processes")
    actions = engine.add_subparsers(dest="action")
    actions.required = True
    actions.add_parser("list", help="each engine and its last heartbeat")
    from masakari.cmd import drill

    drill.add_parsers(subparsers)
    detection = subparsers.add_parser("detection", help="the failure detector")
    actions = detection.add_subparsers(dest="action")
    actions.required = True
    shadow = actions.add_parser("shadow", help="what the detector in shadow mode would have done")
    shadow.add_argument(
        "--hours", type=float, default=168.0, help="of the last HOURS (default: 168, a week)"
    )


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
    # Names, messages and payloads come from tenants, Nova and monitors: whatever a command
    # prints reaches the operator's terminal inert (masakari.terminal).
    with terminal.guarded_output():
        return _run(conf, command)


def _run(conf: cfg.ConfigOpts, command: Callable[[cfg.ConfigOpts], None]) -> int:
    try:
        if (conf.category.name, conf.category.action) not in NO_DATABASE:
            check_database_configured(conf)
        command(conf)
    except CommandError as exc:
        print(exc, file=sys.stderr)
        return exc.code
    except manage_quarantine.QuarantineCommandError as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILED
    except cfg.ConfigFileValueError as exc:
        # oslo.config converts a value when it is first read: the message names the option.
        print(f"masakari-manage: {exc}", file=sys.stderr)
        return EXIT_USAGE
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

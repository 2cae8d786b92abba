"""Failover room kept out of reach of new boots ([capacity] hold_room): the room each
segment needs to absorb its target of host failures (masakari.engine.tolerance.room) added
to the ``reserved`` amounts of its hosts' Placement inventories, which Nova's scheduler
honours; released at once for a host failure's recovery, which may then use it.

What is held is recorded before it is written (masakari.db.room_holds), so that turning it
off, or ``masakari-manage segment release-room``, restores exactly the amounts Placement had.
A reserved amount another wrote since (nova-compute writes its own when it refreshes its
inventory, every ``[compute] resource_provider_association_refresh`` seconds and at its
start) is taken as the new base: the next pass adds the room to it again.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from oslo_config import cfg
from sqlalchemy import orm

from masakari import exception
from masakari.compute.placement import GenerationConflict, ProviderInventory, Resources
from masakari.db import room_holds
from masakari.db.database import Database, read, transaction
from masakari.db.models import RoomHold
from masakari.db.paging import Row
from masakari.engine import tolerance
from masakari.engine.capacity import Inventories, ours, unheld
from masakari.engine.ports import NovaReads

LOG = logging.getLogger(__name__)

# Writes refused because the provider changed meanwhile (nova-compute, another write), each
# read again and retried this many times before the pass gives up on the inventory.
CONFLICT_TRIES = 5

HELD = "held"
RELEASED = "released"
OFF = "off"
FAILED = "failed"


@runtime_checkable
class PlacementWrites(Inventories, Protocol):
    def set_reserved(self, found: ProviderInventory, resource_class: str, reserved: int) -> int: ...


@dataclasses.dataclass(frozen=True)
class Pass:
    """One segment after a holding pass: ``state`` held, released (for ``released_for``),
    off (no target, or hold_room off) or failed (``reason``); ``held`` per host and class,
    in the inventories' units."""

    segment: str
    state: str
    held: dict[str, Resources]
    released_for: str | None = None
    reason: str = ""


def held_of(db: Database, segment_uuid: str | None = None) -> dict[str, Resources]:
    """What masakari holds now, per host and resource class (the records)."""
    with db.reader() as session:
        records = room_holds.rows(session, segment_uuid)
    held: dict[str, Resources] = {}
    for record in records:
        held.setdefault(record.host_name, {})[record.resource_class] = record.held
    return held


class Room:
    def __init__(
        self, conf: cfg.ConfigOpts, db: Database, nova: NovaReads, placement: PlacementWrites
    ) -> None:
        self.conf = conf
        self.db = db
        self.nova = nova
        self.placement = placement

    # --- the engine's periodic pass ---------------------------------------------------------

    def hold_all(self) -> list[Pass]:
        """Every segment's room as the configuration wants it: held to its target with
        hold_room on, restored everywhere with it off. A segment whose pass fails (Nova or
        Placement) is reported and the others go on; the next pass tries it again."""
        on = bool(self.conf.capacity.hold_room)
        with self.db.reader() as session:
            recorded = set(room_holds.held_segments(session))
        done = []
        for seg, hosts in tolerance.segments(self.db):
            if not on and seg.uuid not in recorded:
                continue
            try:
                done.append(self.hold(seg, hosts) if on else self.restore(seg.uuid, seg.name))
            except exception.NovaError as exc:
                LOG.warning("Failover room of segment %s not settled: %s", seg.name, exc)
                done.append(Pass(seg.name, FAILED, held_of(self.db, seg.uuid), reason=str(exc)))
        return done

    def hold(self, seg: Row, hosts: list[Row]) -> Pass:
        """Hold the segment's room for its target: add what is missing, take back what is no
        longer needed. Nothing is written while a host failure of the segment is recovered."""
        with self.db.reader() as session:
            state = room_holds.segment_state(session, seg.uuid)
            released_for = state.released_for if state is not None else None
            busy = room_holds.recovering(session, seg.uuid)
        if released_for is not None and released_for != busy:
            with self.db.writer() as session:
                room_holds.end_release(session, seg.uuid, released_for)
            released_for = None
        if busy is not None:
            return Pass(seg.name, RELEASED, held_of(self.db, seg.uuid), released_for=busy)
        target = tolerance.target_of(self.conf, seg)
        need: dict[str, Resources] = {}
        if target:
            view = unheld(self.db, self.placement)
            need = tolerance.room(self.conf, self.nova, view, seg, hosts, target)
        with self.db.reader() as session:
            records = {(r.host_name, r.resource_class) for r in room_holds.rows(session, seg.uuid)}
        wanted = {(h, rc) for h, amounts in need.items() for rc, n in amounts.items() if n}
        classes: dict[str, list[str]] = {}
        for host, rc in sorted(wanted | records):
            classes.setdefault(host, []).append(rc)
        for host, rcs in classes.items():
            # One read per host: each write's answer carries the generation the next needs.
            found = self.placement.inventory(host)
            for rc in rcs:
                found = self._settle(seg.uuid, host, rc, need.get(host, {}).get(rc, 0), found)
        return Pass(seg.name, HELD if target else OFF, held_of(self.db, seg.uuid))

    def restore(self, segment_uuid: str, name: str | None = None) -> Pass:
        """Give Placement back what it had without masakari, and forget the segment."""
        with self.db.reader() as session:
            records = room_holds.rows(session, segment_uuid)
        for record in records:
            self._restore(record)
        with self.db.writer() as session:
            if not room_holds.rows(session, segment_uuid):
                room_holds.drop_segment(session, segment_uuid)
        return Pass(name or segment_uuid, OFF, held_of(self.db, segment_uuid))

    # --- a recovery ------------------------------------------------------------------------

    def release(
        self,
        segment_uuid: str,
        notification_uuid: str,
        retry_while: Callable[[], None],
    ) -> int:
        """Release the segment's room for a host failure's recovery: from now on no holding
        pass writes to it until that recovery is over, and every amount held is given back.
        Returns how many inventories were given back; nothing is read or written for a
        segment whose room was never held. ``retry_while``: an unreachable database is
        waited for while it does not raise (the recovery's lease), as the recovery's own
        reads and writes are."""

        def held(session: orm.Session) -> bool:
            never = room_holds.segment_state(session, segment_uuid) is None
            return not never or bool(room_holds.rows(session, segment_uuid))

        if not read(self.db, held, retry_while):
            return 0
        transaction(
            self.db,
            lambda session: room_holds.release_for(session, segment_uuid, notification_uuid),
            retry_while,
        )
        records = read(
            self.db,
            lambda session: _detached(room_holds.rows(session, segment_uuid), session),
            retry_while,
        )
        for record in records:
            self._restore(record, retry_while)
        return len(records)

    # --- one inventory ---------------------------------------------------------------------

    def _settle(
        self, segment_uuid: str, host: str, rc: str, amount: int, found: ProviderInventory | None
    ) -> ProviderInventory | None:
        """Make the inventory reserve its base plus ``amount`` (capacity units) of room.
        ``found``: the host's inventories as last read, read again after a conflict; returns
        them as they are after this."""
        for attempt in range(CONFLICT_TRIES):
            if attempt:
                found = self.placement.inventory(host)
            inv = None if found is None else found.inventories.get(rc)
            record = self._record(host, rc)
            if found is None or inv is None:
                if record is not None:
                    self._forget(record.provider_uuid, rc)
                return found
            current = int(inv.get("reserved", 0))
            base = current - ours(record, current) if record is not None else current
            units = math.ceil(amount / float(inv.get("allocation_ratio", 1.0))) if amount else 0
            wanted = min(int(inv["total"]), base + units)
            if wanted == current:
                # Nothing to send; the record says what is there (none once nothing is held).
                with self.db.writer() as session:
                    if wanted == base:
                        room_holds.forget(session, found.uuid, rc)
                    elif room_holds.intend(
                        session, segment_uuid, host, found.uuid, rc, base, wanted
                    ):
                        room_holds.wrote(session, found.uuid, rc, wanted)
                return found
            with self.db.writer() as session:
                if not room_holds.intend(session, segment_uuid, host, found.uuid, rc, base, wanted):
                    return found
            try:
                generation = self.placement.set_reserved(found, rc, wanted)
            except GenerationConflict:
                continue
            with self.db.writer() as session:
                room_holds.wrote(session, found.uuid, rc, wanted)
            return dataclasses.replace(
                found,
                generation=generation,
                inventories={**found.inventories, rc: {**inv, "reserved": wanted}},
            )
        raise exception.NovaError(
            f"Placement kept changing the {rc} inventory of {host}: its room is not settled."
        )

    def _restore(self, record: RoomHold, retry_while: Callable[[], None] | None = None) -> None:
        rc = record.resource_class
        for _ in range(CONFLICT_TRIES):
            found = self.placement.inventory(record.host_name)
            inv = None if found is None else found.inventories.get(rc)
            if found is None or inv is None or found.uuid != record.provider_uuid:
                break
            current = int(inv.get("reserved", 0))
            if current not in (record.written, record.pending) or current == record.base_reserved:
                break  # another's amount since, or given back already
            try:
                self.placement.set_reserved(found, rc, record.base_reserved)
            except GenerationConflict:
                continue
            break
        else:
            raise exception.NovaError(
                f"Placement kept changing the {rc} inventory of {record.host_name}: "
                "its held room is not given back."
            )
        self._forget(record.provider_uuid, rc, retry_while)

    def _record(self, host: str, rc: str) -> RoomHold | None:
        with self.db.reader() as session:
            record = room_holds.row(session, host, rc)
            if record is not None:
                session.expunge(record)
            return record

    def _forget(
        self, provider_uuid: str, rc: str, retry_while: Callable[[], None] | None = None
    ) -> None:
        transaction(
            self.db, lambda session: room_holds.forget(session, provider_uuid, rc), retry_while
        )


def _detached(rows: list[RoomHold], session: orm.Session) -> list[RoomHold]:
    for row in rows:
        session.expunge(row)
    return rows


def shown(db: Database, segment_uuid: str) -> dict[str, object]:
    """API 1.9's ``held`` in a segment's failures_tolerated: what masakari adds to each host's
    reserved amounts now, and the recovery the room is released for (None: not released)."""
    with db.reader() as session:
        state = room_holds.segment_state(session, segment_uuid)
        released_for = state.released_for if state is not None else None
    held = held_of(db, segment_uuid)
    return {
        "hosts": {h: dict(sorted(a.items())) for h, a in sorted(held.items())},
        "released_for": released_for,
    }

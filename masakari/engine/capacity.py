"""Capacity of evacuation targets, as the engine and recovery plans both judge it.

Capacity is Placement's: a target's free room is its (total - reserved) * allocation_ratio
minus its usage, per resource class; an instance needs what its flavor allocates. Targets are
filled greedily in evacuation order, as the engine sends the evacuations, and an instance
that fits nowhere is left behind while smaller ones after it may still fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from masakari import exception
from masakari.compute.placement import HostCapacity, ProviderInventory, describe
from masakari.compute.servers import first_service
from masakari.db import room_holds
from masakari.db.database import Database
from masakari.engine.ports import NovaReads
from masakari.engine.selection import Instance


class Capacities(Protocol):
    def host_capacity(self, name: str) -> HostCapacity | None: ...


@runtime_checkable
class Inventories(Capacities, Protocol):
    def inventory(self, name: str) -> ProviderInventory | None: ...


class HeldRecord(Protocol):
    """What masakari added to one inventory's reserved amount (masakari.db.room_holds)."""

    host_name: str
    resource_class: str
    base_reserved: int
    written: int | None
    pending: int | None


def ours(record: HeldRecord, reserved: int) -> int:
    """How much of ``reserved`` masakari holds: all above the base while the amount is one
    it wrote or was writing; none once another wrote it (nova-compute refreshing its
    inventory)."""
    if reserved in (record.written, record.pending):
        return max(0, reserved - record.base_reserved)
    return 0


class Unheld:
    """Placement's capacities with the room masakari holds counted as free: failover may
    use it (a recovery releases it first), so judging failover on it must too."""

    def __init__(self, placement: Inventories, records: Iterable[HeldRecord]) -> None:
        self._placement = placement
        self._records: dict[str, list[HeldRecord]] = {}
        for record in records:
            self._records.setdefault(record.host_name, []).append(record)

    def host_capacity(self, name: str) -> HostCapacity | None:
        records = self._records.get(name)
        if not records:
            return self._placement.host_capacity(name)
        found = self._placement.inventory(name)
        if found is None:
            return None
        back = {}
        for record in records:
            inv = found.inventories.get(record.resource_class)
            if inv is not None:
                back[record.resource_class] = ours(record, int(inv.get("reserved", 0)))
        return found.capacity(back)


def unheld(db: Database, placement: Capacities) -> Capacities:
    """Placement's capacities with the room masakari holds ([capacity] hold_room) counted
    as free; Placement itself while none is held (no extra read), or when it cannot tell
    its inventories (a plain capacity source)."""
    if not isinstance(placement, Inventories):
        return placement
    with db.reader() as session:
        records = room_holds.rows(session)
        for record in records:
            session.expunge(record)
    return Unheld(placement, records) if records else placement


class UnknownCapacity(exception.NovaError):
    """A target host has no Placement resource provider of its name (a compute node named
    after an FQDN, say): its room cannot be told, so nothing is decided on capacity."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(
            "Placement has no resource provider named " + ", ".join(f"'{n}'" for n in names)
        )
        self.names = list(names)


def fit(
    instances: Sequence[Instance], targets: Sequence[HostCapacity]
) -> list[tuple[Instance, str | None]]:
    """Each instance, in order, with the first target that still has room (None: none has).

    The targets' usage grows with what they take: pass copies when the data is to be reused.
    """
    placed: list[tuple[Instance, str | None]] = []
    for inst in instances:
        target = next((t for t in targets if t.fits(inst.resources)), None)
        if target is not None:
            target.take(inst.resources)
        placed.append((inst, target.name if target else None))
    return placed


def rank_reserved_hosts(
    reserved: Sequence[str], instances: Sequence[Instance], capacities: Capacities
) -> list[str]:
    """The reserved hosts that can hold all ``instances`` first (each in the given order), then
    the others: the engine tries them in this order."""
    holding = []
    for name in reserved:
        cap = capacities.host_capacity(name)
        if cap is not None and all(t for _, t in fit(instances, [cap])):
            holding.append(name)
    return holding + [name for name in reserved if name not in holding]


def usable_peers(nova: NovaReads, peers: Iterable[str]) -> list[str]:
    """The hosts whose nova-compute is enabled and up: where Nova's scheduler may place."""
    usable = []
    for name in peers:
        service = first_service(nova.find_compute_services(name))
        if service is not None and service.usable:
            usable.append(name)
    return usable


def copies(capacities: Capacities, names: Iterable[str]) -> list[HostCapacity]:
    """Fresh capacities of ``names``; UnknownCapacity when Placement lacks any of them."""
    found, missing = [], []
    for name in names:
        cap = capacities.host_capacity(name)
        if cap is None:
            missing.append(name)
        else:
            found.append(cap)
    if missing:
        raise UnknownCapacity(missing)
    return found


def split_by_capacity(
    instances: Sequence[Instance],
    nova: NovaReads,
    capacities: Capacities,
    *,
    reserved_host: str | None,
    peers: Iterable[str],
) -> list[Instance]:
    """The instances (in order) that no target has room for: the reserved host, or for the
    scheduler the peers whose nova-compute is enabled and up."""
    names = [reserved_host] if reserved_host else usable_peers(nova, peers)
    return [inst for inst, where in fit(instances, copies(capacities, names)) if where is None]


def no_room(inst: Instance) -> str:
    return f"No target has room for {describe(inst.resources)}."


class NoPlacement:
    """For a run given no Placement client: every capacity check fails, and is said."""

    def host_capacity(self, name: str) -> HostCapacity | None:
        raise exception.NovaError("No Placement client was given to this engine.")

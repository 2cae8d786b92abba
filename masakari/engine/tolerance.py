"""Failures tolerated: how many of a segment's hosts can fail at once, every instance that
would be evacuated still placed. Reads only (Nova's services and servers, Placement).

k is judged as recovery plans judge one failure (masakari.engine.plan): the engine's
selection (rules, scope, safety: what moves and what stays) and its capacity model
(masakari.engine.capacity.fit on Placement's (total - reserved) * allocation_ratio minus
usage). The targets are the segment's, by recovery method: the usable other hosts for
``auto`` (where the scheduler may place), the reserved hosts for ``reserved_host``, and both
in the order the method tries them for ``auto_priority`` (the other hosts, then the spares
for what the auto flow left) and ``rh_priority`` (the spares first).

The worst case: a set of k failed hosts is the k hosts whose instances need the most room
(the largest share of the segment's capacity of any one resource class, then the most
VCPU, MEMORY_MB and DISK_GB, then the name), or, while the number of sets stays small
(EXACT_SETS over all sizes), every set of k hosts, spares included: a spare that fails
carries nothing but takes its room away. Why by size: what a failure costs is the room its
instances need, and the free room left by the others is what must cover it, so the largest
hosts failing together is the failure the room is shortest for; it is also how operators
size N+k (vSphere's and Nutanix's admission control reserve for the largest hosts). Its
limit: with several resource classes and greedy first-fit packing, the largest are not
always the worst (two mid-sized hosts whose instances fit nowhere together, or a spare
failing with a host, can break a segment earlier). Every set cannot be tried beyond the
bound, since their number grows exponentially with the segment's size; ``exact`` says
which was judged (once a size is judged by the largest alone, every larger one is too).
Whether a set fits is the engine's own greedy fit, not the best packing: what the engine
would do, not what a perfect placement could.

Hosts already gone count as failed and move nothing more: on maintenance in masakari (a
failure being recovered, or an operator's), without a nova-compute service, or not usable in
Nova (a disabled or down host that is no spare; a spare forced down or down). A resource
class no host of the segment inventories (DISK_GB on shared storage) is not counted.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import math
from collections.abc import Sequence
from typing import Any

from oslo_config import cfg

from masakari import exception
from masakari.compute.placement import HostCapacity, Resources, add
from masakari.compute.servers import Service, first_service
from masakari.db import hosts as hosts_db
from masakari.db import segments as segments_db
from masakari.db.database import Database
from masakari.db.models import Host, Segment, utcnow
from masakari.db.paging import Row
from masakari.db.statuses import RecoveryMethod
from masakari.engine import capacity, selection
from masakari.engine.capacity import Capacities
from masakari.engine.ports import NovaReads
from masakari.engine.selection import Instance

# Sets of failed hosts tried one by one before the worst case by size alone is judged.
EXACT_SETS = 1000
# ``limiting`` when no target host is left at all.
NO_HOST = "hosts"


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """A segment's failures tolerated, and why not one more."""

    segment: str
    k: int | None  # None: not computed (``reason`` says why)
    target: int  # 0: no target
    limiting: str | None  # the resource class that runs out first, NO_HOST, or None
    worst_case: list[str]  # the k + 1 hosts whose failure leaves instances behind
    left_behind: int  # how many of their instances
    in_service: int  # the hosts counted (not gone)
    exact: bool  # every set of k + 1 hosts tried, not only the largest
    reason: str
    computed_at: datetime.datetime

    @property
    def below_target(self) -> bool:
        return self.k is not None and self.k < self.target

    def view(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "target": self.target,
            "below_target": self.below_target,
            "limiting_resource": self.limiting,
            "worst_case_hosts": list(self.worst_case),
            "left_behind": self.left_behind,
            "hosts_in_service": self.in_service,
            "exact": self.exact,
            "reason": self.reason,
            "computed_at": self.computed_at.isoformat(timespec="seconds"),
        }


def target_of(conf: cfg.ConfigOpts, seg: Segment | Row) -> int:
    """[capacity] segment_failures_to_tolerate for the segment (its name or uuid), else
    failures_to_tolerate. oslo.config checks the values: one that is no count of hosts
    raises ConfigFileValueError, naming the option."""
    options = conf.capacity
    targets = options.segment_failures_to_tolerate
    for key in (seg.uuid, seg.name):
        if key in targets:
            return int(targets[key])
    return int(options.failures_to_tolerate)


@dataclasses.dataclass(frozen=True)
class _Segment:
    """What one computation reads once: hosts in service, their room and what they carry."""

    method: str
    spares: list[str]  # reserved hosts in service, in the segment's order
    peers: list[str]  # hosts whose nova-compute is enabled and up
    caps: dict[str, HostCapacity]
    moving: dict[str, list[Instance]]

    def targets(self, failed: Sequence[str]) -> list[HostCapacity]:
        spares = [h for h in self.spares if h not in failed]
        peers = [h for h in self.peers if h not in failed]
        if self.method == RecoveryMethod.AUTO:
            names = peers
        elif self.method == RecoveryMethod.RESERVED_HOST:
            names = spares
        elif self.method == RecoveryMethod.RH_PRIORITY:
            names = spares + [h for h in peers if h not in spares]
        else:  # auto_priority
            names = peers + [h for h in spares if h not in peers]
        return [_copy(self.caps[name]) for name in names]

    def left_behind(self, failed: Sequence[str]) -> tuple[list[Instance], str | None]:
        """What ``failed`` failing at once leaves behind, and the class that ran out."""
        targets = self.targets(failed)
        instances = [inst for name in failed for inst in self.moving[name]]
        left = [inst for inst, where in capacity.fit(instances, targets) if where is None]
        return left, (_short(left[0], targets) if left else None)


def segments(db: Database, wanted: str | None = None) -> list[tuple[Row, list[Row]]]:
    """Every segment (or the one, uuid or name; SegmentNotFound otherwise) with its hosts,
    oldest first: what the readiness doctor and this module judge."""
    with db.reader() as session:
        rows = segments_db.list_(session, {}, ["created_at"], ["asc"], None, None)
        if wanted is not None:
            rows = [r for r in rows if wanted in (r.uuid, r.name)]
            if not rows:
                raise exception.SegmentNotFound(id=wanted)
        found = []
        for seg in rows:
            hosts = hosts_db.list_(session, seg.uuid, {}, ["created_at"], ["asc"], None, None)
            found.append((seg, list(hosts)))
        return found


def of_segments(
    conf: cfg.ConfigOpts,
    db: Database,
    nova: NovaReads,
    placement: Capacities,
    wanted: str | None = None,
) -> list[Tolerance]:
    """The failures each segment (or the one, uuid or name) tolerates now: shown beside the
    readiness doctor's findings (API 1.8, ``masakari-manage segment check``), never among
    them, so that the 1.5-1.7 bodies stay as they were."""
    now = utcnow()
    view = capacity.unheld(db, placement)
    return [compute(conf, nova, view, seg, hosts, now) for seg, hosts in segments(db, wanted)]


def compute(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    seg: Segment | Row,
    hosts: Sequence[Host] | Sequence[Row],
    now: datetime.datetime,
) -> Tolerance:
    """The segment's failures tolerated now. Nova's and Placement's errors (NovaError,
    UnknownCapacity among them) give k None and say why."""
    target = target_of(conf, seg)

    def result(k: int | None, reason: str, **rest: Any) -> Tolerance:
        fields: dict[str, Any] = {
            "limiting": None,
            "worst_case": [],
            "left_behind": 0,
            "in_service": 0,
            "exact": True,
        }
        fields.update(rest)
        return Tolerance(seg.name, k, target, reason=reason, computed_at=now, **fields)

    try:
        found = _read(conf, nova, placement, seg, hosts)
    except exception.NovaError as exc:
        return result(None, f"Cannot compute: {exc}")
    ordered = _worst_first(found)
    counted = len(ordered)
    budget, exact = EXACT_SETS, True
    for size in range(1, counted + 1):
        # Once only the largest are judged, k rests on that judgement: it stays so.
        sets = math.comb(counted, size)
        exact = exact and sets <= budget
        budget -= sets if exact else 0
        tried = itertools.combinations(ordered, size) if exact else [tuple(ordered[:size])]
        for failed in tried:
            left, limiting = found.left_behind(failed)
            if left:
                return result(
                    size - 1,
                    f"Losing {', '.join(failed)} at once leaves {len(left)} instance(s) "
                    f"behind: {_missing(limiting)}.",
                    limiting=limiting,
                    worst_case=list(failed),
                    left_behind=len(left),
                    in_service=counted,
                    exact=exact,
                )
    return result(
        counted,
        f"All {counted} host(s) in service can fail: no instance would be left behind."
        if counted
        else "No host in service.",
        in_service=counted,
    )


def room(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    seg: Segment | Row,
    hosts: Sequence[Host] | Sequence[Row],
    size: int,
) -> dict[str, Resources]:
    """The room each host must keep free so that any ``size`` of the segment's hosts can
    fail at once (those judged, as :func:`compute` judges them): per host and resource class,
    the most that one such failure places there by the engine's fit. Only hosts Nova's
    scheduler may place new boots on (enabled and up) are listed: a disabled spare keeps its
    room without help. A failure that leaves instances behind still has the room of those
    that fit kept. Nova's and Placement's errors raise (NovaError)."""
    found = _read(conf, nova, placement, seg, hosts)
    ordered = _worst_first(found)
    size = min(size, len(ordered))
    if size <= 0:
        return {}
    if math.comb(len(ordered), size) <= EXACT_SETS:
        tried: Any = itertools.combinations(ordered, size)
    else:
        tried = [tuple(ordered[:size])]
    kept: dict[str, Resources] = {}
    for failed in tried:
        instances = [inst for name in failed for inst in found.moving[name]]
        placed: dict[str, Resources] = {}
        for inst, where in capacity.fit(instances, found.targets(failed)):
            if where is not None and where in found.peers:
                placed[where] = add(placed.get(where, {}), inst.resources)
        # The most over every failure: whichever comes must find its room.
        for name, need in placed.items():
            have = kept.setdefault(name, {})
            for rc, amount in need.items():
                have[rc] = max(have.get(rc, 0), amount)
    return kept


def _read(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    seg: Segment | Row,
    hosts: Sequence[Host] | Sequence[Row],
) -> _Segment:
    spares, peers, counted = [], [], []
    for host in hosts:
        if host.on_maintenance:
            continue
        service = first_service(nova.find_compute_services(host.name))
        if service is None:
            continue
        if service.usable:
            peers.append(host.name)
        elif not (host.reserved and _spare_ready(service)):
            continue
        if host.reserved:
            spares.append(host.name)
        counted.append(host.name)
    caps = {c.name: c for c in capacity.copies(placement, counted)}
    # A class no host inventories is held elsewhere (a sharing provider) or not at all.
    kept = {rc for cap in caps.values() for rc in cap.capacity}
    moving = {}
    for name in counted:
        listed = nova.list_servers_on_host(name)
        chosen = selection.select(conf, nova, name, listed, None).moving()
        moving[name] = [
            dataclasses.replace(
                inst, resources={rc: n for rc, n in inst.resources.items() if rc in kept}
            )
            for inst in chosen
        ]
    return _Segment(seg.recovery_method, spares, peers, caps, moving)


def _spare_ready(service: Service) -> bool:
    """A disabled spare is what a spare should be (recovery enables it); a down one is not."""
    return not service.forced_down and service.state == "up"


def _worst_first(found: _Segment) -> list[str]:
    """The hosts counted, those whose instances need the most room first."""
    total: Resources = {}
    for cap in found.caps.values():
        total = add(total, cap.capacity)
    need: dict[str, Resources] = {}
    for name, instances in found.moving.items():
        need[name] = {}
        for inst in instances:
            need[name] = add(need[name], inst.resources)

    def key(name: str) -> tuple[float, int, int, int, str]:
        have = need[name]
        share = max((n / total[rc] for rc, n in have.items() if total.get(rc)), default=0.0)
        sizes = (have.get("VCPU", 0), have.get("MEMORY_MB", 0), have.get("DISK_GB", 0))
        return (-share, -sizes[0], -sizes[1], -sizes[2], name)

    return sorted(found.moving, key=key)


def _short(inst: Instance, targets: Sequence[HostCapacity]) -> str:
    """The class the instance lacks most: the lowest ratio of the largest free amount any
    target still has to what it needs (ties by name); NO_HOST without targets."""
    if not targets:
        return NO_HOST
    ratios = {
        rc: max(t.free().get(rc, 0) for t in targets) / amount
        for rc, amount in inst.resources.items()
        if amount
    }
    if not ratios:
        return NO_HOST
    return min(sorted(ratios), key=lambda rc: ratios[rc])


def _missing(limiting: str | None) -> str:
    if limiting == NO_HOST:
        return "no target host is left"
    return f"{limiting} runs out first"


def _copy(cap: HostCapacity) -> HostCapacity:
    return HostCapacity(cap.name, cap.provider_uuid, dict(cap.capacity), dict(cap.used))


def line(found: Tolerance) -> str:
    """For people: ``k=1 (target 2, below): <reason>``."""
    k = "unknown" if found.k is None else str(found.k)
    if found.target:
        k += f" (target {found.target}{', below' if found.below_target else ''})"
    return f"k={k}: {found.reason}"

"""The readiness doctor: can each segment recover a host failure now? Reads only.

Findings carry masakari-status's codes (0 success, 1 warning, 2 failure); a run's code is its
worst finding's. Per segment: every host is a nova-compute service; reserved hosts are
disabled in Nova and, where the recovery method takes them, not down there; the segment can
absorb the loss of its largest host (Placement). Once: the Nova account can read what
recovery reads; the database, the broker and the coordination backend, when configured,
answer; the policy file loads. With host fencing, each host's fencing drivers answer
(masakari.ha.fence_doctor).
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from oslo_config import cfg

from masakari import exception, policy
from masakari.compute.placement import HostCapacity, describe
from masakari.compute.servers import Service
from masakari.db import fencing
from masakari.db.database import Database
from masakari.db.models import Host, Segment
from masakari.db.paging import Row
from masakari.db.statuses import RecoveryMethod
from masakari.engine import capacity, selection, tolerance
from masakari.engine.capacity import Capacities
from masakari.engine.ports import NovaReads
from masakari.ha import fence_doctor

SUCCESS, WARNING, FAILURE = 0, 1, 2
LABELS = {SUCCESS: "OK", WARNING: "WARNING", FAILURE: "FAILURE"}
# The recovery methods that evacuate to a reserved host (auto_priority after auto failed).
TAKES_SPARES = (
    RecoveryMethod.RESERVED_HOST,
    RecoveryMethod.AUTO_PRIORITY,
    RecoveryMethod.RH_PRIORITY,
)
CONNECT_TIMEOUT = 3.0


@dataclasses.dataclass(frozen=True)
class Finding:
    code: int
    check: str
    detail: str
    segment: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "status": LABELS[self.code].lower(),
            "check": self.check,
            "segment": self.segment,
            "detail": self.detail,
        }


class NovaProbe(NovaReads, Protocol):
    """The Nova reads the doctor makes: the engine's."""


def worst(findings: Sequence[Finding]) -> int:
    return max((f.code for f in findings), default=SUCCESS)


def check(
    conf: cfg.ConfigOpts,
    db: Database,
    nova: NovaProbe,
    placement: Capacities,
    segment: str | None = None,
    fence_checks: Sequence[fencing.Check] | None = None,
) -> list[Finding]:
    """Every finding, for one segment (uuid or name) or all of them.

    ``fence_checks``: host fencing checks made live (masakari-manage, when it can read the
    fencing file); by default, those the engines recorded.
    """
    findings: list[Finding] = []
    try:
        segments = tolerance.segments(db, segment)
        if fence_checks is None:
            fence_checks = fence_doctor.recorded(db)
        placement = capacity.unheld(db, placement)
    except exception.SegmentNotFound:
        raise
    except Exception as exc:  # the database is the one thing every check needs
        return [Finding(FAILURE, "database", f"Cannot read the database: {exc}")]
    findings.append(Finding(SUCCESS, "database", "The database answers."))
    findings.extend(_nova_account(nova, conf.host_failure.check_server_groups))
    for seg, hosts in segments:
        findings.extend(_segment(conf, nova, placement, seg, hosts))
        fenced = fence_doctor.findings(conf, fence_checks, seg.name, [h.name for h in hosts])
        findings.extend(Finding(code, what, detail, seg.name) for code, what, detail in fenced)
    findings.extend(_services(conf))
    findings.append(_policy(conf))
    return findings


def _nova_account(nova: NovaProbe, server_groups: bool) -> list[Finding]:
    """Read-only calls under the policies recovery needs: services, servers of all projects,
    aggregates, and with [host_failure] check_server_groups the server groups of all
    projects. A 403 means the account cannot recover anything."""
    probes: list[tuple[str, Callable[[], object]]] = [
        ("os-services (list)", lambda: nova.find_compute_services("masakari-doctor-probe")),
        ("servers of all projects", lambda: nova.list_servers_on_host("masakari-doctor-probe")),
        ("os-aggregates (list)", nova.list_aggregates),
    ]
    if server_groups:
        probes.append(("server groups of all projects", nova.list_server_groups))
    findings = []
    for what, call in probes:
        try:
            call()
        except exception.NovaError as exc:
            code = FAILURE if exc.status in (401, 403) else WARNING
            findings.append(Finding(code, "nova account", f"Cannot read {what}: {exc}"))
    if not findings:
        findings.append(
            Finding(
                SUCCESS, "nova account", "The Nova account reads services, servers and aggregates."
            )
        )
    return findings


def _segment(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    seg: Segment | Row,
    hosts: list[Host] | list[Row],
) -> list[Finding]:
    name = seg.name
    findings: list[Finding] = []
    present: list[Any] = []
    for host in hosts:
        try:
            services = nova.find_compute_services(host.name)
        except exception.NovaError as exc:
            findings.append(
                Finding(WARNING, "hosts", f"Cannot ask Nova about '{host.name}': {exc}", name)
            )
            continue
        if not services:
            findings.append(
                Finding(FAILURE, "hosts", f"Host '{host.name}' has no nova-compute service.", name)
            )
            continue
        present.append(host)
        if host.reserved and services[0].status == "enabled":
            findings.append(
                Finding(
                    WARNING,
                    "reserved hosts",
                    f"Reserved host '{host.name}' is enabled in Nova: the scheduler fills it, "
                    "so it is no spare.",
                    name,
                )
            )
        if host.reserved and seg.recovery_method in TAKES_SPARES:
            down = _spare_down(host, services[0])
            if down is not None:
                findings.append(Finding(WARNING, "reserved hosts", down, name))
    if not any(f.code for f in findings):
        findings.append(
            Finding(SUCCESS, "hosts", f"{len(hosts)} host(s), each a nova-compute service.", name)
        )
    findings.append(_absorbs_largest(conf, nova, placement, seg, present))
    return findings


def _spare_down(host: Host | Row, service: Service) -> str | None:
    """Why a reserved host could take no evacuation now, or None: its nova-compute is down
    (forced, or not heartbeating). Disabled is what a spare should be (recovery enables it);
    one on maintenance is no candidate anyway."""
    if host.on_maintenance:
        return None
    if service.forced_down:
        why = "forced down"
    elif service.state == "down":
        why = "down"
    else:
        return None
    return (
        f"Reserved host '{host.name}': its nova-compute is {why} in Nova: an evacuation to it "
        "would fail, and the next reserved host be tried."
    )


def _absorbs_largest(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    seg: Segment | Row,
    hosts: list[Host] | list[Row],
) -> Finding:
    """Plan the failure of the busiest non-reserved host and see what would be left behind."""
    name = seg.name
    workers = [h for h in hosts if not h.reserved and not h.on_maintenance]
    if not workers:
        return Finding(SUCCESS, "capacity", "No host in service: nothing to absorb.", name)
    try:
        caps: dict[str, HostCapacity] = {}
        for h in hosts:
            cap = placement.host_capacity(h.name)
            if cap is not None:
                caps[h.name] = cap
        largest = max(workers, key=lambda h: _load(caps.get(h.name)))
        listed = nova.list_servers_on_host(largest.name)
        instances = selection.select(conf, nova, largest.name, listed, None).moving()
        if not instances:
            return Finding(SUCCESS, "capacity", "No instance to evacuate anywhere.", name)
        if seg.recovery_method in (RecoveryMethod.RESERVED_HOST, RecoveryMethod.RH_PRIORITY):
            spares = [
                h.name for h in hosts if h.reserved and not h.on_maintenance and h.name in caps
            ]
            ranked = capacity.rank_reserved_hosts(spares, instances, placement)
            left = [
                i
                for i, t in capacity.fit(instances, capacity.copies(placement, ranked[:1]))
                if not t
            ]
            where = f"reserved host '{ranked[0]}'" if ranked else "no reserved host"
        else:
            peers = [h.name for h in hosts if h.name != largest.name]
            pool = capacity.usable_peers(nova, peers)
            left = [
                i for i, t in capacity.fit(instances, capacity.copies(placement, pool)) if not t
            ]
            where = f"{len(pool)} other host(s) in service"
    except exception.NovaError as exc:
        return Finding(WARNING, "capacity", f"Cannot check capacity: {exc}", name)
    if left:
        need: dict[str, int] = {}
        for inst in left:
            for rc, amount in inst.resources.items():
                need[rc] = need.get(rc, 0) + amount
        return Finding(
            FAILURE,
            "capacity",
            f"Losing '{largest.name}' ({len(instances)} instance(s)) leaves {len(left)} behind "
            f"on {where}: missing room for {describe(need)}.",
            name,
        )
    return Finding(
        SUCCESS,
        "capacity",
        f"Losing '{largest.name}' ({len(instances)} instance(s)): all fit on {where}.",
        name,
    )


def _load(cap: HostCapacity | None) -> tuple[int, int]:
    if cap is None:
        return (-1, -1)
    return (cap.used.get("VCPU", 0), cap.used.get("MEMORY_MB", 0))


def _services(conf: cfg.ConfigOpts) -> list[Finding]:
    findings = []
    transport = _option(conf, None, "transport_url")
    if transport:
        findings.append(_reach("broker", transport, 5672))
    backend = _option(conf, "coordination", "backend_url")
    if backend:
        findings.append(_reach("coordination", backend, None))
    return findings


def _option(conf: cfg.ConfigOpts, group: str | None, name: str) -> str | None:
    try:
        value = getattr(conf, name) if group is None else getattr(getattr(conf, group), name)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return None
    return str(value) if value else None


def _reach(what: str, url: str, default_port: int | None) -> Finding:
    """A TCP connection to each host of ``url`` (credentials are not tried)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    if not netloc:
        return Finding(SUCCESS, what, f"{parts.scheme}:// needs no server.")
    failures = []
    for hostport in netloc.split(","):
        host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        number = int(port) if port.isdigit() else default_port
        if number is None:
            failures.append(f"{hostport}: no port")
            continue
        try:
            socket.create_connection((host.strip("[]"), number), CONNECT_TIMEOUT).close()
        except OSError as exc:
            failures.append(f"{host}:{number}: {exc}")
    if failures:
        return Finding(FAILURE, what, "Unreachable: " + "; ".join(failures))
    return Finding(SUCCESS, what, f"{parts.scheme}:// answers.")


def _policy(conf: cfg.ConfigOpts) -> Finding:
    try:
        enforcer = policy.make_enforcer(conf)
        enforcer.load_rules(force_reload=True)
    except Exception as exc:  # any parse or check error is the finding itself
        return Finding(FAILURE, "policy", f"The policy file does not load: {exc}")
    return Finding(SUCCESS, "policy", "The policy file loads.")

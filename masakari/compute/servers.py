"""Nova's servers, compute services, aggregates, server groups and migrations as masakari reads
them: the ``OS-EXT-*`` keys live here."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from oslo_utils import timeutils

from masakari import exception

VM_STATE = "OS-EXT-STS:vm_state"
TASK_STATE = "OS-EXT-STS:task_state"
POWER_STATE = "OS-EXT-STS:power_state"
HYPERVISOR = "OS-EXT-SRV-ATTR:hypervisor_hostname"
HOST = "OS-EXT-SRV-ATTR:host"


@dataclasses.dataclass(frozen=True)
class Server:
    """The fields of a Nova server (admin view at 2.53) that recovery and plans read."""

    id: str
    name: str = ""
    status: str | None = None
    host: str | None = None  # OS-EXT-SRV-ATTR:host, the compute service's host
    hypervisor_hostname: str | None = None  # where the reference looks after an evacuation
    vm_state: str | None = None
    task_state: str | None = None
    power_state: int | None = None
    locked: bool = False
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tenant_id: str = ""
    image_id: str = ""  # empty: booted from a volume
    flavor: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Server tags (in the server body from compute 2.26): fire drills look for their canaries.
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, server: Mapping[str, Any] | Server) -> Server:
        if isinstance(server, Server):
            return server
        image = server.get("image")
        image_id = image.get("id", "") if isinstance(image, Mapping) else image
        flavor = server.get("flavor")
        return cls(
            id=str(server["id"]),
            name=server.get("name") or "",
            status=server.get("status"),
            host=server.get(HOST),
            hypervisor_hostname=server.get(HYPERVISOR),
            vm_state=server.get(VM_STATE),
            task_state=server.get(TASK_STATE),
            power_state=server.get(POWER_STATE),
            locked=bool(server.get("locked", False)),
            metadata=dict(server.get("metadata") or {}),
            tenant_id=str(server.get("tenant_id") or ""),
            image_id=str(image_id or ""),
            flavor=dict(flavor) if isinstance(flavor, Mapping) else {},
            tags=tuple(str(t) for t in server.get("tags") or ()),
        )

    @property
    def compute_host(self) -> str | None:
        """The compute service's host, which is the Masakari host name.

        The reference compares the hypervisor hostname instead, which differs from the
        service host where hypervisors report an FQDN: then any instance looked evacuated at
        once.
        """
        return self.host or self.hypervisor_hostname

    @property
    def flavor_name(self) -> str:
        return str(self.flavor.get("original_name") or self.flavor.get("id") or "")


@dataclasses.dataclass(frozen=True)
class InstanceAction:
    """A request Nova accepted for a server, as ``GET /servers/{id}/os-instance-actions``
    lists it: Nova records it when it accepts the request, before carrying it out, and keeps
    it whatever became of it (an evacuation that failed back to ``error`` on its host too)."""

    action: str  # "evacuate", "stop", "start", "lock", ...
    request_id: str = ""
    start_time: datetime.datetime | None = None  # naive UTC, as Nova writes it
    # "Error" once one of the action's events failed (the conductor's rebuild_server of an
    # evacuation that found no host, say); None while none did.
    message: str | None = None

    @classmethod
    def of(cls, action: Mapping[str, Any]) -> InstanceAction:
        started = action.get("start_time")
        start_time = None
        if started:
            start_time = datetime.datetime.fromisoformat(str(started).rstrip("Z"))
            if start_time.tzinfo is not None:
                start_time = start_time.astimezone(datetime.UTC).replace(tzinfo=None)
        message = action.get("message")
        return cls(
            str(action.get("action") or ""),
            str(action.get("request_id") or ""),
            start_time,
            str(message) if message else None,
        )


# Nova's migration statuses (nova/objects/migration.py, nova/compute/manager.py) by outcome. A
# live migration goes accepted, queued, preparing, running, post-migrating, completed; a
# failed one ends error (a conductor pre-check or the scheduler's NoValidHost, a compute's
# rollback) or failed, one aborted while queued cancelled. An evacuation ends done, a cold
# migration or resize finished (the server on its destination, awaiting confirmation), then
# confirmed, or reverted (back where it was: it did not move).
MIGRATION_SUCCEEDED = frozenset({"completed", "done", "finished", "confirmed"})
MIGRATION_FAILED = frozenset({"error", "failed", "cancelled", "reverted"})

SUCCEEDED = "succeeded"
FAILED = "failed"
IN_PROGRESS = "in-progress"


@dataclasses.dataclass(frozen=True)
class Migration:
    """A move of a server as Nova records it: ``GET /os-migrations`` (``instance_uuid``,
    ``migration_type`` from 2.23, ``uuid`` from 2.59) or ``GET /servers/{id}/migrations``
    (``server_uuid``, live migrations in progress only, no ``migration_type``)."""

    id: int
    uuid: str | None
    status: str
    migration_type: str  # live-migration, migration, evacuation, resize
    source_compute: str | None
    dest_compute: str | None  # None while the scheduler has not picked one
    instance_uuid: str
    created_at: datetime.datetime | None  # naive UTC
    updated_at: datetime.datetime | None

    @classmethod
    def of(cls, migration: Mapping[str, Any]) -> Migration:
        server = migration.get("instance_uuid") or migration.get("server_uuid")
        # The server's own list shows live migrations only, and does not say so.
        kind = migration.get("migration_type") or (
            "live-migration" if "server_uuid" in migration else ""
        )
        return cls(
            id=int(migration["id"]),
            uuid=str(migration["uuid"]) if migration.get("uuid") else None,
            status=str(migration.get("status") or ""),
            migration_type=str(kind),
            source_compute=migration.get("source_compute") or None,
            dest_compute=migration.get("dest_compute") or None,
            instance_uuid=str(server or ""),
            created_at=_time(migration.get("created_at")),
            updated_at=_time(migration.get("updated_at")),
        )

    @property
    def outcome(self) -> str:
        """SUCCEEDED (the server is on its destination), FAILED (it stayed where it was) or
        IN_PROGRESS (any other status, an unknown one included: not over until Nova says)."""
        if self.status in MIGRATION_SUCCEEDED:
            return SUCCEEDED
        if self.status in MIGRATION_FAILED:
            return FAILED
        return IN_PROGRESS

    @property
    def finished(self) -> bool:
        return self.outcome != IN_PROGRESS


@dataclasses.dataclass(frozen=True)
class Service:
    """A nova-compute service as ``GET /os-services`` lists it."""

    id: str
    host: str = ""
    status: str | None = None  # enabled, disabled
    state: str | None = None  # up, down
    forced_down: bool = False
    disabled_reason: str | None = None
    # The service's last heartbeat (naive UTC), None when Nova gives none or an unreadable one.
    updated_at: datetime.datetime | None = None

    @classmethod
    def of(cls, service: Mapping[str, Any] | Service) -> Service:
        if isinstance(service, Service):
            return service
        return cls(
            id=str(service["id"]),
            host=str(service.get("host") or ""),
            status=service.get("status"),
            state=service.get("state"),
            forced_down=bool(service.get("forced_down", False)),
            disabled_reason=service.get("disabled_reason"),
            updated_at=_time(service.get("updated_at")),
        )

    @property
    def usable(self) -> bool:
        """Enabled and up: where Nova's scheduler may place."""
        return self.status == "enabled" and self.state == "up"

    def heartbeat_age(self, asked: datetime.datetime) -> float | None:
        """Seconds since the last heartbeat, counted from when Nova was asked (an answer
        that comes late makes a heartbeat look younger, never older); None without one."""
        if self.updated_at is None:
            return None
        return max((asked - self.updated_at).total_seconds(), 0.0)

    def looks_down(self, asked: datetime.datetime, grace: float) -> bool:
        """The one judgement of a silent nova-compute, the detector's and the engine's: Nova
        counts it down, or its last heartbeat is older than ``grace`` seconds."""
        age = self.heartbeat_age(asked)
        return self.state == "down" or (age is not None and age > grace)


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """A host aggregate as ``GET /os-aggregates`` lists it."""

    id: int | str
    name: str | None = None
    hosts: tuple[str, ...] = ()

    @classmethod
    def of(cls, aggregate: Mapping[str, Any]) -> Aggregate:
        return cls(
            id=aggregate["id"],
            name=aggregate.get("name"),
            hosts=tuple(str(h) for h in aggregate.get("hosts") or ()),
        )


@dataclasses.dataclass(frozen=True)
class ServerGroup:
    """A server group as ``GET /os-server-groups`` lists it."""

    id: str
    policy: str | None = None
    members: tuple[str, ...] = ()

    @classmethod
    def of(cls, group: Mapping[str, Any]) -> ServerGroup:
        # ``policy`` from compute 2.64, a one-item ``policies`` list before.
        policy = group.get("policy") or next(iter(group.get("policies") or ()), None)
        return cls(
            id=str(group.get("id")),
            policy=str(policy) if policy else None,
            members=tuple(str(m) for m in group.get("members") or ()),
        )


def _time(value: Any) -> datetime.datetime | None:
    """Nova's timestamps (ISO 8601, UTC, usually without a zone) as naive UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except (ValueError, OverflowError):
        return None


def first_service(services: Sequence[Mapping[str, Any] | Service]) -> Service | None:
    """The compute service of a host: the first one Nova lists, as the reference takes."""
    return Service.of(services[0]) if services else None


def compute_service(services: Sequence[Mapping[str, Any] | Service], host: str) -> Service:
    """The first compute service, or ComputeNotFoundByName when Nova lists none."""
    found = first_service(services)
    if found is None:
        raise exception.ComputeNotFoundByName(compute_name=host)
    return found

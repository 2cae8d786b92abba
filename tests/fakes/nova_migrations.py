"""Live migrations in the Nova simulator (tests/fakes/nova.py, which imports this module last).

``os-migrateLive`` and the migration records of ``GET /os-migrations`` and
``GET /servers/{id}/migrations``, as a real Nova 34 at 2.53 with its fake virt driver was seen
to do them (docs/real-openstack.md, "Live migration"): the API checks what it can at once
(404, 403, 400 for the body, 409 for the server's state, 400 for an unknown host), records
the action, sets ``task_state`` ``migrating`` and answers 202; everything else is the
conductor's, after the answer: a refusal there (no valid host, the source down, the server's
own host, a destination disabled or down) is a migration in ``error``, the server left as it
was, and a ``conductor_live_migrate_instance`` event in Error.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.nova import InstanceAction, NovaSimulator, Request, Server

# GET /servers/{id}/migrations lists these; /os-migrations adds links to them (2.23+).
IN_PROGRESS = ("queued", "preparing", "running", "post-migrating")
# Where a migration is, as a fraction of its duration: the conductor has scheduled it
# (``dest_compute`` set), the destination is prepared and the hypervisor copies memory.
PREPARING_AT = 0.2
RUNNING_AT = 0.5
# What an injected failure does (fail_live_migrations): "error", the destination's
# pre_live_migration failed (nova/compute/manager.py _cleanup_pre_live_migration); "failed",
# the hypervisor's migration job failed and the source rolled it back (libvirt's monitor
# calls the rollback with its default status).
FAILURES = ("error", "failed")


@dataclasses.dataclass
class MigrationRecord:
    """A row of Nova's migrations table, as its API shows it."""

    id: int
    uuid: str
    instance_uuid: str
    migration_type: str
    source_compute: str | None
    created: float  # the simulator's clock
    status: str = "accepted"
    dest_compute: str | None = None
    updated: float = 0.0
    user_id: str = ""
    project_id: str = ""

    def set(self, now: float, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        self.updated = now

    def _common(self, microversion: tuple[int, int]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "source_compute": self.source_compute,
            "dest_compute": self.dest_compute,
            "source_node": self.source_compute if self.dest_compute else None,
            "dest_node": self.dest_compute,
            "dest_host": None,
            "status": self.status,
            "created_at": _iso(self.created),
            "updated_at": _iso(self.updated or self.created),
        }
        if microversion >= (2, 59):
            out["uuid"] = self.uuid
        if microversion >= (2, 80):
            out.update(user_id=self.user_id, project_id=self.project_id)
        return out

    def view(self, microversion: tuple[int, int], base_url: str) -> dict[str, Any]:
        """GET /os-migrations: ``migration_type`` from 2.23, with links to an in-progress
        live migration."""
        out = self._common(microversion)
        out.update(instance_uuid=self.instance_uuid, old_instance_type_id=1, new_instance_type_id=1)
        if microversion >= (2, 23):
            out["migration_type"] = self.migration_type
            if self.migration_type == "live-migration" and self.status in IN_PROGRESS:
                path = f"/servers/{self.instance_uuid}/migrations/{self.id}"
                # the bookmark without the version, as Nova's view builder writes it
                bookmark = base_url.rsplit("/v2.1", 1)[0] + path
                out["links"] = [
                    {"rel": "self", "href": base_url + path},
                    {"rel": "bookmark", "href": bookmark},
                ]
        return out

    def server_view(self, microversion: tuple[int, int]) -> dict[str, Any]:
        """GET /servers/{id}/migrations: no type (live migrations only), byte counters."""
        out = self._common(microversion)
        out["server_uuid"] = self.instance_uuid
        for counter in ("memory", "disk"):
            for kind in ("total", "processed", "remaining"):
                out[f"{counter}_{kind}_bytes"] = None
        return out


@dataclasses.dataclass
class LiveMigration:
    """One the conductor scheduled: it ends ``duration`` after ``start``, on ``dest``, unless
    ``failure`` (one of FAILURES) or a destination that died meanwhile ends it first."""

    record: MigrationRecord
    server: str
    dest: str
    start: float
    duration: float
    action: InstanceAction
    failure: str | None = None


def _iso(epoch: float) -> str:
    return base._iso(epoch)


def new_record(
    sim: NovaSimulator, srv: Server, kind: str, req: Request | None = None
) -> MigrationRecord:
    """A migration row, as the conductor creates one (``accepted``, no destination yet)."""
    now = sim.clock.now()
    record = MigrationRecord(
        id=len(sim.migrations) + 1,
        uuid=str(uuid.uuid4()),
        instance_uuid=srv.id,
        migration_type=kind,
        source_compute=srv.host,
        created=now,
        updated=now,
        user_id=req.user_id if req else srv.user_id,
        project_id=req.project_id if req else srv.tenant_id,
    )
    sim.migrations.append(record)
    return record


# --- the API ------------------------------------------------------------------------------


def live_migrate(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    """POST /servers/{id}/action {"os-migrateLive": ...}: 202, the checks in the real API's
    order (nova/api/openstack/compute/migrate_server.py, nova/compute/api.py live_migrate)."""
    # The body's schema is checked before the handler runs, the policy inside it.
    host, _ = _body(req, arg)
    base._require_admin(req, "os_compute_api:os-migrate-server:migrate_live")
    # check_instance_lock: an admin's request passes a lock.
    if srv.locked and not req.is_admin:
        raise base.NovaFault(409, f"Instance {srv.id} is locked")
    base._check_state(srv, "os-migrateLive", ("active", "paused"))
    if host is not None and sim._service_on(host) is None:
        raise base.NovaFault(400, f"Compute host {host} could not be found.")
    srv.task_state = "migrating"
    recorded = base._record(sim, req, srv, "live-migration")
    record = new_record(sim, srv, "live-migration", req)
    _schedule(sim, srv, record, recorded, host)
    sim._tick()
    return 202, None


def _body(req: Request, arg: Any) -> tuple[str | None, Any]:
    """The 2.30-2.67 schema: ``host`` (a string or null) and ``block_migration`` (a boolean
    or "auto") required, ``force`` allowed, nothing else."""
    if (
        not isinstance(arg, dict)
        or not {"host", "block_migration"} <= set(arg)
        or set(arg) - {"host", "block_migration", "force"}
        or not (arg["host"] is None or isinstance(arg["host"], str))
        or not (isinstance(arg["block_migration"], bool) or arg["block_migration"] == "auto")
    ):
        raise base.NovaFault(400, "Invalid input for field/attribute os-migrateLive.")
    if req.microversion < (2, 25) and arg["block_migration"] == "auto":
        raise base.NovaFault(400, "Invalid input for field/attribute block_migration.")
    return arg["host"], arg["block_migration"]


def _schedule(
    sim: NovaSimulator,
    srv: Server,
    record: MigrationRecord,
    recorded: InstanceAction,
    host: str | None,
) -> None:
    """The conductor's LiveMigrationTask: the source must be up, then the scheduler picks a
    destination (a given host is only a hint it still checks: enabled, up, with room, not
    the source). A destination Nova still counts up whose nova-compute is dead is tried and
    given up after rpc_response_timeout; the scheduler then tries the next one."""
    now = sim.clock.now()
    source = sim._service_on(srv.host)
    if source is None or sim.service_state(source) != "up":
        _refused(sim, srv, record, recorded, now)
        return
    resources = srv.flavor.resources()
    waited = 0.0
    for svc in sim.services:
        if host is not None and svc.host != host:
            continue
        if not (
            svc.binary == "nova-compute"
            and svc.host != srv.host
            and svc.status == "enabled"
            and sim.service_state(svc) == "up"
            and sim.placement.fits(svc.hypervisor_hostname, resources)
        ):
            continue
        if not svc.alive or not source.alive:
            waited += sim.rpc_response_timeout  # check_can_live_migrate_* never answered
            continue
        _claim(sim, srv, record, svc.host)
        sim.live_migrations.append(
            LiveMigration(
                record,
                srv.id,
                svc.host,
                now + waited,
                sim.live_migration_time(),
                recorded,
                sim.live_migration_failures.get(srv.id),
            )
        )
        return
    _refused(sim, srv, record, recorded, now, waited)


def _claim(sim: NovaSimulator, srv: Server, record: MigrationRecord, dest: str) -> None:
    """The source's allocation moves to the migration's consumer, the server's own goes to the
    destination (nova/compute/migrate.py replace_allocation_with_migration): while the
    migration runs, it holds both hosts."""
    resources = srv.flavor.resources()
    source = sim._hypervisor_of(srv.host)
    sim.placement.free(srv.id, source)
    sim.placement.allocate(record.uuid, source, resources, srv.tenant_id, srv.user_id)
    sim.placement.allocate(srv.id, sim._hypervisor_of(dest), resources, srv.tenant_id, srv.user_id)


def _refused(
    sim: NovaSimulator,
    srv: Server,
    record: MigrationRecord,
    recorded: InstanceAction,
    now: float,
    waited: float = 0.0,
) -> None:
    """The conductor's refusal (NoValidHost, ComputeServiceUnavailable, UnableToMigrateToSelf
    ...): the migration in error, the server's task cleared where it is, its vm_state kept
    (nova/conductor/manager.py _live_migrate)."""
    if waited:
        # The server stays migrating while the conductor waits for the dead compute.
        sim.live_migrations.append(
            LiveMigration(record, srv.id, "", now, waited, recorded, "refused")
        )
        return
    _refuse_now(sim, srv, record, recorded, now, now)


def _refuse_now(
    sim: NovaSimulator,
    srv: Server,
    record: MigrationRecord,
    recorded: InstanceAction,
    start: float,
    now: float,
) -> None:
    srv.task_state = None
    record.set(now, status="error")
    recorded.events.append(
        base.ActionEvent(
            "conductor_live_migrate_instance",
            start,
            now,
            "Error",
            "nova.exception.NoValidHost: No valid host was found.",
            host="conductor",
        )
    )


# --- progress -----------------------------------------------------------------------------


def advance(sim: NovaSimulator, now: float) -> None:
    """Moves each live migration to where its clock says (lock held; from _tick)."""
    for lm in list(sim.live_migrations):
        srv = next((s for s in sim.servers if s.id == lm.server), None)
        if srv is None:  # deleted meanwhile: Nova aborts it
            sim.live_migrations.remove(lm)
            lm.record.set(now, status="cancelled")
            continue
        end = lm.start + lm.duration
        if lm.failure == "refused":
            if now >= end:
                sim.live_migrations.remove(lm)
                _refuse_now(sim, srv, lm.record, lm.action, lm.start, end)
            continue
        dest = sim._service_on(lm.dest)
        if dest is not None and not dest.alive:
            # the destination died: its RPCs time out, and the source rolls back
            _end(sim, srv, lm, max(now, lm.start), "error")
            continue
        if lm.record.status == "accepted" and now >= lm.start + lm.duration * PREPARING_AT:
            lm.record.set(now, status="preparing", dest_compute=lm.dest)
        if lm.record.status == "preparing" and now >= lm.start + lm.duration * RUNNING_AT:
            if lm.failure == "error":  # pre_live_migration failed on the destination
                _end(sim, srv, lm, lm.start + lm.duration * RUNNING_AT, "error")
                continue
            lm.record.set(now, status="running")
        if now >= end:
            _end(sim, srv, lm, end, lm.failure or "completed")


def _end(sim: NovaSimulator, srv: Server, lm: LiveMigration, at: float, status: str) -> None:
    """The migration over: on the destination (completed), or rolled back to its source with
    its allocation (error, failed), task cleared either way; the action's events as the
    conductor and both computes record them."""
    sim.live_migrations.remove(lm)
    source, dest = srv.host, lm.dest
    events = [
        ("conductor_live_migrate_instance", "conductor", "Success"),
        ("compute_check_can_live_migrate_destination", dest, "Success"),
        ("compute_check_can_live_migrate_source", source, "Success"),
        ("compute_pre_live_migration", dest, "Error" if status == "error" else "Success"),
        ("compute_live_migration", source, "Error" if status == "error" else "Success"),
    ]
    resources = srv.flavor.resources()
    sim.placement.free(lm.record.uuid, sim._hypervisor_of(source))
    if status == "completed":
        events.append(("compute_post_live_migration_at_destination", dest, "Success"))
        srv.host = dest
        if srv.vm_state == "active":
            srv.power_state = 1
    else:
        events.append(("compute_rollback_live_migration_at_destination", dest, "Success"))
        sim.placement.free(srv.id, sim._hypervisor_of(dest))
        sim.placement.allocate(
            srv.id, sim._hypervisor_of(source), resources, srv.tenant_id, srv.user_id
        )
    srv.task_state = None
    lm.record.set(at, status=status, dest_compute=dest)
    lm.action.events.extend(
        base.ActionEvent(name, lm.start, at, result, host=host) for name, host, result in events
    )


# --- the reads ----------------------------------------------------------------------------


def list_migrations(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """GET /os-migrations: every kind, filtered by ``instance_uuid``, ``migration_type``,
    ``status``, ``source_compute`` (Nova's filters); in the order recorded (below 2.59 Nova
    does not sort them: its database's order, the ids')."""
    base._require_admin(req, "os_compute_api:os-migrations:index")
    q = req.params
    found = [
        m
        for m in sim.migrations
        if q.get("instance_uuid", m.instance_uuid) == m.instance_uuid
        and q.get("migration_type", m.migration_type) == m.migration_type
        and q.get("status", m.status) == m.status
        and q.get("source_compute", m.source_compute) == m.source_compute
    ]
    return 200, {"migrations": [m.view(req.microversion, sim.compute_url) for m in found]}


def list_server_migrations(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """GET /servers/{id}/migrations (2.23+): the server's live migrations in progress."""
    if req.microversion < (2, 23):
        raise base.NovaFault(404)
    srv = sim._server(req.parts[1])
    base._require_admin(req, "os_compute_api:servers:migrations:index")
    found = [
        m
        for m in sim.migrations
        if m.instance_uuid == srv.id
        and m.migration_type == "live-migration"
        and m.status in IN_PROGRESS
    ]
    return 200, {"migrations": [m.server_view(req.microversion) for m in found]}


ROUTES = [
    ("GET", ("os-migrations",), list_migrations),
    ("GET", ("servers", "*", "migrations"), list_server_migrations),
]
ACTIONS = {"os-migrateLive": live_migrate}

# The simulator's model, used at call time. Imported last: tests/fakes/nova.py imports this
# module at its end, and either may be imported first.
from tests.fakes import nova as base  # noqa: E402

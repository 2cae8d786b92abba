"""The reserved host of a reserved-host attempt: taken in the database (one recovery per
spare across every engine), added to the failed host's aggregates, enabled in Nova."""

from __future__ import annotations

from masakari import exception
from masakari.compute.servers import compute_service
from masakari.db import spares
from masakari.engine.context import Cancelled
from masakari.engine.recovery.flow import TaskContext


def _add_to_aggregates(ctx: TaskContext, host_name: str, reserved_host: str) -> None:
    for aggregate in ctx.nova.list_aggregates():
        if host_name not in aggregate.hosts:
            continue
        name = aggregate.name
        ctx.update_details(
            f"Add host {reserved_host} to aggregate {name}",
            0.2,
        )
        try:
            ctx.effects.nova.add_host_to_aggregate(aggregate.id, reserved_host)
        except exception.NovaError as exc:
            if exc.status != 409:
                raise
            msg = f"Host '{reserved_host}' already has been added to aggregate '{name}'."
            ctx.update_details(msg, 1.0)
            continue
        ctx.update_details(
            f"Added host {reserved_host} to aggregate {name}",
            0.3,
        )


def enable(ctx: TaskContext, host_name: str, reserved_host: str) -> None:
    # Taking the spare in the database is the lock: one recovery per reserved host across
    # every engine (the reference locks per process).
    taken = ctx.progress.update_with(
        spares.TAKEN_MESSAGE % reserved_host,
        0.1,
        lambda note: ctx.effects.hosts.take_reserved_host(reserved_host, note),
    )
    if not taken:
        raise exception.LockAlreadyAcquired(resource=reserved_host)
    try:
        if ctx.conf.host_failure.add_reserved_host_to_aggregate:
            _add_to_aggregates(ctx, host_name, reserved_host)
        service = compute_service(ctx.nova.find_compute_services(reserved_host), reserved_host)
        ctx.effects.nova.enable_service(service)
    except Cancelled:
        raise  # whoever takes over decides; this engine may write nothing more
    except BaseException:
        # Not enabled: it is still a spare, as the reference leaves it.
        ctx.effects.hosts.give_back_reserved_host(reserved_host)
        raise

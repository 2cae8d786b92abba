"""A run's Nova changes: each sent only while its lease holds, and none made twice.

The client (masakari.compute.retry) sends again what is safe to repeat. The changes that are
not (evacuate, os-stop, os-start, add_host, the service updates) raise on an ambiguous
failure (a time-out, a connection lost after sending, a balancer's 5xx); here Nova is then
read to learn whether it acted, and the change is sent again only if it did not: an
evacuation is taken as made once the server is rebuilding or on another host, a service
update once the service shows the requested status or forced_down, and a resend that Nova
refuses with 409 is judged the same way. When the policy's resends are spent the step fails
(counted as a give-up in masakari_nova_give_ups).
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from masakari import exception, metrics
from masakari.compute import retry
from masakari.compute.transport import send_guard
from masakari.db import instances, vmoves
from masakari.db import statuses as st
from masakari.engine.lease import Lease
from masakari.engine.ports import (
    Aggregate,
    InstanceAction,
    Migration,
    NovaReads,
    Server,
    ServerGroup,
    Service,
)
from masakari.engine.seam import Seam

T = TypeVar("T")

LOG = logging.getLogger(__name__)

# How far Nova's clock may be behind ours when its instance actions are read.
CLOCK_SKEW = 5.0


def guarded(lease: Lease, call: Callable[[], T]) -> T:
    """A Nova call made only while the lease runs: checked now, and again by the transport
    right before each attempt is sent (after token and endpoint work that can take time)."""
    lease.check()
    with send_guard(lease.check):
        return call()


class LeasedReads:
    """Nova reads for a run: refused too once the lease is over (the run has no business left
    with Nova, and another engine may be recovering the same instances)."""

    def __init__(self, nova: NovaReads, lease: Lease) -> None:
        self._nova = nova
        self._lease = lease

    def find_compute_services(self, host: str) -> list[Service]:
        return guarded(self._lease, lambda: self._nova.find_compute_services(host))

    def list_servers_on_host(self, host: str) -> list[Server]:
        return guarded(self._lease, lambda: self._nova.list_servers_on_host(host))

    def get_server(self, server_id: str) -> Server:
        return guarded(self._lease, lambda: self._nova.get_server(server_id))

    def list_instance_actions(self, server_id: str) -> list[InstanceAction]:
        return guarded(self._lease, lambda: self._nova.list_instance_actions(server_id))

    def list_migrations(
        self, server_id: str, migration_type: str | None = "live-migration"
    ) -> list[Migration]:
        return guarded(self._lease, lambda: self._nova.list_migrations(server_id, migration_type))

    def list_aggregates(self) -> list[Aggregate]:
        return guarded(self._lease, lambda: self._nova.list_aggregates())

    def list_server_groups(self) -> list[ServerGroup]:
        return guarded(self._lease, lambda: self._nova.list_server_groups())


class NovaChanges:
    """``effects.nova``: the run's Nova changes, each checked against its lease."""

    def __init__(self, seam: Seam, reported_at: datetime.datetime | None = None) -> None:
        self._seam = seam
        self.reads = LeasedReads(seam.nova, seam.lease)
        # When the failure was reported, for the report-to-first-evacuation metric; None
        # once observed in this run.
        self._reported_at = reported_at
        # Per instance, from when Nova's instance actions count as this run's evacuation.
        self.evacuations_sent: dict[str, datetime.datetime] = {}

    def _note(self, instance_uuid: str, action: str) -> None:
        """Record the action first, so that an engine taking over knows what was asked."""
        uuid = self._seam.notification_uuid
        self._seam.write(lambda s: instances.note_action(s, uuid, instance_uuid, action))

    def _evacuated_from(self, instance_uuid: str) -> str | None:
        """The host this run evacuates the instance from (its ongoing vmove's source)."""
        uuid = self._seam.notification_uuid
        ongoing = self._seam.read(
            lambda s: vmoves.of_notification(s, uuid, [st.VMOVE_ONGOING], None)
        )
        return next((v.source_host for v in ongoing if v.instance_uuid == instance_uuid), None)

    def _nova_call(self, call: Callable[[], T]) -> T:
        return guarded(self._seam.lease, call)

    def _checked(self, operation: str, send: Callable[[], None], made: Callable[[], bool]) -> None:
        """Send a change that must not be made twice; after an ambiguous failure, send it
        again only while ``made()`` (a read of Nova) says it was not made."""
        policy = getattr(self._seam.nova, "policy", retry.ENGINE)
        delays = policy.resends(self._seam.clock.monotonic)
        resent = False
        while True:
            try:
                self._nova_call(send)
                return
            except exception.NovaError as exc:
                # a resend refused as a conflict: the first one may be the cause
                if not (retry.ambiguous(exc) or (resent and exc.status == 409)):
                    raise
                delay = next(delays, None)
                if delay is None:
                    metrics.nova_gave_up(operation)
                    raise
                self._pause(delay)
                if made():
                    return
                if resent and exc.status == 409:
                    raise
            metrics.nova_retried(operation)
            resent = True

    def _pause(self, seconds: float) -> None:
        """Wait before reading Nova again (a request in flight may still land), no longer
        than the lease runs."""
        self._seam.lease.check()
        self._seam.clock.sleep(min(seconds, self._seam.lease.remaining()), threading.Event())
        self._seam.lease.check()

    # --- the changes -------------------------------------------------------------------------

    # A service update Nova saves before it calls a compute it counts up, and answers only
    # after that call, up to its rpc_response_timeout for a dead compute: one that timed out
    # is judged by reading the service, not sent to wait as long again.

    def disable_service(self, service: Service, reason: str | None) -> None:
        self._update_service(
            service, lambda: self._seam.nova.disable_service(service.id, reason), status="disabled"
        )

    def enable_service(self, service: Service) -> None:
        self._update_service(
            service, lambda: self._seam.nova.enable_service(service.id), status="enabled"
        )

    def force_down_service(self, service: Service) -> None:
        self._update_service(
            service, lambda: self._seam.nova.force_down_service(service.id, True), forced_down=True
        )

    def unset_forced_down(self, service: Service) -> None:
        self._update_service(
            service,
            lambda: self._seam.nova.force_down_service(service.id, False),
            forced_down=False,
        )

    def _update_service(
        self,
        service: Service,
        send: Callable[[], None],
        status: str | None = None,
        forced_down: bool | None = None,
    ) -> None:
        """One checked service update: made once the service shows ``status`` and
        ``forced_down`` (those given)."""

        def made() -> bool:
            for now in self.reads.find_compute_services(service.host):
                if now.id == service.id:
                    return (status is None or now.status == status) and (
                        forced_down is None or now.forced_down is forced_down
                    )
            return False

        self._checked("PUT /os-services/{id}", send, made)

    def reset_state(self, instance_uuid: str, state: str) -> None:
        self._nova_call(lambda: self._seam.nova.reset_state(instance_uuid, state))

    def stop_server(self, instance_uuid: str) -> None:
        """Stop; recorded first, so that an engine taking over knows what was asked."""
        self._note(instance_uuid, "stop")
        self._checked(
            "os-stop",
            lambda: self._seam.nova.stop_server(instance_uuid),
            lambda: self._server_in(instance_uuid, "stopped", "powering-off"),
        )

    def start_server(self, instance_uuid: str) -> None:
        """Start; recorded first: an engine taking over does not restart it a second time."""
        self._note(instance_uuid, "start")
        self._checked(
            "os-start",
            lambda: self._seam.nova.start_server(instance_uuid),
            lambda: self._server_in(instance_uuid, "active", "powering-on"),
        )

    def _server_in(self, instance_uuid: str, vm_state: str, task_state: str) -> bool:
        server = self.reads.get_server(instance_uuid)
        return server.task_state == task_state or server.vm_state == vm_state

    def send_evacuate(self, instance_uuid: str, host: str | None) -> None:
        """Evacuate once: after an ambiguous failure, the request that seemed to fail made
        the evacuation if the server is rebuilding, is no longer on the source host, or Nova
        recorded an ``evacuate`` action for it since the first request was sent (an
        evacuation Nova accepted and that already failed back to ``error`` on its host
        shows only there)."""
        # Nova's clock against ours: the claims already need the engines' clocks within
        # engine_claim_margin of each other; Nova's is taken to be as close.
        since = self._seam.clock.now() - datetime.timedelta(seconds=CLOCK_SKEW)
        self.evacuations_sent[instance_uuid] = since

        def made() -> bool:
            server = self.reads.get_server(instance_uuid)
            if server.task_state == "rebuilding":
                return True
            source = self._evacuated_from(instance_uuid)
            now_on = server.host
            if source is not None and now_on is not None and now_on != source:
                return True
            return bool(self._evacuate_actions(instance_uuid))

        self._checked("evacuate", lambda: self._seam.nova.evacuate(instance_uuid, host=host), made)

    def _evacuate_actions(self, instance_uuid: str) -> list[InstanceAction]:
        """The ``evacuate`` actions Nova recorded for the instance since this run sent its
        evacuation (none before it was sent)."""
        since = self.evacuations_sent.get(instance_uuid)
        if since is None:
            return []
        return [
            a
            for a in self.reads.list_instance_actions(instance_uuid)
            if a.action == "evacuate" and a.start_time is not None and a.start_time >= since
        ]

    def evacuation_failed(self, instance_uuid: str) -> bool:
        """Nova recorded this run's evacuation of the instance as failed: an ``evacuate``
        action since it was sent whose message is "Error" (one of its events, the conductor's
        rebuild_server when no host was valid, ended in error). A Nova that cannot list the
        actions says nothing: the confirmation goes on as before."""
        try:
            return any(a.message == "Error" for a in self._evacuate_actions(instance_uuid))
        except exception.NovaError as exc:
            LOG.warning("Reading the instance actions of %s failed: %s", instance_uuid, exc)
            return False

    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> None:
        def made() -> bool:
            return any(
                str(a.id) == str(aggregate_id) and host in a.hosts
                for a in self.reads.list_aggregates()
            )

        self._checked(
            "add_host", lambda: self._seam.nova.add_host_to_aggregate(aggregate_id, host), made
        )

    # --- Nova changes that the database records ----------------------------------------------

    def lock_server(self, instance_uuid: str) -> None:
        """Lock in Nova; recorded first, so that whoever finishes the notification unlocks."""
        uuid = self._seam.notification_uuid
        self._seam.write(lambda s: instances.record_lock(s, uuid, instance_uuid))
        self._nova_call(lambda: self._seam.nova.lock_server(instance_uuid))

    def unlock_server(self, instance_uuid: str) -> None:
        """Unlock in Nova, then forget the record; a deleted instance counts as unlocked."""
        try:
            self._nova_call(lambda: self._seam.nova.unlock_server(instance_uuid))
        except exception.NovaError as exc:
            if exc.status != 404:
                raise
        self._seam.write(lambda s: instances.forget_lock(s, instance_uuid))

    def evacuate(self, instance_uuid: str, host: str | None) -> None:
        if self._reported_at is not None:
            since = self._seam.clock.now() - self._reported_at
            metrics.first_evacuation(since.total_seconds())
            self._reported_at = None
        self.send_evacuate(instance_uuid, host)

"""The failure detector: one engine at a time polls Nova's compute services and reports the
hosts that stopped heartbeating as COMPUTE_HOST failures, through the intake.

Each poll (every ``[detection] poll_interval``), while this engine holds the detector's
lease (:mod:`masakari.detection.lease`):

1. **self-check**: Keystone answers (its version document, no token issued), Nova lists the
   nova-compute services (one request), the database gives the hosts in service. If any
   fails the poll is *blind*: nothing is judged, the counts start over, and
   ``masakari_detection_blind{reason}`` says what could not be reached. A controller cut
   off from the control plane thus reports nothing, rather than every host.
2. **look**: a host in service whose nova-compute is ``down`` in Nova, or whose heartbeat
   (``updated_at``) is older than ``grace_period``, looks down. Hosts without a service, or
   with a disabled one, are not judged. A failure already reported is known: its
   notification is not over, or in the duplicate window, or the host has not heartbeated
   since it was reported (a cancelled report is not made again every poll).
3. **gates** (:mod:`masakari.detection.gates`): down_polls, the all-stale breaker and its
   storm cooldown, the heartbeat cliff, the cap per poll.
4. **report**: :func:`masakari.ha.notifications.record`, the intake of a monitor's report
   (duplicate window, maintenance, guards, holds), in a transaction fenced by the lease.
   The payload says ``host_status: UNKNOWN`` (nothing proved the host off) and names the
   detector; the engine's verdict ([verdict] rule) decides whether it is recovered. In
   shadow mode ([detection] mode = shadow, :mod:`masakari.detection.shadow`) nothing is
   reported: what would have been is recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from oslo_config import cfg

from masakari import exception, notifier
from masakari.compute.servers import Service
from masakari.conf import detection as detection_opts
from masakari.db import database, watch
from masakari.db import evidence as evidence_db
from masakari.db.database import Database
from masakari.detection import gates as gates_mod
from masakari.detection.gates import Gates, Outcome, Seen, Settings
from masakari.detection.lease import DetectorLease
from masakari.detection.shadow import Shadow
from masakari.engine import periodic
from masakari.engine.lease import LeaseLost
from masakari.engine.ports import Clock
from masakari.ha import notifications
from masakari.ha.intake import Rules
from masakari.metrics import detection as detection_metrics

LOG = logging.getLogger(__name__)

# The detector's name in its reports' payload ("detector") and their evidence.
NAME = "nova-services"


class ComputeServices(Protocol):
    def list_compute_services(self) -> list[Service]: ...


class Blind(Exception):
    """The poll cannot trust what it would see: ``reason`` is what it could not reach."""

    def __init__(self, reason: str, cause: BaseException) -> None:
        super().__init__(f"{reason}: {cause}")
        self.reason = reason


class Detector:
    """The detector of one engine: its lease and its poll, as two periodic tasks."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        nova: ComputeServices,
        lease: DetectorLease,
        keystone_probe: Callable[[], Any],
        clock: Clock | None = None,
    ) -> None:
        self.db = db
        self.nova = nova
        self.lease = lease
        self.keystone_probe = keystone_probe
        self.clock = clock or Clock()
        self.poll_interval = float(conf.detection.poll_interval)
        self.grace = float(conf.detection.grace_period)
        self.settings = Settings.from_conf(conf)
        self.rules = Rules.from_conf(conf)
        self.notifier = notifier.Notifier(conf, "masakari-engine")
        self._gates: Gates | None = None
        self._token: int | None = None
        self._blind: str | None = None
        self._said: tuple[tuple[str, ...], bool] = ((), False)
        self.shadow = (
            Shadow(db, NAME, lease.owner, self.describe) if detection_opts.shadow(conf) else None
        )

    def tasks(self) -> list[periodic.Task]:
        return [
            # A failed renewal is the database's outage, logged once by the engine's Outage.
            periodic.Task(
                "detector_lease",
                self.lease.renew_interval,
                self.lease.tick,
                at_start=True,
                proves_db_up=False,
            ),
            periodic.Task("detect_failures", self.poll_interval, self.poll, proves_db_up=False),
        ]

    def stop(self) -> None:
        self.lease.release()
        detection_metrics.idle()

    # --- one poll ------------------------------------------------------------------------

    def poll(self) -> None:
        lease = self.lease.current()
        if lease is None:
            self._gates = self._token = None
            # Not (or no longer) the detector: its last poll's numbers are not shown as now's.
            detection_metrics.idle()
            if self.lease.database_failed:
                detection_metrics.polled("database")
            return
        if self._gates is None or self._token != lease.token:
            # A new lease starts from nothing: what this engine saw under an earlier one
            # (before a freeze, say) is not evidence of now.
            self._gates = Gates(self.settings, self.lease.storm_until)
            self._token = lease.token
        detection_metrics.leading(True)
        try:
            seen, unreadable = self._look()
        except Blind as exc:
            self._gates.forget()
            self._say_blind(exc)
            detection_metrics.polled(exc.reason)
            return
        if self._blind is not None:
            LOG.warning("Failure detector sees again (it was blind: %s)", self._blind)
            self._blind = None
        down = sum(1 for h in seen if h.down)
        detection_metrics.hosts(len(seen) - down, down, unreadable)
        outcome = self._gates.judge(seen, self.clock.now())
        detection_metrics.gates(outcome.active, len(outcome.deferred))
        blind: str | None = None
        try:
            self._act(outcome)
        except LeaseLost:
            LOG.warning("Failure detector: lease lost during a poll; its reports stop here")
        except database.DB_ERRORS as exc:
            LOG.error("Failure detector: the database refused a report: %s", exc)
            blind = "database"
        # Counted once, as what it turned out to be.
        detection_metrics.polled(blind)

    def _look(self) -> tuple[list[Seen], int]:
        """The hosts in service as Nova sees them now, and how many could not be judged."""
        try:
            self.keystone_probe()
        except Exception as exc:
            raise Blind("keystone", exc) from exc
        # Ages count from when Nova was asked: an answer that comes late (or reaches a
        # detector that froze while waiting) makes heartbeats look younger, never older.
        asked = self.clock.now()
        try:
            services = self.nova.list_compute_services()
        except exception.NovaError as exc:
            reason = "keystone" if "keystoneauth" in getattr(exc, "reference_class", "") else "nova"
            raise Blind(reason, exc) from exc
        since = self.rules.duplicates_since(self.clock.now())
        try:
            with self.db.reader() as session:
                hosts = watch.hosts_in_service(session, since)
                if self.shadow is not None:
                    self.shadow.read(session)
        except database.DB_ERRORS as exc:
            raise Blind("database", exc) from exc
        by_host: dict[str, Service] = {}
        for listed in services:
            by_host.setdefault(listed.host, listed)
        seen, unreadable = [], 0
        for host in hosts:
            service = by_host.get(host.name)
            if service is None or service.status == "disabled":
                unreadable += 1
                continue
            age = service.heartbeat_age(asked)
            down = service.looks_down(asked, self.grace)
            # A report that ended (an operator cancelled it, say) while the host stayed silent
            # is still this failure: reported again only after a heartbeat, then silence.
            known = host.known or watch.same_failure(host.last_reported, service.updated_at)
            if self.shadow is not None:
                known = self.shadow.known(host.name, service.updated_at) or known
            seen.append(Seen(host.name, host.segment_uuid, down, age, service.state, known))
        return seen, unreadable

    def _say_blind(self, exc: Blind) -> None:
        if self._blind != exc.reason:
            LOG.error("Failure detector is blind, it reports nothing: %s", exc)
            self._blind = exc.reason

    # --- acting on a poll ------------------------------------------------------------------

    def _act(self, outcome: Outcome) -> None:
        said = (tuple(outcome.breaker_scopes), gates_mod.CLIFF in outcome.active)
        # In shadow the gates' words are what they would do: only recorded.
        who = "Failure detector" if self.shadow is None else "Failure detector (shadow)"
        if said != self._said:  # each change once, not every poll
            self._said = said
            if outcome.breaker_scopes:
                LOG.warning(
                    "%s: too many hosts look down at once (%s): %s",
                    who,
                    "; ".join(outcome.breaker_scopes),
                    "held for an operator" if self.settings.breaker_hold else "not reported",
                )
            if gates_mod.CLIFF in outcome.active:
                LOG.warning(
                    "%s: heartbeat cliff, nothing reported for %d polls",
                    who,
                    self.settings.cliff_polls,
                )
        if outcome.storm_until is not None:
            self.lease.keep_storm(outcome.storm_until)
        if self.shadow is not None:
            self.shadow.record(outcome, self.clock.now(), self.lease.fence)
            return
        for host in outcome.report:
            self._report(host, None)
        for host in outcome.hold:
            self._report(host, outcome.hold_reason)

    def _report(self, host: Seen, hold: str | None) -> None:
        now = self.clock.now()
        data = {
            "type": "COMPUTE_HOST",
            "hostname": host.name,
            "generated_time": now.isoformat(),
            "payload": {
                "event": "STOPPED",
                "host_status": "UNKNOWN",
                "cluster_status": "OFFLINE",
                "detector": NAME,
                "detector_engine": self.lease.owner,
            },
        }
        seen = evidence_db.Evidence(
            kind=evidence_db.NOVA,
            source=f"engine {self.lease.owner}",
            failed=True,
            detail=self.describe(host),
            observed_at=now,
            value=host.state,
        )
        try:
            row, reason = notifications.record(
                self.db, data, self.rules, fence=self.lease.fence, hold=hold, evidence=[seen]
            )
        except exception.DuplicateNotification:
            detection_metrics.reported("duplicate")
            return
        except (
            exception.HostOnMaintenance,
            exception.HostNotFoundByName,
            notifications.NotificationRaceLost,  # the host is not known yet: the next poll
        ) as exc:
            LOG.info("Failure detector: report of host %s refused: %s", host.name, exc)
            detection_metrics.reported("refused")
            return
        detection_metrics.reported("created" if reason is None else "held")
        # As the API's create does (its .start has no counterpart: no request came).
        fields = notifier.notification_fields(row)
        self.notifier.emit("notification.create.end", notifier.notification_payload(fields))
        LOG.warning(
            "Failure detector: host %s looks down (%s): notification %s%s",
            host.name,
            self.describe(host),
            row.notification_uuid,
            "" if reason is None else f", held ({reason})",
        )

    def describe(self, host: Seen) -> str:
        age = "no heartbeat time" if host.age is None else f"heartbeat {host.age:.0f} s old"
        return (
            f"nova-compute {host.state or 'state unknown'}, {age} "
            f"(grace {self.grace:g} s), seen by the detector of engine {self.lease.owner}"
        )

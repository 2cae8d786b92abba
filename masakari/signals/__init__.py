"""Quarantine's degradation signals the engine reads itself ([quarantine]; docs/operations.md,
Redfish health and Storage-path loss): the hosts' Redfish health, and I/O errors of several
instances of one host.

Wired into masakari-engine by masakari/cmd/engine.py, as the failure detector is: both ask
through masakari.ha (a quarantine's request, a notification's intake), which the engine
package must not reach.
"""

from __future__ import annotations

import logging

from oslo_config import cfg

from masakari import notifier
from masakari.db.database import Database
from masakari.db.models import utcnow
from masakari.engine import periodic
from masakari.engine.context import InstanceJudge
from masakari.engine.fencing import HostFencing
from masakari.ha.notifications import Fence
from masakari.signals import storage_loss
from masakari.signals.redfish_health import RedfishHealth

__all__ = ["Signals", "build"]

LOG = logging.getLogger(__name__)


class Signals:
    """The engine's add-on (masakari.engine.service.Addon): the Redfish health pass, the
    judge of I/O error reports (``judge_instance``, None when off), and the host failure
    the storage quarantines fall back to (``record_host_failure``)."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        redfish: RedfishHealth | None,
        judge_instance: InstanceJudge | None,
        notifier_: notifier.Notifier,
    ) -> None:
        self.conf = conf
        self.redfish = redfish
        self.judge_instance = judge_instance
        self._notifier = notifier_
        self._db = db

    def record_host_failure(self, host_name: str, fence: Fence) -> tuple[str, str]:
        """The storage quarantines' fallback (masakari.engine.quarantine)."""
        return storage_loss.record_host_failure(
            self.conf, self._db, host_name, utcnow(), self._notifier, fence
        )

    def tasks(self) -> list[periodic.Task]:
        if self.redfish is None:
            return []
        # One engine is enough (with [coordination], the leader): each pass reads every
        # watched host's BMC.
        return [
            periodic.Task(
                "redfish_health",
                self.conf.quarantine.redfish_health_interval,
                self.redfish.run,
                at_start=True,
                leader_only=True,
            )
        ]

    def stop(self) -> None:
        """Nothing runs outside the engine's periodic tasks and recoveries."""


def build(conf: cfg.ConfigOpts, db: Database, fencing: HostFencing | None) -> Signals:
    options = conf.quarantine
    # One notifier for the host failures both storage actions record.
    notifier_ = notifier.Notifier(conf, "masakari-engine")
    return Signals(
        conf,
        db,
        _redfish(conf, db, fencing),
        storage_loss.StorageJudge(notifier_) if options.storage_error_instances > 0 else None,
        notifier_,
    )


def _redfish(
    conf: cfg.ConfigOpts, db: Database, fencing: HostFencing | None
) -> RedfishHealth | None:
    """The Redfish health pass when asked for and possible (said once when not)."""
    if conf.quarantine.redfish_health_interval <= 0:
        return None
    if not conf.quarantine.enabled or fencing is None:
        LOG.warning(
            "[quarantine] redfish_health_interval is set but %s: no Redfish health is read",
            "[quarantine] enabled is false"
            if not conf.quarantine.enabled
            else "there is no [fencing] config_file to name the hosts' BMCs",
        )
        return None
    return RedfishHealth(conf, db, fencing)

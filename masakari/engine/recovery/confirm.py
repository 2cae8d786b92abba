"""Whether a COMPUTE_HOST report may be acted on, and the host_status its flow is given.

The reference's rule: only a report with host_status NORMAL (the monitor confirmed the
power-off); with [guards] hold_unknown_host_reports, an UNKNOWN one an operator released. A
failure report the verdict judges ([detection], [verdict]: masakari.engine.verdict) is
confirmed by its rule instead, or held.
"""

from __future__ import annotations

import dataclasses
import logging

from masakari.engine import verdict
from masakari.engine.context import RunContext
from masakari.engine.payloads import HostPayload

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Confirmed:
    host_status: str
    # An UNKNOWN report held at intake and released by an operator (no host return then).
    released_unknown: bool = False


def host_report(
    run: RunContext, host_uuid: str, payload: HostPayload, event: str
) -> Confirmed | None:
    """The report confirmed, or None when it is ignored; raises Held when the verdict holds."""
    if payload.host_status is None:
        LOG.warning(
            "Notification '%s' ignored as host_status is not provided.", run.notification_uuid
        )
        return None
    status = payload.host_status.upper()
    if event == "STOPPED" and verdict.applies(run.conf, payload):
        return Confirmed(verdict.judge(run, host_uuid, payload))
    if event == "STOPPED" and run.conf.verdict.shadow_rule is not None:
        verdict.judge_shadow_only(run, host_uuid, payload)
    if status == "UNKNOWN" and run.conf.guards.hold_unknown_host_reports:
        # Held at intake (masakari.db.holds) and taken by the engine only once an operator
        # released it: the release is the confirmation the report lacked.
        LOG.warning(
            "Notification '%s' with host_status UNKNOWN was released by an operator: "
            "recovering the host.",
            run.notification_uuid,
        )
        return Confirmed(payload.host_status, released_unknown=True)
    if status != "NORMAL":
        # Evacuating from a host whose power-off is not confirmed could run an instance twice.
        LOG.warning(
            "Notification '%s' ignored as host_status is '%s'", run.notification_uuid, status
        )
        return None
    return Confirmed(payload.host_status)

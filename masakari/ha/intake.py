"""The intake's rules: which reports are refused, which are held, and why.

Built once per process from the configuration (``Rules.from_conf``; none of these options
is mutable, and a reload of masakari-api starts new workers, which build them again), and
applied by :func:`masakari.ha.notifications.record` inside the transaction that records the
report. Nothing here reads the database: the record step asks it for what a rule needs
(the guard rows to hold, the failure reports of a window) and hands the answers back.
The defaults are the reference's: no guard, no hold.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from masakari.conf import detection as detection_opts
from masakari.conf import host_return as host_return_opts
from masakari.db import evidence, holds

# The guard row of "every segment": a key no host or segment uuid takes.
GLOBAL_GUARD = "masakari-mass-failure-global"
# [DEFAULT] duplicate_notification_detection_interval's default.
DUPLICATE_WINDOW = 180


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The mass-failure guard's [guards] options; a zero disables its check."""

    segment_max: int = 0
    segment_max_percent: int = 0
    global_max: int = 0
    global_max_percent: int = 0
    window: int = 300

    @property
    def per_segment(self) -> bool:
        return bool(self.segment_max or self.segment_max_percent)

    @property
    def global_(self) -> bool:
        return bool(self.global_max or self.global_max_percent)


@dataclasses.dataclass(frozen=True)
class Report:
    """What the rules look at in a report: its type, and a COMPUTE_HOST's event and status.

    ``detector``: the detector that made the report (masakari.detection), None for a
    monitor's. The API's schema refuses the key in a client's payload: only the engine's
    detector writes it.
    """

    type: str
    event: str = ""
    host_status: str = ""
    detector: str | None = None

    @classmethod
    def of(cls, type_: str, payload: Any) -> Report:
        if type_ != "COMPUTE_HOST" or not isinstance(payload, Mapping):
            return cls(type_)
        detector = payload.get("detector")
        return cls(
            type_,
            str(payload.get("event") or "").upper(),
            str(payload.get("host_status") or "").upper(),
            None if detector is None else str(detector),
        )

    @property
    def source(self) -> str:
        """Who made the report, as its evidence names it."""
        return evidence.MONITOR if self.detector is None else f"detector {self.detector}"

    @property
    def is_failure(self) -> bool:
        """A host failure report (COMPUTE_HOST, STOPPED): what the mass-failure guard counts."""
        return self.type == "COMPUTE_HOST" and self.event == "STOPPED"

    @property
    def is_return(self) -> bool:
        """A report that a host is back (STARTED, NORMAL): what [host_return] acts on."""
        return self.host_status == "NORMAL" and self.event == "STARTED"


# (since, segment uuid or None for every segment) -> the hosts with a failure report
# generated since then, and how many hosts there are: what the record step reads.
Failures = Callable[[datetime.datetime, str | None], tuple[set[str], int]]


def failed_hosts(reports: Iterable[tuple[str, str | None]]) -> set[str]:
    """The hosts among (host uuid, stored payload) COMPUTE_HOST reports that report a failure."""
    found = set()
    for host_uuid, payload in reports:
        try:
            decoded = json.loads(payload) if payload else None
        except ValueError:
            continue
        if Report.of("COMPUTE_HOST", decoded).is_failure:
            found.add(host_uuid)
    return found


def _past(failed: int, total: int, maximum: int, percent: int) -> bool:
    if maximum and failed > maximum:
        return True
    return bool(percent) and failed * 100 > percent * total


@dataclasses.dataclass(frozen=True)
class Rules:
    """The duplicate window, the maintenance rule and [guards], as the intake applies them."""

    thresholds: Thresholds = Thresholds()
    hold_unknown: bool = False
    # [host_return] on: a host on maintenance may report that it is back.
    host_return: bool = False
    duplicate_window: int = DUPLICATE_WINDOW
    # Host failures are judged ([detection] or [verdict] on): keep each report as evidence.
    evidence: bool = False

    @classmethod
    def from_conf(cls, conf: Any) -> Rules:
        group = conf.guards
        return cls(
            evidence=detection_opts.verdict_active(conf),
            duplicate_window=conf.duplicate_notification_detection_interval,
            thresholds=Thresholds(
                segment_max=group.segment_max_failed_hosts,
                segment_max_percent=group.segment_max_failed_hosts_percent,
                global_max=group.global_max_failed_hosts,
                global_max_percent=group.global_max_failed_hosts_percent,
                window=group.failed_hosts_window,
            ),
            hold_unknown=group.hold_unknown_host_reports,
            host_return=host_return_opts.enabled(conf),
        )

    def guard_keys(self, report: Report, host_uuid: str, segment_uuid: str) -> list[str]:
        """The guard rows the report's transaction holds, in this order, before any read.

        The host's always: it serialises the duplicate check. A failure report also takes its
        segment's (and the global one) when a threshold counts there: two intakes of two
        hosts of one segment then take turns, and the second counts the first one's report.
        Always host, then segment, then global: no two intakes wait in a circle. On InnoDB
        the first plain read fixes the snapshot, which must include every report committed
        by a guard's previous holder.
        """
        keys = [host_uuid]
        if report.is_failure and self.thresholds.per_segment:
            keys.append(segment_uuid)
        if report.is_failure and self.thresholds.global_:
            keys.append(GLOBAL_GUARD)
        return keys

    def refused_on_maintenance(self, report: Report, on_maintenance: bool) -> bool:
        """A host on maintenance is not reported on; with [host_return] on, it may come back."""
        return on_maintenance and not (self.host_return and report.is_return)

    def duplicates_since(self, generated_time: datetime.datetime) -> datetime.datetime:
        """The oldest generated_time an equal report may have to make this one a duplicate."""
        try:
            return generated_time - datetime.timedelta(seconds=self.duplicate_window)
        except OverflowError:
            return datetime.datetime.min

    def same_report(self, report: Report, payload: Mapping[str, Any]) -> Callable[[Any], bool]:
        """Which stored payloads make this report a duplicate.

        The reference's rule: an equal payload. And one failure is one failure whoever saw
        it: a detector's failure report and any other failure report of the host (a
        monitor's, another detector's) are the same failure, whatever their payloads.
        """

        def same(stored: Any) -> bool:
            if stored == payload:
                return True
            if not report.is_failure:
                return False
            other = Report.of(report.type, stored)
            return other.is_failure and (report.detector is not None or other.detector is not None)

        return same

    def supersedes_unknown(self, report: Report) -> bool:
        """A NORMAL report ends the host's held UNKNOWN ones (it does what they waited for)."""
        return self.hold_unknown and report.host_status == "NORMAL"

    def hold_reason(
        self,
        report: Report,
        host_uuid: str,
        segment_uuid: str,
        generated_time: datetime.datetime,
        failures: Failures,
    ) -> str | None:
        """Why the report is held, or None; ``failures`` is asked only what a check needs.

        The hosts counted are those with a failure report generated within the window before
        this one (any status: a recovered host still failed), this host included.
        """
        # A detector's report says UNKNOWN by nature: the verdict judges it, not this guard.
        if self.hold_unknown and report.host_status == "UNKNOWN" and report.detector is None:
            return holds.REASON_UNKNOWN
        if not report.is_failure:
            return None
        t = self.thresholds
        since = generated_time - datetime.timedelta(seconds=t.window)
        if t.per_segment:
            failed, total = failures(since, segment_uuid)
            if _past(len(failed | {host_uuid}), total, t.segment_max, t.segment_max_percent):
                return holds.REASON_SEGMENT
        if t.global_:
            failed, total = failures(since, None)
            if _past(len(failed | {host_uuid}), total, t.global_max, t.global_max_percent):
                return holds.REASON_GLOBAL
        return None

"""The detector's judgement of one poll: which hosts are reported, held, or not yet.

Pure: :class:`Gates` is given what a poll saw and keeps what it must remember between polls
(how many polls each host has looked down, which hosts the previous poll saw heartbeat,
the cliff's wait, the storm's end). The gates, in the order they apply:

- **down_polls**: a host is a candidate once it looked down in that many polls in a row.
- **all-stale breaker**: more than ``breaker_percent`` % of a segment's hosts in service, or
  of all of them, look down at once (counting segments or clouds of at least
  ``breaker_min_hosts``): what the detector sees is more likely its own isolation, or
  Nova's heartbeats failing, than that many hosts dying. Its candidates are held for an
  operator (``breaker_action = hold``) or not reported (``skip``), and so are all
  candidates until ``storm_cooldown`` seconds after the last poll past the threshold (the
  **storm cooldown**). Hosts whose failure is already known count too: the breaker weighs
  how much of a segment looks down, so the cooldown starts once held hosts stop looking
  down or leave the poll (maintenance), not when they were reported.
- **heartbeat cliff**: the fresh heartbeats drop by more than ``cliff_percent`` % (and by two
  hosts or more) from one poll to the next, counted over the hosts both polls saw (a host
  added, removed or put on maintenance in between neither makes a cliff nor hides one):
  nothing is reported for ``cliff_polls`` polls; late heartbeats of a Nova hiccup come back
  meanwhile.
- **cap**: at most ``max_reports_per_poll`` hosts are reported for recovery per poll, the
  longest silent first; the others wait for the next polls.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

from masakari.conf import detection as opts
from masakari.db import holds

BREAKER = "breaker"
STORM = "storm"
CLIFF = "cliff"
CAP = "cap"


@dataclasses.dataclass(frozen=True)
class Seen:
    """A host in service as one poll saw it in Nova."""

    name: str
    segment_uuid: str
    down: bool
    # Seconds since its last heartbeat (None: Nova gave no readable updated_at).
    age: float | None = None
    state: str | None = None
    # Its failure is already known (an open notification, or one in the duplicate window).
    known: bool = False


@dataclasses.dataclass(frozen=True)
class Settings:
    down_polls: int = 1
    breaker_percent: int = 50
    breaker_min_hosts: int = 3
    breaker_hold: bool = True
    storm_cooldown: float = 600.0
    cliff_percent: int = 20
    cliff_polls: int = 3
    max_reports: int = 5

    @classmethod
    def from_conf(cls, conf: Any) -> Settings:
        group = conf.detection
        return cls(
            down_polls=group.down_polls,
            breaker_percent=group.breaker_percent,
            breaker_min_hosts=group.breaker_min_hosts,
            breaker_hold=group.breaker_action == opts.BREAKER_HOLD,
            storm_cooldown=float(group.storm_cooldown),
            cliff_percent=group.cliff_percent,
            cliff_polls=group.cliff_polls,
            max_reports=group.max_reports_per_poll,
        )


@dataclasses.dataclass
class Outcome:
    """What one poll does."""

    report: list[Seen] = dataclasses.field(default_factory=list)
    hold: list[Seen] = dataclasses.field(default_factory=list)
    hold_reason: str | None = None
    # Candidates this poll does not report: capped, waiting out a cliff, or skipped.
    deferred: list[Seen] = dataclasses.field(default_factory=list)
    # The gates that acted: BREAKER, STORM, CLIFF, CAP.
    active: set[str] = dataclasses.field(default_factory=set)
    # Where the breaker tripped ("segment S: 3 of 5 hosts down", "cloud: ...").
    breaker_scopes: list[str] = dataclasses.field(default_factory=list)
    # A new end of the storm cooldown, to keep with the lease.
    storm_until: datetime.datetime | None = None


class Gates:
    def __init__(self, settings: Settings, storm_until: datetime.datetime | None = None) -> None:
        self.settings = settings
        self.storm_until = storm_until
        self._streaks: dict[str, int] = {}
        # The previous poll's hosts: name -> whether its heartbeat was fresh.
        self._previous: dict[str, bool] | None = None
        self._cliff_left = 0

    def forget(self) -> None:
        """A poll that could not see (the self-check failed): the next ones start over."""
        self._streaks.clear()
        self._previous = None

    def judge(self, seen: Sequence[Seen], now: datetime.datetime) -> Outcome:
        s = self.settings
        out = Outcome()
        self._streaks = {h.name: self._streaks.get(h.name, 0) + 1 for h in seen if h.down}
        candidates = [
            h for h in seen if h.down and not h.known and self._streaks[h.name] >= s.down_polls
        ]
        out.breaker_scopes = self._breaker(seen)
        if out.breaker_scopes:
            out.active.add(BREAKER)
            until = now + datetime.timedelta(seconds=s.storm_cooldown)
            if self.storm_until is None or until > self.storm_until:
                self.storm_until = out.storm_until = until
        storm = bool(out.breaker_scopes) or (
            self.storm_until is not None and now < self.storm_until
        )
        if storm and not out.breaker_scopes:
            out.active.add(STORM)
        if self._cliff(seen):
            out.active.add(CLIFF)
            out.deferred = candidates
            return out
        if storm and candidates:
            if s.breaker_hold:
                out.hold = candidates
                out.hold_reason = holds.REASON_BREAKER if out.breaker_scopes else holds.REASON_STORM
            else:
                out.deferred = candidates
            return out
        candidates.sort(key=lambda h: (-(h.age or 0.0), h.name))
        if s.max_reports and len(candidates) > s.max_reports:
            out.active.add(CAP)
            out.report = candidates[: s.max_reports]
            out.deferred = candidates[s.max_reports :]
        else:
            out.report = candidates
        return out

    def _breaker(self, seen: Sequence[Seen]) -> list[str]:
        s = self.settings
        scopes = []
        segments: dict[str, list[Seen]] = {}
        for host in seen:
            segments.setdefault(host.segment_uuid, []).append(host)
        for segment, hosts in sorted(segments.items()):
            if _past(hosts, s.breaker_percent, s.breaker_min_hosts):
                scopes.append(f"segment {segment}: {_count(hosts)}")
        if _past(seen, s.breaker_percent, s.breaker_min_hosts):
            scopes.append(f"cloud: {_count(seen)}")
        return scopes

    def _cliff(self, seen: Sequence[Seen]) -> bool:
        """Whether this poll waits out a heartbeat cliff (one seen now, or an earlier one)."""
        s = self.settings
        before, self._previous = self._previous, {h.name: not h.down for h in seen}
        if s.cliff_percent and before is not None:
            # Only the hosts both polls saw: hosts that came or went are not heartbeats lost.
            both = [h for h in seen if h.name in before]
            was_fresh = sum(1 for h in both if before[h.name])
            drop = was_fresh - sum(1 for h in both if not h.down)
            if drop >= 2 and drop * 100 > s.cliff_percent * was_fresh:
                self._cliff_left = s.cliff_polls
        if self._cliff_left > 0:
            self._cliff_left -= 1
            return True
        return False


def _past(hosts: Sequence[Seen], percent: int, min_hosts: int) -> bool:
    total = len(hosts)
    down = sum(1 for h in hosts if h.down)
    return total >= min_hosts and down * 100 > percent * total


def _count(hosts: Sequence[Seen]) -> str:
    return f"{sum(1 for h in hosts if h.down)} of {len(hosts)} hosts down"

"""The detector's gates, one poll after the other (masakari/detection/gates.py)."""

from __future__ import annotations

import datetime

from masakari.db import holds
from masakari.detection.gates import BREAKER, CAP, CLIFF, STORM, Gates, Seen, Settings

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
# Gates off unless a test turns one on.
OFF = Settings(
    down_polls=1,
    breaker_percent=100,
    breaker_min_hosts=1,
    storm_cooldown=600,
    cliff_percent=0,
    cliff_polls=3,
    max_reports=0,
)


def cloud(down: set[str], hosts: int = 10, segments: int = 1, known: set[str] = frozenset()):
    return [
        Seen(
            f"h{i}",
            f"seg-{i % segments}",
            f"h{i}" in down,
            age=100.0 + i if f"h{i}" in down else 3.0,
            state="down" if f"h{i}" in down else "up",
            known=f"h{i}" in known,
        )
        for i in range(hosts)
    ]


def names(hosts) -> list[str]:
    return [h.name for h in hosts]


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def test_a_host_is_reported_after_down_polls_in_a_row_and_a_known_one_never() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "down_polls": 3}))
    assert gates.judge(cloud({"h1", "h2"}, known={"h2"}), at(0)).report == []
    assert gates.judge(cloud({"h1", "h2"}, known={"h2"}), at(10)).report == []
    # One good poll starts the count over.
    assert gates.judge(cloud(set()), at(20)).report == []
    for t in (30, 40):
        assert gates.judge(cloud({"h1"}), at(t)).report == []
    assert names(gates.judge(cloud({"h1", "h2"}, known={"h2"}), at(50)).report) == ["h1"]


def test_a_blind_poll_starts_the_counts_over() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "down_polls": 2}))
    assert gates.judge(cloud({"h1"}), at(0)).report == []
    gates.forget()
    assert gates.judge(cloud({"h1"}), at(10)).report == []
    assert names(gates.judge(cloud({"h1"}), at(20)).report) == ["h1"]


def test_the_breaker_holds_past_its_percentage_of_a_segment_or_of_the_cloud() -> None:
    settings = Settings(**{**OFF.__dict__, "breaker_percent": 50, "breaker_min_hosts": 3})
    # Two segments of 5: 3 down in one is 60 % of it (30 % of the cloud).
    out = Gates(settings).judge(cloud({"h0", "h2", "h4"}, segments=2), at(0))
    assert out.active == {BREAKER}
    assert out.breaker_scopes == ["segment seg-0: 3 of 5 hosts down"]
    assert (names(out.hold), out.hold_reason, out.report) == (
        ["h0", "h2", "h4"],
        holds.REASON_BREAKER,
        [],
    )
    # 2 of 5 in each segment: 40 % each, but 4 of 10 is not past 50 % of the cloud either.
    out = Gates(settings).judge(cloud({"h0", "h1", "h2", "h3"}, segments=2), at(0))
    assert (out.active, sorted(names(out.report))) == (set(), ["h0", "h1", "h2", "h3"])
    # 6 of 10 hosts, 3 in each segment of 5: both segments and the cloud.
    out = Gates(settings).judge(cloud({f"h{i}" for i in range(6)}, segments=2), at(0))
    assert len(out.breaker_scopes) == 3 and len(out.hold) == 6


def test_the_breaker_leaves_small_segments_to_the_cloud_count() -> None:
    settings = Settings(**{**OFF.__dict__, "breaker_percent": 50, "breaker_min_hosts": 3})
    # Segments of two: one down is half of one, but small segments are not judged alone.
    out = Gates(settings).judge(cloud({"h0"}, hosts=6, segments=3), at(0))
    assert (out.active, names(out.report)) == (set(), ["h0"])


def test_the_breaker_may_report_nothing_instead() -> None:
    settings = Settings(**{**OFF.__dict__, "breaker_percent": 50, "breaker_hold": False})
    out = Gates(settings).judge(cloud({"h1", "h2", "h3"}, hosts=4), at(0))
    assert (out.hold, out.report, names(out.deferred)) == ([], [], ["h1", "h2", "h3"])


def test_after_a_mass_event_the_storm_cooldown_holds_what_follows() -> None:
    settings = Settings(**{**OFF.__dict__, "breaker_percent": 50, "storm_cooldown": 600})
    gates = Gates(settings)
    out = gates.judge(cloud({"h1", "h2", "h3"}, hosts=4), at(0))
    assert out.storm_until == at(600)
    # The three are known now (held); a fourth fails 5 minutes later: still the storm.
    out = gates.judge(cloud({"h0"}, hosts=4), at(300))
    assert (out.active, names(out.hold), out.hold_reason) == (
        {STORM},
        ["h0"],
        holds.REASON_STORM,
    )
    assert names(gates.judge(cloud({"h0"}, hosts=4), at(601)).report) == ["h0"]


def test_held_hosts_still_down_keep_the_breaker_tripped_and_push_the_cooldown_on() -> None:
    # docs/operations.md, "Reported hosts still count toward the breaker".
    settings = Settings(**{**OFF.__dict__, "breaker_percent": 50, "storm_cooldown": 600})
    gates = Gates(settings)
    gates.judge(cloud({"h1", "h2", "h3"}, hosts=4), at(0))
    # Held, not released: known, still down, still watched. Nothing new to report, but the
    # breaker trips again, and the cooldown's end moves with each poll.
    out = gates.judge(cloud({"h1", "h2", "h3"}, hosts=4, known={"h1", "h2", "h3"}), at(300))
    assert (out.active, out.hold, out.storm_until) == ({BREAKER}, [], at(900))
    # They heartbeat again (or were released and recovered: on maintenance, out of the
    # poll): the breaker lets go, and the cooldown runs from its last trip.
    out = gates.judge(cloud(set(), hosts=4), at(310))
    assert (out.active, out.storm_until) == ({STORM}, None)
    assert gates.judge(cloud({"h0"}, hosts=4), at(899)).hold_reason == holds.REASON_STORM
    assert names(gates.judge(cloud({"h0"}, hosts=4), at(901)).report) == ["h0"]


def test_a_new_detector_honours_the_storm_its_lease_kept() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "breaker_percent": 50}), storm_until=at(100))
    assert gates.judge(cloud({"h0"}), at(50)).hold_reason == holds.REASON_STORM
    assert names(gates.judge(cloud({"h0"}), at(150)).report) == ["h0"]


def test_a_heartbeat_cliff_waits_its_polls_then_reports_who_is_still_down() -> None:
    settings = Settings(**{**OFF.__dict__, "cliff_percent": 20, "cliff_polls": 3})
    gates = Gates(settings)
    assert gates.judge(cloud(set()), at(0)).report == []
    # 3 of 10 heartbeats gone at once (30 % > 20 %): three polls wait.
    for t in (10, 20, 30):
        out = gates.judge(cloud({"h1", "h2", "h3"}), at(t))
        assert (out.active, out.report, names(out.deferred)) == ({CLIFF}, [], ["h1", "h2", "h3"])
    # Two came back meanwhile; the third is reported.
    assert names(gates.judge(cloud({"h3"}), at(40)).report) == ["h3"]


def test_a_single_host_or_a_small_drop_is_no_cliff() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "cliff_percent": 20}))
    gates.judge(cloud(set(), hosts=3), at(0))
    # One of three (33 %) is past the percentage, but a single host is a failure, not a cliff.
    assert names(gates.judge(cloud({"h1"}, hosts=3), at(10)).report) == ["h1"]
    gates = Gates(Settings(**{**OFF.__dict__, "cliff_percent": 20}))
    gates.judge(cloud(set(), hosts=20), at(0))
    assert names(gates.judge(cloud({"h1", "h2"}, hosts=20), at(10)).report) == ["h2", "h1"]


def test_the_cap_reports_the_longest_silent_first_and_the_rest_next_poll() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "max_reports": 2}))
    down = {"h1", "h4", "h7"}  # ages 101, 104, 107
    out = gates.judge(cloud(down), at(0))
    assert (out.active, names(out.report), names(out.deferred)) == (
        {CAP},
        ["h7", "h4"],
        ["h1"],
    )
    # Reported ones are known at the next poll; the one left waiting goes now.
    out = gates.judge(cloud(down, known={"h7", "h4"}), at(10))
    assert (out.active, names(out.report)) == (set(), ["h1"])


def test_hosts_that_leave_between_two_polls_make_no_cliff() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "cliff_percent": 20}))
    gates.judge(cloud(set()), at(0))
    # h7-h9 put on maintenance (no longer watched), h1 fails: 9 of the 10 fresh hosts are
    # gone from the count, but of the 7 hosts both polls saw only one lost its heartbeat.
    out = gates.judge(cloud({"h1"})[:7], at(10))
    assert (out.active, names(out.report)) == (set(), ["h1"])


def test_hosts_that_join_between_two_polls_hide_no_cliff() -> None:
    gates = Gates(Settings(**{**OFF.__dict__, "cliff_percent": 20}))
    gates.judge(cloud(set()), at(0))
    # 3 of the 10 hosts go stale as 3 new hosts heartbeat: still 10 fresh, yet 30 % of the
    # hosts both polls saw stopped heartbeating at once.
    joined = [Seen(f"new{i}", "seg-0", False, age=1.0, state="up") for i in range(3)]
    out = gates.judge(cloud({"h1", "h2", "h3"}) + joined, at(10))
    assert (out.active, out.report, names(out.deferred)) == ({CLIFF}, [], ["h1", "h2", "h3"])

"""[capacity]: the failures each segment should tolerate, and how often the engine checks."""

from __future__ import annotations

from oslo_config import cfg, types

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "capacity",
    title="Failover capacity",
    help=(
        "(masakari rewrite only) How many host failures at once each segment is meant to "
        "absorb (docs/operations.md, Failures tolerated), and whether the engine keeps the "
        "room for it in Placement (hold_room; off by default: nothing is written)."
    ),
)

OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "failures_to_tolerate",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) The target of every segment: how many of its hosts
should be able to fail at once with every instance that would be evacuated
still placed. 0 is no target: the failures tolerated are shown, never judged.
``masakari-manage segment check`` exits non-zero, and the readiness doctor
reports a failure, when a segment tolerates fewer.
"""
        ),
    ),
    cfg.Opt(
        "segment_failures_to_tolerate",
        type=types.Dict(value_type=types.Integer(min=0)),
        default={},
        help=paragraphs(
            """
(masakari rewrite only) Targets of single segments, overriding
failures_to_tolerate: ``name:k`` pairs separated by commas, a segment named
by its name or uuid (``rack-a:1,rack-b:2``).
"""
        ),
    ),
    cfg.IntOpt(
        "check_interval",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two computations of every segment's
failures tolerated by the engine (with [coordination], the leader), for the
metrics masakari_segment_failures_tolerated and
masakari_segment_failures_to_tolerate. Each reads Nova's services and servers
and Placement for every host: 0 (the default) computes them only when asked
(the readiness doctor, API 1.8, masakari-manage segment check).
"""
        ),
    ),
]


HOLD_OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "hold_room",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Keep each segment's failover room out of reach of new
boots: the engine (with [coordination], the leader) adds the room its target
of failures needs (failures_to_tolerate, segment_failures_to_tolerate) to the
``reserved`` amounts of the segment's Placement inventories (VCPU, MEMORY_MB,
DISK_GB of the hosts Nova's scheduler may place on), never more than the
worst judged failure places on each host. A host failure's recovery gives the
segment's room back before it fences or evacuates, and it is held again once
no host failure of the segment is being recovered. What is added is recorded:
turning this off gives back exactly what was added (also
``masakari-manage segment release-room``). nova-compute writes its own
reserved amounts when it refreshes its inventory ([compute]
resource_provider_association_refresh, 300 s, and at its start): the room is
then added again at the next hold_interval (docs/operations.md, Held room).
"""
        ),
    ),
    cfg.IntOpt(
        "hold_interval",
        default=60,
        min=5,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two passes of the engine over every
segment's held room (hold_room): each reads Nova's services and servers and
Placement for the segment's hosts, and writes only the inventories whose room
changed. With hold_room off, a pass gives back room still recorded as held
and then reads nothing more.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS + HOLD_OPTS)]

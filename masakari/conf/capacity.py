"""[capacity]: the failures each segment should tolerate, and how often the engine checks."""

from __future__ import annotations

from oslo_config import cfg, types

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "capacity",
    title="Failover capacity",
    help=(
        "(masakari rewrite only) How many host failures at once each segment is meant to "
        "absorb (docs/operations.md, Failures tolerated). Read only: nothing is written to "
        "Placement or Nova."
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


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

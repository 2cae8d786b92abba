"""[drill]: fire drills, the recovery path run on purpose on a host the operator names."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "drill",
    title="Fire drills",
    help=(
        "(masakari rewrite only) Fire drills (docs/operations.md, Fire drills): a spare, or a "
        "host carrying only canary instances, is fenced, disabled and evacuated for real, "
        "then restored. Off by default: no drill is taken or scheduled."
    ),
)

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Accept fire drills (masakari-manage drill run, POST
/v1/segments/{segment_id}/drills at API 1.9) and let masakari-engine run them.
Set it on masakari-api and masakari-engine alike. Off: a drill is refused with
a 400 (the API) or exit code 1 (masakari-manage), and the engine takes none.
"""
        ),
    ),
    cfg.StrOpt(
        "canary_tag",
        default="masakari-canary",
        help=paragraphs(
            """
(masakari rewrite only) The Nova server tag that marks an instance a drill may
evacuate. A drill refuses a host with any server without it, unless asked to
allow untagged servers.
"""
        ),
    ),
    cfg.IntOpt(
        "schedule_interval",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between scheduled drills; 0 (the default)
schedules none. Every interval, the engine that runs the periodic tasks starts
a drill on one spare per segment (reserved, not on maintenance, no instance in
Nova), the spare drilled longest ago first; never while a notification of the
segment is being recovered, nor while a drill of the segment is under way.
"""
        ),
    ),
    cfg.FloatOpt(
        "poll_interval",
        default=2.0,
        min=0.05,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two looks of an engine for a drill to
run (a new one, or one whose engine stopped renewing its claim), and between
two reads of Nova or a BMC while a drill waits for a change.
"""
        ),
    ),
    cfg.FloatOpt(
        "service_up_timeout",
        default=600.0,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds a drill's restore waits for the host's
nova-compute to report up after its power on. Past it the drill fails and the
host is left disabled and on maintenance: a host that is not up is never
enabled.
"""
        ),
    ),
    cfg.FloatOpt(
        "migration_timeout",
        default=600.0,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds a drill waits for each canary it moves back to
its host (move_back) to arrive there.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

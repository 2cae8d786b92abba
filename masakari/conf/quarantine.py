"""[quarantine]: degraded hosts taken out of service and emptied by live migration before
they fail (docs/operations.md, Quarantine)."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "quarantine",
    title="Quarantine",
    help=(
        "(masakari rewrite only) Degraded hosts (an operator's word, an Alertmanager alert, "
        "the host's Redfish health) disabled in Nova with a reason, put on maintenance and "
        "emptied by live migration before they fail (docs/operations.md, Quarantine). Off "
        "by default."
    ),
)

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Accept quarantines (API 1.10, masakari-manage host
quarantine, the signals below) and let the engines run them. Off: a request is
refused and nothing runs.
"""
        ),
    ),
    cfg.IntOpt(
        "max_hosts_per_segment",
        default=1,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) At most this many hosts of a segment in quarantine at
once (requested, running or done and not yet returned to service); a request
past it is held for an operator, so that a flood of alerts never empties a
segment.
"""
        ),
    ),
    cfg.IntOpt(
        "max_percent",
        default=50,
        min=1,
        max=100,
        help=paragraphs(
            """
(masakari rewrite only) At most this share (percent, rounded down, at least
one host) of a segment's hosts in quarantine at once; the stricter of this and
max_hosts_per_segment holds.
"""
        ),
    ),
    cfg.IntOpt(
        "max_concurrent_migrations",
        default=2,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Live migrations of one quarantined host in flight at
once.
"""
        ),
    ),
    cfg.IntOpt(
        "migration_timeout",
        default=900,
        min=10,
        help=paragraphs(
            """
(masakari rewrite only) Seconds a live migration may take before the
instance is reported left (the migration itself is not aborted: Nova may
still complete it, and the next look says so).
"""
        ),
    ),
    cfg.StrOpt(
        "block_migration",
        default="auto",
        choices=("auto", "true", "false"),
        help=paragraphs(
            """
(masakari rewrite only) What the live migrations ask Nova: ``auto`` lets Nova
choose a block migration where the instance has no shared storage.
"""
        ),
    ),
    cfg.StrOpt(
        "disable_reason",
        default="masakari quarantine",
        help=paragraphs(
            """
(masakari rewrite only) The start of the disabled reason a quarantine sets
on the host's nova-compute; the quarantine's reason follows it.
"""
        ),
    ),
    cfg.IntOpt(
        "poll_interval",
        default=5,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two looks of an engine for
quarantines to run (requested ones, and running ones whose engine's claim
ran out), and between two looks at a migration in flight.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

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


ALERT_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "alertmanager_username",
        help=paragraphs(
            """
(masakari rewrite only) With alertmanager_password: the HTTP basic
credentials Alertmanager's webhook_config http_config sends (basic_auth).
masakari-api serves POST /alertmanager only when these, or
alertmanager_bearer_token, are set and quarantine is enabled; Keystone tokens
are not asked there (Alertmanager cannot get one).
"""
        ),
    ),
    cfg.StrOpt(
        "alertmanager_password",
        secret=True,
        help="(masakari rewrite only) See alertmanager_username.",
    ),
    cfg.StrOpt(
        "alertmanager_bearer_token",
        secret=True,
        help=paragraphs(
            """
(masakari rewrite only) The bearer token Alertmanager's http_config sends
(authorization: credentials); accepted besides the basic credentials.
"""
        ),
    ),
    cfg.ListOpt(
        "alert_host_labels",
        default=["host", "hostname", "nodename", "instance"],
        help=paragraphs(
            """
(masakari rewrite only) The alert labels that name the host, tried in this
order: the first one present is the host, without a ``:port`` (the
``instance`` label of an exporter), and matched to masakari's host names
exactly, then by its first DNS label (``compute-1.example.org`` matches
``compute-1``). An alert naming no known host is answered ``ignored``.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS + ALERT_OPTS)]

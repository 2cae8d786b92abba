"""[quarantine]: degraded hosts taken out of service and emptied by live migration before
they fail (docs/operations.md, Quarantine)."""

from __future__ import annotations

from oslo_config import cfg, types

from masakari.conf._text import paragraphs

CONSERVATIVE = "conservative"
AGGRESSIVE = "aggressive"
STORAGE_ACTIONS = (CONSERVATIVE, AGGRESSIVE)

GROUP = cfg.OptGroup(
    "quarantine",
    title="Quarantine",
    help=(
        "(masakari rewrite only) Degraded hosts (an operator's word, an Alertmanager alert, "
        "the host's Redfish health, a lost storage path) disabled in Nova with a reason, put "
        "on maintenance and emptied by live migration before they fail (docs/operations.md, "
        "Quarantine). Off by default."
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


REDFISH_OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "redfish_health_interval",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Seconds between two reads, by the engine (with
[coordination], the leader), of the Redfish health (Status.Health and
HealthRollup) of every host whose [fencing] config_file list has a redfish
entry. 0 (the default) reads nothing. Needs enabled and [fencing] config_file.
"""
        ),
    ),
    cfg.ListOpt(
        "redfish_health_quarantine",
        default=["Critical"],
        help=paragraphs(
            """
(masakari rewrite only) The Redfish health values (of Health or
HealthRollup) that ask for the host's quarantine (source redfish); back to OK
(both), a quarantine not started yet is withdrawn. A BMC that does not answer
asks for nothing.
"""
        ),
    ),
]


STORAGE_OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "storage_error_instances",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) When this many distinct instances of one host
reported an I/O error (masakari-monitors' VM notification, event IO_ERROR)
within storage_error_window seconds, the engine judges the host's storage
path lost and acts as storage_loss_action says, instead of restarting the
instances in place. 0 (the default) judges nothing: every I/O error restarts
its instance, as the reference does.
"""
        ),
    ),
    cfg.IntOpt(
        "storage_error_window",
        default=300,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds, counted back from each I/O error report's
generated_time, within which storage_error_instances instances must have
reported one.
"""
        ),
    ),
    cfg.StrOpt(
        "storage_loss_action",
        default=CONSERVATIVE,
        choices=(
            (CONSERVATIVE, "quarantine the host: its instances are live-migrated away"),
            (AGGRESSIVE, "record a host failure: the host is fenced and evacuated"),
        ),
        help=paragraphs(
            """
(masakari rewrite only) What a storage path judged lost does to its host:
``conservative`` requests its quarantine (source storage; needs enabled),
``aggressive`` records a host failure notification, recovered (fenced and
evacuated) as a monitor's (docs/operations.md, Storage-path loss).
"""
        ),
    ),
    cfg.BoolOpt(
        "storage_loss_fallback",
        default=True,
        help=paragraphs(
            """
(masakari rewrite only) The conservative action's fallback: when a quarantine
asked for by a lost storage path ends with instances still on the host (a
live migration refused or failed, an instance that cannot be live-migrated),
a host failure of the host is recorded, so that it is fenced and they are
evacuated, if the host's recovery plan has room for every one of them; without
that room they are left and nothing is fenced. False: they are always left
(docs/operations.md, Storage-path loss).
"""
        ),
    ),
    cfg.Opt(
        "segment_storage_loss_action",
        type=types.Dict(value_type=types.String(choices=STORAGE_ACTIONS)),
        default={},
        help=paragraphs(
            """
(masakari rewrite only) storage_loss_action of single segments: ``name:action``
pairs separated by commas, a segment named by its name or uuid
(``ceph-racks:aggressive,local-disk:conservative``).
"""
        ),
    ),
]


def storage_loss_action(conf: cfg.ConfigOpts, segment_uuid: str, segment_name: str) -> str:
    """The segment's storage_loss_action: its own (by uuid, then name), else the default."""
    options = conf.quarantine
    own = options.segment_storage_loss_action
    for key in (segment_uuid, segment_name):
        if key in own:
            return str(own[key])
    return str(options.storage_loss_action)


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS + ALERT_OPTS + REDFISH_OPTS + STORAGE_OPTS)]

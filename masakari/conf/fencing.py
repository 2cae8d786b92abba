"""[fencing]: host (power) fencing, proving a failed host off before evacuating it."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "fencing",
    title="Host fencing",
    help=(
        "(masakari rewrite only) Fencing of failed compute hosts (IPMI, Redfish, fence "
        "agents, fence_kdump, a shared-disk lease, Ceph's blocklist) before their instances "
        "are evacuated. Off while "
        "config_file is unset: recovery then trusts the monitor's report, as in masakari "
        "22.0.0."
    ),
)

# What a COMPUTE_HOST failure of a host the fencing file has no driver for does.
UNFENCED_RECOVER = "recover"
UNFENCED_HOLD = "hold"

# What a kdump entry's messages are worth ([fencing] kdump_trust).
KDUMP_PROOF = "proof"
KDUMP_HINT = "hint"

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "config_file",
        default=None,
        help=paragraphs(
            """
(masakari rewrite only) The host fencing file (YAML): for each host name or
pattern, and as a segment's default, the ordered drivers that power the host
off (ipmi, redfish, agent), prove it crashed (kdump) or dead (lease), or cut it
off its storage (ceph), with their addresses and credentials. Read by
masakari-engine only; keep it readable by the engine's user alone. Unset: no
host is fenced (masakari 22.0.0's behaviour). See docs/operations.md, Host
fencing.
"""
        ),
    ),
    cfg.StrOpt(
        "unfenced_hosts",
        default=UNFENCED_RECOVER,
        choices=[
            (UNFENCED_RECOVER, "recover on the monitor's word, as without fencing"),
            (UNFENCED_HOLD, "hold the notification for an operator"),
        ],
        help=paragraphs(
            """
(masakari rewrite only) With config_file set, what a host failure of a host
the file gives no driver does.
"""
        ),
    ),
    cfg.FloatOpt(
        "confirm_timeout",
        default=30.0,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Seconds the power state is read, after a driver's
power off, until it reads off; past it the driver counts as failed and the
next one of the host's list is tried.
"""
        ),
    ),
    cfg.FloatOpt(
        "confirm_interval",
        default=1.0,
        min=0.05,
        help="(masakari rewrite only) Seconds between two power state reads while confirming.",
    ),
    cfg.BoolOpt(
        "power_on_after_recovery",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Power the fenced host on again once its instances are
evacuated, through the driver that powered it off.
"""
        ),
    ),
    cfg.StrOpt(
        "kdump_listen",
        default=None,
        help=paragraphs(
            """
(masakari rewrite only) ADDRESS:PORT on which each masakari-engine receives
fence_kdump_send's UDP messages (fence_kdump's port is 7410). Only messages
from the addresses of the fencing file's kdump entries (for the hosts masakari
knows) are kept, at most two a second per address; bind it to a network that
the compute hosts alone reach. Unset: no listener, and kdump entries of the
fencing file see only what other engines received.
"""
        ),
    ),
    cfg.IntOpt(
        "kdump_max_age",
        default=600,
        min=1,
        deprecated_for_removal=True,
        deprecated_reason=(
            "Ignored: a kdump message now counts only when it arrived after the failure "
            "was reported to masakari and after the host's last heartbeat (docs/operations.md, "
            "Host fencing), never by its age before the report."
        ),
        help="(masakari rewrite only) Ignored (deprecated).",
    ),
    cfg.StrOpt(
        "kdump_trust",
        default=KDUMP_PROOF,
        choices=[
            (KDUMP_PROOF, "a kdump entry's messages prove the host crashed"),
            (KDUMP_HINT, "they are evidence only: a power driver must still prove it off"),
        ],
        help=paragraphs(
            """
(masakari rewrite only) What a kdump entry's messages are worth. proof: they
prove the host dead, and its instances are evacuated without a power off; only
for a listener on a network that the hosts alone reach (a fence_kdump message
is known by its source address, which anyone on that network can forge). hint:
they are recorded as evidence and are host fencing's signal for [verdict]
rule any_two, but the fence goes on to the next (power) driver of the host's
list.
"""
        ),
    ),
    cfg.IntOpt(
        "check_interval",
        default=300,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) With config_file set, seconds between two readiness
checks of every host's fencing drivers (a read-only power status call per
driver: credentials valid, BMC reachable; hosts without a driver listed), made
by the engine that runs the periodic tasks and recorded for the readiness
doctor (masakari-manage segment check, GET /v1/segments/{id}/readiness). 0:
no periodic check.
"""
        ),
    ),
]


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]


def enabled(conf: cfg.ConfigOpts) -> bool:
    return bool(conf.fencing.config_file)

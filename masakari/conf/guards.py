"""[guards]: hold host failure reports that look like a mass failure, or are unconfirmed."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "guards",
    title="Guards",
    help="(masakari rewrite only) Reports held for an operator instead of recovered.",
)

OPTS: list[cfg.Opt] = [
    cfg.IntOpt(
        "segment_max_failed_hosts",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) Largest number of hosts of one failover segment that
may have a host failure report within ``failed_hosts_window`` seconds. A new
COMPUTE_HOST report past it is accepted (202) but held until an operator
releases or cancels it. 0 disables the check.
"""
        ),
    ),
    cfg.IntOpt(
        "segment_max_failed_hosts_percent",
        default=0,
        min=0,
        max=100,
        help=paragraphs(
            """
(masakari rewrite only) As ``segment_max_failed_hosts``, as a percentage of the
segment's hosts. 0 disables the check.
"""
        ),
    ),
    cfg.IntOpt(
        "global_max_failed_hosts",
        default=0,
        min=0,
        help=paragraphs(
            """
(masakari rewrite only) As ``segment_max_failed_hosts``, counting the hosts of
every segment. 0 disables the check.
"""
        ),
    ),
    cfg.IntOpt(
        "global_max_failed_hosts_percent",
        default=0,
        min=0,
        max=100,
        help=paragraphs(
            """
(masakari rewrite only) As ``global_max_failed_hosts``, as a percentage of all
hosts. 0 disables the check.
"""
        ),
    ),
    cfg.IntOpt(
        "failed_hosts_window",
        default=300,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Width, in seconds, of the window the mass-failure
thresholds count host failure reports in (by their generated_time).
"""
        ),
    ),
    cfg.BoolOpt(
        "hold_unknown_host_reports",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Hold a COMPUTE_HOST report whose host_status is UNKNOWN
(power-off or fencing not confirmed) instead of ignoring it, as masakari
22.0.0 does. It waits for a later report of the same host with host_status
NORMAL, which releases it, or for an operator's release or cancel.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[host_return]: what masakari undoes when a recovered host reports that it is back."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "host_return",
    title="Host return",
    help=(
        "(masakari rewrite only) Steps taken on a COMPUTE_HOST report with event STARTED and "
        "host_status NORMAL. All off: the report only ends finished, as in masakari 22.0.0."
    ),
)

_COMMON = """

With any [host_return] option on, such a report is accepted even though the
host is on maintenance (masakari 22.0.0 refuses it with a 409), so that it
reaches the engine. Each step is recorded in the notification's
recovery_workflow_details (task ReturnHostTask).
"""

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "unset_forced_down",
        default=False,
        help=paragraphs(
            "(masakari rewrite only) Unset forced_down on the host's nova-compute service "
            "(set by [host_failure]/force_down_fenced_host when it failed)." + _COMMON
        ),
    ),
    cfg.BoolOpt(
        "enable_compute_service",
        default=False,
        help=paragraphs(
            "(masakari rewrite only) Enable the host's nova-compute service again, which "
            "the recovery disabled: Nova schedules instances to it again." + _COMMON
        ),
    ),
    cfg.BoolOpt(
        "return_reserved_hosts",
        default=False,
        help=paragraphs(
            "(masakari rewrite only) Return to the reserved pool the reserved hosts that "
            "the host's recovery took (reserved_host, rh_priority and auto_priority "
            "methods): reserved again in masakari and their nova-compute disabled again, "
            "each only once it holds no instance; one that still does is left as it is "
            "and the progress says how many it holds." + _COMMON
        ),
    ),
    cfg.BoolOpt(
        "clear_on_maintenance",
        default=False,
        help=paragraphs(
            "(masakari rewrite only) Take the host off maintenance in masakari, which the "
            "recovery put it on: its next failure is recovered again." + _COMMON
        ),
    ),
]


def enabled(conf: cfg.ConfigOpts) -> bool:
    """Whether any host return step is on."""
    group = conf.host_return
    return bool(
        group.unset_forced_down
        or group.enable_compute_service
        or group.return_reserved_hosts
        or group.clear_on_maintenance
    )


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

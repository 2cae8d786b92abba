"""[host_failure] scope rules: which instances of a failed host a recovery moves."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "host_failure"

_TAIL = """

Out-of-scope instances are left on the failed host, and the recovery says so in its
progress details. Empty: no restriction, as in masakari 22.0.0.
"""


def _pair(dimension: str, what: str) -> list[cfg.Opt]:
    return [
        cfg.ListOpt(
            f"scope_include_{dimension}",
            default=[],
            help=paragraphs(
                f"(masakari rewrite only) Move only instances whose {what} is one of these." + _TAIL
            ),
        ),
        cfg.ListOpt(
            f"scope_exclude_{dimension}",
            default=[],
            help=paragraphs(
                f"(masakari rewrite only) Never move instances whose {what} is one of these "
                "(applied after the include list)." + _TAIL
            ),
        ),
    ]


_AGGREGATE_TAIL = """

The failed host's aggregates are read from Nova (one request) only when one of
the two aggregate lists is set.
"""

OPTS: list[cfg.Opt] = [
    *_pair("projects", "project id"),
    *_pair("flavors", "flavor name"),
    *_pair("images", "image id"),
    *_pair("metadata", "metadata has an entry ``key=value`` (or ``key``, any value)"),
    cfg.ListOpt(
        "scope_include_aggregates",
        default=[],
        help=paragraphs(
            "(masakari rewrite only) Move the instances of a failed host only if the host "
            "is in one of these Nova host aggregates (name or id)." + _TAIL + _AGGREGATE_TAIL
        ),
    ),
    cfg.ListOpt(
        "scope_exclude_aggregates",
        default=[],
        help=paragraphs(
            "(masakari rewrite only) Never move the instances of a failed host that is in "
            "one of these Nova host aggregates (name or id; applied after the include list)."
            + _TAIL
            + _AGGREGATE_TAIL
        ),
    ),
    cfg.BoolOpt(
        "check_server_groups",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Before evacuating to an explicit target (the reserved
host of the reserved_host and rh_priority methods), read the server groups
(Nova's os-server-groups) and leave an instance whose group policy would be
violated there: anti-affinity with another member already on, or evacuated to,
the target; affinity with a member that stays elsewhere. It is not evacuated:
its instance move is recorded as failed, with the reason, and the recovery ends
in error. Evacuations without a target are left to Nova's scheduler, which
applies the policies itself. False: the reference's behaviour, no extra Nova request.
"""
        ),
    ),
    cfg.BoolOpt(
        "no_shared_storage",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) The compute hosts' instance disks are not on shared
storage. Evacuating an instance whose root disk is local (booted from an image,
not from a volume) then rebuilds it from its image on the new host: its disk's
contents are lost. True: such instances are not evacuated; the move of each is recorded as
failed, with the reason, and the recovery ends in error. False: every
instance is evacuated, as in masakari 22.0.0.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

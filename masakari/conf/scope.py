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


OPTS: list[cfg.Opt] = [
    *_pair("projects", "project id"),
    *_pair("flavors", "flavor name"),
    *_pair("images", "image id"),
    *_pair("metadata", "metadata has an entry ``key=value`` (or ``key``, any value)"),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[coordination]: the tooz backend shared by API and engine processes."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "coordination",
    title="Coordination options",
    help="Distributed locks between several masakari processes.",
)

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "backend_url",
        secret=True,
        default=None,
        help=paragraphs(
            """
tooz URL of the coordination backend (for example ``etcd3+http://host:2379``).
Unset, no distributed lock is taken. The ``file`` driver is unsuitable: it
never removes its lock files.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[coordination]: the reference's tooz backend, accepted so that existing files parse."""

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
tooz URL of a coordination backend (for example ``etcd3+http://host:2379``).
Accepted and ignored: the reference took a distributed lock per host while
recording a notification; this service changes a per-host row of its own
database in the same transaction (a write that conflicts on every backend,
Galera included), which serialises any number of API processes without
another service.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[coordination]: the reference's tooz backend, used to elect the engine of the periodic tasks."""

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
tooz URL of a coordination backend (for example ``redis://host:6379`` or
``etcd3+http://host:2379``). When set, the engines sharing it elect one of
them to run the periodic retry and expiry tasks (without it, every engine runs
them; the database claims make each retry happen once either way). An engine
that cannot reach the backend runs the tasks itself. Notifications need no
distributed lock here: the API changes a per-host row of the database in the
transaction that records one, which serialises any number of API processes.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[database] (oslo.db) and the reference's [taskflow] database, kept only to be accepted."""

from __future__ import annotations

from oslo_config import cfg
from oslo_db import options as oslo_db_options

from masakari.conf._text import paragraphs

# Same file name as the reference, so an existing default deployment keeps its data.
DEFAULT_CONNECTION = "sqlite:///$state_path/masakari.sqlite"

TASKFLOW_GROUP = cfg.OptGroup(
    "taskflow",
    title="Taskflow persistence options",
    help="The reference's second database, for taskflow's persistence.",
)

TASKFLOW_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "connection",
        secret=True,
        help=paragraphs(
            """
SQLAlchemy URL of the database where the reference keeps taskflow's
progress records.

Accepted and ignored by this project: recovery progress is stored in the
main [database] with the notifications.
"""
        ),
    ),
]


def register_database(conf: cfg.ConfigOpts) -> None:
    """Register oslo.db's [database] options with masakari's default connection."""
    # set_default, unlike cfg.set_defaults, changes only this ConfigOpts.
    oslo_db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(TASKFLOW_GROUP, TASKFLOW_OPTS)]

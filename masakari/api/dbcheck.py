"""``masakari_database``: an oslo.middleware healthcheck backend that pings the database.

While the database answers, the backend's reason is empty, so that the plain-text answer
of /healthcheck stays the single "OK" of the reference's disable_by_file backend. When it
does not, /healthcheck answers 503 "Database unreachable".
"""

from __future__ import annotations

import weakref
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg
from oslo_middleware.healthcheck import pluginbase

from masakari.api import outage
from masakari.db.database import DB_ERRORS, Database

NAME = "masakari_database"
UNREACHABLE = "Database unreachable"

# The API's own Database per configuration (by id: a ConfigOpts is not hashable):
# stevedore builds the backend from the ConfigOpts only, and the check should use the pool
# the API uses.
_DATABASES: dict[int, Database] = {}


def share_database(conf: cfg.ConfigOpts, db: Database) -> None:
    """Make the backends built for ``conf`` ping ``db``."""
    _DATABASES[id(conf)] = db
    weakref.finalize(conf, _DATABASES.pop, id(conf), None)


class DatabaseCheck(pluginbase.HealthcheckBaseExtension):  # type: ignore[misc]
    def __init__(self, oslo_conf: cfg.ConfigOpts, conf: dict[str, Any]) -> None:
        super().__init__(oslo_conf, conf)
        self._db: Database | None = _DATABASES.get(id(oslo_conf))

    def healthcheck(self, server_port: int) -> pluginbase.HealthcheckResult:
        try:
            with self._database().engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        except DB_ERRORS as exc:
            outage.OUTAGES.failed(exc)
            return pluginbase.HealthcheckResult(available=False, reason=UNREACHABLE)
        outage.OUTAGES.succeeded()
        return pluginbase.HealthcheckResult(available=True, reason="")

    def _database(self) -> Database:
        # A deployer's api-paste.ini builds the healthcheck without the API's Database.
        if self._db is None:
            self._db = Database.from_conf(self.oslo_conf)
        return self._db

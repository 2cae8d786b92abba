"""masakari-status: ``upgrade check`` (oslo.upgradecheck) for deployment tools."""

from __future__ import annotations

import sys

from oslo_config import cfg
from oslo_upgradecheck import common_checks, upgradecheck
from sqlalchemy import exc as sa_exc

from masakari import conf as masakari_conf
from masakari.db import migration
from masakari.db.database import Database


class Checks(upgradecheck.UpgradeCommands):
    """The checks an operator runs before and after upgrading."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._upgrade_checks = (
            (
                "Policy File JSON to YAML Migration",
                (common_checks.check_policy_json, {"conf": conf}),
            ),
            ("Database schema at head", Checks._check_database),
        )

    def _check_database(self) -> upgradecheck.Result:
        head = migration.head()
        try:
            db = Database.from_conf(self.conf)
            try:
                current = migration.current(db.engine)
            finally:
                db.dispose()
        except sa_exc.SQLAlchemyError as exc:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE, f"Cannot read the database: {exc}"
            )
        if current == head:
            return upgradecheck.Result(upgradecheck.Code.SUCCESS)
        if current is None:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "The database has no schema: run 'masakari-manage db sync'.",
            )
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            f"The database is at revision {current}, not {head}: run 'masakari-manage db sync'.",
        )


def main(argv: list[str] | None = None) -> int:
    conf = cfg.ConfigOpts()
    masakari_conf.register_opts(conf)
    return upgradecheck.main(
        conf,
        project="masakari",
        upgrade_command=Checks(conf),
        argv=sys.argv[1:] if argv is None else argv,
    )


if __name__ == "__main__":
    sys.exit(main())

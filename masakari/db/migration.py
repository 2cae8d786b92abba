"""Schema upgrades: alembic on the reference's version table, legacy databases stamped first."""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import command, migration, script
from alembic import config as alembic_config

from masakari import exception

VERSION_TABLE = "masakari_alembic_version"
REFERENCE_HEAD = "13adff5efb9a"
_HERE = os.path.dirname(os.path.abspath(__file__))

# sqlalchemy-migrate versions of pre-alembic releases and the alembic revision that each
# one's schema equals; older ones need an older Masakari release first.
_LEGACY_STAMPS = {7: "8f848eb45d03", 8: "8bdf5929c5a6"}


def _config() -> alembic_config.Config:
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", os.path.join(_HERE, "migrations"))
    return cfg


def head() -> str:
    heads = script.ScriptDirectory.from_config(_config()).get_heads()
    return heads[0]


def current(engine: sa.engine.Engine) -> str | None:
    with engine.connect() as conn:
        ctx = migration.MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return ctx.get_current_revision()


def upgrade(engine: sa.engine.Engine, version: str | None = None) -> None:
    """Bring the schema to ``version`` (default: head), applying only what is missing.

    A ``version`` older than the current one, down to the reference's head, undoes the
    project's own migrations: the way back for an operator returning to the reference.
    """
    cfg = _config()
    scripts = script.ScriptDirectory.from_config(cfg)
    if version is not None:
        scripts.get_revision(version)  # unknown revisions fail before anything is touched
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        _stamp_legacy(conn, cfg)
        ctx = migration.MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        now = ctx.get_current_revision()
        if version and now and version != now and _is_ancestor(scripts, version, now):
            if not _is_ancestor(scripts, REFERENCE_HEAD, version):
                raise exception.InvalidInput(
                    reason=f"cannot go back past the reference's head {REFERENCE_HEAD}"
                )
            command.downgrade(cfg, version)
        else:
            command.upgrade(cfg, version or "heads")


def _is_ancestor(scripts: script.ScriptDirectory, older: str, newer: str) -> bool:
    return any(rev.revision == older for rev in scripts.walk_revisions("base", newer))


def _stamp_legacy(conn: sa.engine.Connection, cfg: alembic_config.Config) -> None:
    inspector = sa.inspect(conn)
    if not inspector.has_table("migrate_version"):
        return
    ctx = migration.MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    if ctx.get_current_revision():
        return
    legacy = conn.execute(sa.text("SELECT version FROM migrate_version")).scalar()
    if legacy is None or legacy < 7:
        raise exception.InvalidInput(
            reason=f"the database is at legacy version {legacy}; upgrade it with an older "
            "Masakari release (one that still has that migration) first"
        )
    if legacy > 8 and os.getenv("FORCE_MASAKARI_DB_SYNC") is None:
        raise exception.InvalidInput(
            reason=f"the database is at unknown legacy version {legacy}; set "
            "FORCE_MASAKARI_DB_SYNC to upgrade it anyway"
        )
    command.stamp(cfg, _LEGACY_STAMPS[min(legacy, 8)])

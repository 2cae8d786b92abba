"""The migrated schema equals the reference's, table for table, on every backend.

The project's own tables and its named indexes on the reference's tables are the only
additions; each is listed here, and nothing else may differ.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess

import pytest
import sqlalchemy as sa

from masakari.db import migration
from masakari.db.database import Database
from tests.support.schema import PROJECT_INDEXES

REFERENCE_DIR = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "spec", "reference"
)
REFERENCE_FILES = {
    "sqlite": "schema-sqlite-migrated.sql",
    "postgresql": "schema-postgresql-migrated.sql",
    "mysql": "schema-mysql-migrated.sql",
}
PROJECT_TABLES = (
    "masakari_recovery_tasks",
    "masakari_notification_claims",
    "masakari_instance_locks",
    "masakari_host_guards",
    "masakari_instance_plans",
    "masakari_notification_holds",
    "masakari_notification_failures",
    "masakari_engine_heartbeats",
    "masakari_evacuation_slots",
    "masakari_fence_attempts",
    "masakari_kdump_messages",
    "masakari_fence_checks",
    "masakari_detector_leases",
    "masakari_failure_evidence",
    "masakari_detector_shadow_reports",
    "masakari_room_holds",
    "masakari_room_hold_segments",
    "masakari_quarantines",
    "masakari_quarantine_moves",
    "masakari_drills",
    "masakari_drill_phases",
)
# CREATE INDEX statements (SQLite, PostgreSQL) and the KEY lines of MySQL's CREATE TABLE.
_INDEX_STATEMENT = re.compile(r"^CREATE INDEX (\w+) ON (?:public\.)?(\w+) ")
_MYSQL_KEY = re.compile(r",?\s*KEY `(\w+)` \([^)]*\)")


def _dump(backend: str, url: str) -> str:
    parsed = sa.engine.make_url(url)
    if backend == "sqlite":
        with sqlite3.connect(parsed.database) as conn:
            rows = conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        return ";\n".join(r[0] for r in rows) + ";"
    if backend == "postgresql":
        tool = shutil.which("pg_dump")
        argv = [
            tool,
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            "-h",
            parsed.host,
            "-p",
            str(parsed.port or 5432),
            "-U",
            parsed.username,
            parsed.database,
        ]
    else:
        tool = shutil.which("mariadb-dump") or shutil.which("mysqldump")
        argv = [
            tool,
            "--no-data",
            "--skip-add-drop-table",
            "-h",
            parsed.host,
            "-P",
            str(parsed.port or 3306),
            "-u",
            parsed.username,
            parsed.database,
        ]
    if tool is None:
        pytest.fail(f"no dump tool for {backend} on PATH")
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def _statements(dump: str, project_indexes: dict[str, str] | None = None) -> list[str]:
    """Statements with comments, session settings and whitespace differences removed.

    The project's tables are left out; its indexes on the reference's tables are taken
    out of the statements and recorded in ``project_indexes`` (name -> table).
    """
    lines = []
    for line in dump.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("--", "/*", "SET ", "SELECT pg_catalog", "\\")):
            continue
        lines.append(stripped)
    text = re.sub(r"\s+", " ", " ".join(lines))
    text = re.sub(r" AUTO_INCREMENT=\d+", "", text)
    statements = {s.strip() for s in text.split(";") if s.strip()}
    kept = []
    for statement in statements:
        if any(t in statement for t in PROJECT_TABLES):
            continue
        statement = _take_project_indexes(statement, project_indexes)
        if statement:
            kept.append(statement)
    return sorted(kept)


def _take_project_indexes(statement: str, found: dict[str, str] | None) -> str:
    match = _INDEX_STATEMENT.match(statement)
    if match and match.group(1) in PROJECT_INDEXES:
        if found is not None:
            found[match.group(1)] = match.group(2)
        return ""
    table = re.match(r"^CREATE TABLE `(\w+)`", statement)
    if table is None:
        return statement

    def take(key: re.Match[str]) -> str:
        if key.group(1) not in PROJECT_INDEXES:
            return key.group(0)
        if found is not None:
            found[key.group(1)] = table.group(1)
        return ""

    return _MYSQL_KEY.sub(take, statement)


def test_migrated_schema_matches_reference(backend: str, db_url: str) -> None:
    db = Database.from_url(db_url)
    try:
        migration.upgrade(db.engine)
        assert migration.current(db.engine) == migration.head()
    finally:
        db.dispose()
    with open(os.path.join(REFERENCE_DIR, REFERENCE_FILES[backend])) as fh:
        expected = _statements(fh.read())
    indexes: dict[str, str] = {}
    assert _statements(_dump(backend, db_url), indexes) == expected
    assert indexes == PROJECT_INDEXES


def test_back_to_the_reference_head_is_the_reference_schema(backend: str, db_url: str) -> None:
    db = Database.from_url(db_url)
    try:
        migration.upgrade(db.engine)
        migration.upgrade(db.engine, migration.REFERENCE_HEAD)
        assert migration.current(db.engine) == migration.REFERENCE_HEAD
    finally:
        db.dispose()
    with open(os.path.join(REFERENCE_DIR, REFERENCE_FILES[backend])) as fh:
        expected = _statements(fh.read())
    indexes: dict[str, str] = {}
    assert _statements(_dump(backend, db_url), indexes) == expected
    assert indexes == {}


def test_reference_head_is_an_ancestor_of_ours() -> None:
    from alembic import script

    from masakari.db.migration import _config

    scripts = script.ScriptDirectory.from_config(_config())
    chain = [rev.revision for rev in scripts.walk_revisions("base", migration.head())]
    assert migration.REFERENCE_HEAD in chain
    assert chain[-3:] == ["13adff5efb9a", "8bdf5929c5a6", "8f848eb45d03"]


def test_project_tables_exist_after_sync(backend: str, db_url: str) -> None:
    db = Database.from_url(db_url)
    try:
        migration.upgrade(db.engine)
        tables = set(sa.inspect(db.engine).get_table_names())
    finally:
        db.dispose()
    assert set(PROJECT_TABLES) <= tables
    assert {"failover_segments", "hosts", "notifications", "vmoves"} <= tables

"""Throwaway databases on the loopback PostgreSQL and MariaDB servers, and SQLite files."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from masakari.db import migration
from masakari.db.database import Database

# Overridable so that a developer can point the tests at other servers.
SERVER_URLS = {
    "postgresql": os.environ.get(
        "MASAKARI_TEST_POSTGRESQL_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
    ),
    "mysql": os.environ.get("MASAKARI_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/"),
}


def server_reachable(backend: str) -> str | None:
    """None when the server answers, else the reason it does not."""
    engine = sa.create_engine(SERVER_URLS[backend])
    try:
        with engine.connect():
            return None
    except Exception as exc:  # any driver or network error means: not usable here
        return f"{backend} server at {SERVER_URLS[backend]} unreachable: {exc}"
    finally:
        engine.dispose()


@contextlib.contextmanager
def temporary_database(backend: str, tmp_path: str) -> Iterator[str]:
    """Yield the URL of a new, empty database; drop it afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{os.path.join(tmp_path, 'masakari.db')}"
        return
    name = f"masakari_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(SERVER_URLS[backend], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if backend == "mysql":
            conn.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        else:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.engine.make_url(SERVER_URLS[backend]).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "postgresql":
                conn.exec_driver_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
                )
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


@contextlib.contextmanager
def migrated(request: pytest.FixtureRequest, backend: str, tmp_path: str) -> Iterator[Database]:
    """A new database on ``backend`` at the project's head, disposed and dropped afterwards.
    A server that does not answer skips the test, or fails it under --require-servers."""
    if backend != "sqlite":
        reason = server_reachable(backend)
        if reason:
            if request.config.getoption("--require-servers"):
                pytest.fail(reason)
            pytest.skip(reason)
    with temporary_database(backend, tmp_path) as url:
        database = Database.from_url(url)
        migration.upgrade(database.engine)
        try:
            yield database
        finally:
            database.dispose()

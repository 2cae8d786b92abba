"""The rules of the API on top of the database: lookups, in-use checks, duplicates, maintenance.

Functions take the Database (and, for hosts, the Nova check) as parameters and return
rows detached from their session, ready to be shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import orm

from masakari.db import segments as segments_db
from masakari.db.database import Database


@contextlib.contextmanager
def writing(db: Database) -> Iterator[orm.Session]:
    """A writer transaction that holds the write lock from its first statement on SQLite."""
    with db.writer() as session:
        segments_db.take_write_lock(session)
        yield session

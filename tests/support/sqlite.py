"""A migrated SQLite database for a test, copied from one migrated once per process: a copy
takes a millisecond where the migrations take tens."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

from masakari.db import migration
from masakari.db.database import Database

_template: Path | None = None
_lock = threading.Lock()


def _migrated_template() -> Path:
    global _template
    with _lock:
        if _template is None:
            folder = tempfile.mkdtemp(prefix="masakari-schema-")
            atexit.register(shutil.rmtree, folder, True)
            path = Path(folder, "masakari.db")
            database = Database.from_url(f"sqlite:///{path}")
            migration.upgrade(database.engine)
            database.dispose()  # the last connection's close checkpoints the WAL into the file
            _template = path
        return _template


def migrated_sqlite(folder: str | os.PathLike[str], name: str = "masakari.db") -> Database:
    """A Database on ``folder/name``, a copy of the migrated schema."""
    template = _migrated_template()
    path = Path(folder, name)
    shutil.copyfile(template, path)
    return Database.from_url(f"sqlite:///{path}")

"""Alembic environment: runs on the connection that masakari.db.migration hands over."""

from alembic import context

from masakari.db import models

VERSION_TABLE = "masakari_alembic_version"

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=models.Base.metadata,
    render_as_batch=True,
    version_table=VERSION_TABLE,
)
with context.begin_transaction():
    context.run_migrations()

"""Alembic migrations: the reference's three revisions, then the project's own."""

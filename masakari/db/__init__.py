"""Database: models, sessions, migrations, and one query module per concern (a table, or the engine's queue and claims)."""

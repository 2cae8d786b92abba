"""Database: models, sessions, migrations, and one query module per concern."""

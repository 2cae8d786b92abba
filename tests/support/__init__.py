"""Test helpers shared by every test directory: the fake clock, the row builders, a migrated
SQLite copy, a TCP proxy."""

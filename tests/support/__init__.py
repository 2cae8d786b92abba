"""Test helpers shared by the functional and database tests."""

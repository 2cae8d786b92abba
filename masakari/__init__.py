"""Masakari: instance high availability for OpenStack."""

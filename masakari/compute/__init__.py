"""Clients of the other OpenStack services masakari calls (Nova)."""

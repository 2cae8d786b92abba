"""Notification payloads no parser can read: each is read as an empty payload."""

UNREADABLE = [
    None,
    "",
    "{",
    "not json",
    "[1, 2]",
    '["event", "STOPPED"]',
    "42",
    '"STOPPED"',
    "null",
    "true",
]

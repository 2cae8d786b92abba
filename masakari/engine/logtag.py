"""Every log line written while a recovery runs names its notification and its engine.

A recovery runs in one worker thread from start to end; the notification and the engine's
id are kept in a context variable for that span, and a filter on the log handlers puts them
in front of each message of that thread, whatever module logs it (the flows, the Nova
client, the database retries). Lines of other threads are left as they are.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "masakari_recovery", default=None
)


@contextlib.contextmanager
def recovery(notification_uuid: str, engine: str) -> Iterator[None]:
    # "%" is doubled: the tag becomes part of the record's format string.
    tag = f"[notification {notification_uuid} engine {engine}] ".replace("%", "%%")
    token = _CURRENT.set(tag)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class RecoveryFilter(logging.Filter):
    """Prefixes the record's message with the running recovery's tag (once)."""

    def filter(self, record: logging.LogRecord) -> bool:
        tag = _CURRENT.get()
        if tag is not None and not getattr(record, "masakari_recovery", None):
            record.msg = tag + str(record.msg)
            record.masakari_recovery = tag
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Add the filter to every handler of ``logger`` (the root logger: oslo.log's)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RecoveryFilter) for f in handler.filters):
            handler.addFilter(RecoveryFilter())

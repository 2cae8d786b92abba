"""Every log line written while a recovery runs names its notification and its engine.

A recovery runs in one worker thread from start to end; the notification and the engine's
id are kept in a context variable for that span, and the logging module's record factory
puts them in front of each message of that thread, whatever module logs it (the flows, the
Nova client, the database retries), before any handler, filter or formatter sees the record:
so the tag is there whatever logging the deployer configures (a ``log_config_append`` file
whose handlers are on masakari's loggers, not the root's; its re-reading on SIGHUP). Lines
of other threads are left as they are.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from typing import Any

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


def tag(record: logging.LogRecord) -> logging.LogRecord:
    """Prefixes the record's message with the running recovery's tag (once)."""
    current = _CURRENT.get()
    if current is not None and not getattr(record, "masakari_recovery", None):
        record.msg = current + str(record.msg)
        record.masakari_recovery = current
    return record


class _TaggedRecords:
    """A record factory: the one before it, then the running recovery's tag."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        return tag(self.inner(*args, **kwargs))


def install() -> None:
    """Tag the records of every recovery of this process from now on (once)."""
    factory: Any = logging.getLogRecordFactory()
    while factory is not None:
        if isinstance(factory, _TaggedRecords):
            return
        factory = getattr(factory, "inner", None)  # another factory of ours, wrapping
    logging.setLogRecordFactory(_TaggedRecords(logging.getLogRecordFactory()))

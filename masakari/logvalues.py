"""Values logged stay on their line: control characters in a log record's arguments are
written as escapes.

Monitors and tenants choose much of what is logged (a notification's ``process_name``, a
host or instance name, Nova's messages). A newline in one of them would start what reads as
a line of its own, with a forged time, level and request; a terminal escape would act on
whoever tails the log. Each argument is rewritten with ``masakari.terminal.clean`` when the
record is made (the logging module's record factory), before any handler, filter or
formatter sees it: so the escaping holds whatever logging the deployer configures
(``[DEFAULT] log_config_append`` hands it to a file of their own, read again on SIGHUP) and
for every logger. The message's own text (written by this code) and tracebacks keep their
newlines: a value goes into a log line as an argument (``LOG.info("... %s", value)``), never
into the message itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from masakari import terminal

_PLAIN = (int, float, bool, type(None))


def inert(value: Any) -> Any:
    """``value`` with its control characters escaped; the value itself when it has none (so
    that ``%r`` and ``%d`` still see the original object)."""
    if isinstance(value, _PLAIN):
        return value
    text = value if isinstance(value, str) else str(value)
    cleaned = terminal.clean(text)
    if cleaned == text:
        return value
    return cleaned


class _InertRecords:
    """A record factory: the one before it, then every argument made inert."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        if record.args:
            if isinstance(record.args, Mapping):
                record.args = {key: inert(value) for key, value in record.args.items()}
            else:
                record.args = tuple(inert(value) for value in record.args)
        return record


def install() -> None:
    """Make the arguments of every log record of this process inert from now on (once)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _InertRecords):
        logging.setLogRecordFactory(_InertRecords(current))

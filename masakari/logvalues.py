"""Values logged stay on their line: control characters in a log record's arguments are
written as escapes.

Monitors and tenants choose much of what is logged (a notification's ``process_name``, a
host or instance name, Nova's messages). A newline in one of them would start what reads as
a line of its own, with a forged time, level and request; a terminal escape would act on
whoever tails the log. The filter rewrites such arguments with ``masakari.terminal.clean``
before the record is formatted; the message's own text (written by this code) and
tracebacks keep their newlines.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from masakari import terminal

_PLAIN = (int, float, bool, type(None))


def _inert(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    text = value if isinstance(value, str) else str(value)
    cleaned = terminal.clean(text)
    if cleaned == text:
        return value  # unchanged, so that %r and %d still see the original object
    return cleaned


class InertValues(logging.Filter):
    """Escapes control characters in every argument of the record (once)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and not getattr(record, "masakari_inert", False):
            if isinstance(record.args, Mapping):
                record.args = {key: _inert(value) for key, value in record.args.items()}
            else:
                record.args = tuple(_inert(value) for value in record.args)
            record.masakari_inert = True
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Add the filter to every handler of ``logger`` (the root logger: oslo.log's)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, InertValues) for f in handler.filters):
            handler.addFilter(InertValues())

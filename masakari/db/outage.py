"""A database outage said once: one line when it starts, one when the database is back.

The API (per worker process) and the engine (per process) each keep one ``OutageLog``; the
requests or steps in between log nothing, so an outage of an hour is two lines, not one
traceback per request or poll.
"""

from __future__ import annotations

import logging
import threading

LOG = logging.getLogger(__name__)


class OutageLog:
    """The reachable/unreachable transitions of one process's view of the database."""

    def __init__(self, consequence: str) -> None:
        # What this process does meanwhile, said in the first line ("answering 503 ...").
        self._consequence = consequence
        self._lock = threading.Lock()
        self._down = False

    @property
    def down(self) -> bool:
        return self._down

    def failed(self, exc: BaseException, where: str | None = None) -> None:
        with self._lock:
            if self._down:
                return
            self._down = True
        at = f" ({where})" if where else ""
        LOG.error("Database unreachable, %s%s: %s", self._consequence, at, first_line(exc))

    def succeeded(self) -> None:
        # Read without the lock first: this runs after every successful request.
        if not self._down:
            return
        with self._lock:
            if not self._down:
                return
            self._down = False
        LOG.warning("Database reachable again")


def first_line(exc: BaseException) -> str:
    """The driver's message, without its SQL and parameters."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

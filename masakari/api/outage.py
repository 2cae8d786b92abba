"""A database the API cannot reach: a 503 for the client, one log line per outage.

A lost database is not a bug of masakari, so it is neither a 500 nor a traceback per
request. The first failed request of an outage logs a warning, the first request that
reaches the database again logs that it is back; requests in between log nothing. oslo.db
drops the dead connections, so the API recovers by itself once the database answers.

The state is per process: each API worker reports its own outages.
"""

from __future__ import annotations

import logging
import threading

LOG = logging.getLogger(__name__)

MESSAGE = "The database is unreachable; retry later."
# Seconds a client is told to wait (Retry-After) before it tries again.
RETRY_AFTER = 5


class OutageLog:
    """Logs the transitions between "reachable" and "unreachable", not each request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False

    @property
    def down(self) -> bool:
        return self._down

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self._down:
                return
            self._down = True
        LOG.warning("Database unreachable, answering 503 until it is back: %s", _first_line(exc))

    def succeeded(self) -> None:
        # Read without the lock first: this runs after every successful request.
        if not self._down:
            return
        with self._lock:
            if not self._down:
                return
            self._down = False
        LOG.warning("Database reachable again")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


OUTAGES = OutageLog()

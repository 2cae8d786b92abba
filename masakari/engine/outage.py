"""The engine's steps survive a database outage: each failure is logged, once per outage."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from masakari.db import database

LOG = logging.getLogger(__name__)


class Outage:
    """Runs the steps of the engine's threads (polls, sweeps, renewals, periodic tasks).

    A step that fails does not end its thread: it runs again at its next turn, and claims
    whose renewals keep failing end with their leases.
    """

    def __init__(self) -> None:
        self._down = threading.Event()

    def guard(
        self, step: Callable[[], Any], proves_db_up: bool = True, name: str | None = None
    ) -> None:
        """Run ``step``; a database failure is said once per outage, any other is logged.

        ``proves_db_up``: whether a success means the database answered (a renewal round
        with nothing to renew does not reach it).
        """
        name = name or getattr(step, "__name__", repr(step))
        try:
            step()
        except database.DB_ERRORS as exc:
            if not database.unreachable(exc):
                LOG.warning("Engine step %s failed: %s", name, exc)
            elif not self._down.is_set():
                self._down.set()
                LOG.error("Database unreachable (engine step %s): %s", name, exc)
            return
        except Exception:
            LOG.exception("Engine step %s failed", name)
            return
        if proves_db_up and self._down.is_set():
            self._down.clear()
            LOG.warning("Database reachable again")

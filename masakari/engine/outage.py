"""The engine's steps survive a database outage: each failure is logged, once per outage."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from masakari.db import database
from masakari.db.outage import OutageLog

LOG = logging.getLogger(__name__)


class Outage:
    """Runs the steps of the engine's threads (polls, sweeps, renewals, periodic tasks).

    A step that fails does not end its thread: it runs again at its next turn, and claims
    whose renewals keep failing end with their leases.
    """

    def __init__(self) -> None:
        self._log = OutageLog("the engine's steps wait for it")

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
            if database.unreachable(exc):
                self._log.failed(exc, f"engine step {name}")
            else:
                LOG.warning("Engine step %s failed: %s", name, exc)
            return
        except Exception:
            LOG.exception("Engine step %s failed", name)
            return
        if proves_db_up:
            self._log.succeeded()

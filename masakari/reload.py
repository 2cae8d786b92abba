"""SIGHUP: re-read the configuration files, as an operator's ``kill -HUP`` (or systemd's
``ExecReload``) expects, without stopping anything.

What takes effect is what oslo.config calls mutable: oslo.log's ``debug`` and
``log_config_append`` (the log levels; oslo.log's own mutate hook applies them). The API's
policy file is read again by the workers gunicorn starts on SIGHUP (masakari.server); the
engine has no policy. Every other option keeps its value until the process restarts, as in
the reference.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from oslo_config import cfg

LOG = logging.getLogger(__name__)


class Rereader:
    """Re-reads one ConfigOpts' files; logs one line naming the mutable options that changed."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._changed: list[str] = []
        # oslo.config has no way to remove a hook: one per Rereader, made once per process.
        conf.register_mutate_hook(self._collect)

    def _collect(self, _conf: cfg.ConfigOpts, fresh: dict[tuple[str | None, str], object]) -> None:
        self._changed.extend(f"{group or 'DEFAULT'}.{name}" for group, name in fresh)

    def reread(self) -> list[str]:
        self._changed = []
        self.conf.mutate_config_files()
        changed = sorted(self._changed)
        LOG.info(
            "SIGHUP: configuration files read again; changed: %s",
            ", ".join(changed) if changed else "no mutable option",
        )
        # As oslo.service does at a reload: every option's value, at DEBUG (secrets masked).
        self.conf.log_opt_values(LOG, logging.DEBUG)
        return changed


class OnHangup:
    """SIGHUP for a process whose main loop calls ``apply()``: the handler only records the
    signal (a signal handler must not take the locks that logging and oslo.config take)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._rereader = Rereader(conf)
        self._requested = threading.Event()

    def install(self) -> None:
        signal.signal(signal.SIGHUP, self._handler)

    def _handler(self, _signum: int, _frame: FrameType | None) -> None:
        self._requested.set()

    def apply(self) -> None:
        if self._requested.is_set():
            self._requested.clear()
            self._rereader.reread()

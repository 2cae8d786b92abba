"""gunicorn's logger, sent through oslo.log, with the reference's access line.

gunicorn's own logger writes to stderr with its own handlers; masakari's log options
([DEFAULT] log_file, use_journal, ...) must apply to the server's messages too, so this one
adds no handler and lets the records propagate to the handlers oslo.log set up.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from gunicorn import glogging
from oslo_context import context as oslo_context

ACCESS = logging.getLogger("masakari.api.access")
REQUEST_ID_HEADER = b"x-openstack-request-id"


class Logger(glogging.Logger):
    """gunicorn's messages through oslo.log; the access line is the bridge's (log_access):
    gunicorn would build a second environ per request only to log it."""

    def setup(self, cfg: Any) -> None:
        self.cfg = cfg
        self.error_log.propagate = True
        self.access_log.propagate = True
        self._access_log_enabled = False

    @property
    def access_log_enabled(self) -> bool:
        return False

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        """Not used: see log_access."""

    def reopen_files(self) -> None:
        """oslo.log's handlers own the files (SIGUSR1 would reopen gunicorn's)."""

    def close_on_exec(self) -> None:
        """No file of gunicorn's own to protect."""


DEFAULT_LINE = '%(client_ip)s "%(request_line)s" status: %(status_code)s time: %(wall_seconds).7f'


def log_access(
    line_format: str,
    environ: dict[str, Any],
    status: int,
    headers: list[tuple[bytes, bytes]],
    length: int,
    seconds: float,
) -> None:
    """One INFO line per request in [wsgi]/wsgi_log_format, under the request's id."""
    if not ACCESS.isEnabledFor(logging.INFO):
        return
    fields = access_fields(environ, status, headers, length, seconds)
    try:
        line = line_format % fields
    except (KeyError, TypeError, ValueError):
        line = DEFAULT_LINE % fields
    # oslo.log prints the context's request id where it prints it for any other line.
    ctx = oslo_context.RequestContext(request_id=fields["request_id"], overwrite=False)
    ACCESS.info("%s", line, extra={"context": ctx})  # the client's path made inert (logvalues)


def access_fields(
    environ: dict[str, Any],
    status: int,
    headers: list[tuple[bytes, bytes]],
    length: int,
    seconds: float,
) -> dict[str, Any]:
    method = environ.get("REQUEST_METHOD", "-")
    path = environ.get("RAW_URI", "-")
    request_id = "-"
    for name, value in headers:
        if name.lower() == REQUEST_ID_HEADER:
            request_id = value.decode("latin-1")
    return {
        "client_ip": environ.get("REMOTE_ADDR", "-"),
        "date_time": time.strftime("%d/%b/%Y %H:%M:%S"),
        "request_line": f"{method} {path} {environ.get('SERVER_PROTOCOL', '-')}",
        "method": method,
        "path": path,
        "status_code": status,
        "body_length": length,
        "wall_seconds": seconds,
        "request_id": request_id,
    }

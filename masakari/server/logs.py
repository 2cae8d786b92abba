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
REQUEST_ID_HEADER = "x-openstack-request-id"


class Logger(glogging.Logger):
    def setup(self, cfg: Any) -> None:
        self.cfg = cfg
        self.error_log.propagate = True
        self.access_log.propagate = True
        self._access_log_enabled = True

    @property
    def access_log_enabled(self) -> bool:
        return True

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        """One line per request: [wsgi]/wsgi_log_format, under the request's id."""
        fields = access_fields(resp, environ, request_time)
        try:
            line = self.cfg.access_log_format % fields
        except (KeyError, TypeError, ValueError):
            line = DEFAULT_LINE % fields
        # oslo.log prints the context's request id where it prints it for any other line.
        ctx = oslo_context.RequestContext(request_id=fields["request_id"], overwrite=False)
        ACCESS.info(line, extra={"context": ctx})

    def reopen_files(self) -> None:
        """oslo.log's handlers own the files (SIGUSR1 would reopen gunicorn's)."""

    def close_on_exec(self) -> None:
        """No file of gunicorn's own to protect."""


DEFAULT_LINE = '%(client_ip)s "%(request_line)s" status: %(status_code)s time: %(wall_seconds).7f'


def access_fields(resp: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
    method = environ.get("REQUEST_METHOD", "-")
    path = environ.get("RAW_URI") or environ.get("PATH_INFO", "-")
    request_id = "-"
    for name, value in resp.headers:
        if name.lower() == REQUEST_ID_HEADER:
            request_id = value
    return {
        "client_ip": environ.get("REMOTE_ADDR", "-"),
        "date_time": time.strftime("%d/%b/%Y %H:%M:%S"),
        "request_line": f"{method} {path} {environ.get('SERVER_PROTOCOL', '-')}",
        "method": method,
        "path": path,
        "status_code": resp.status,
        "body_length": resp.sent,
        "wall_seconds": request_time.seconds + request_time.microseconds / 1e6,
        "request_id": request_id,
    }

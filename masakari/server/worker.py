"""masakari-api's worker under gunicorn releases older than 27.0.1: a malformed request is
answered, not logged as a crash.

gunicorn's fast parser (gunicorn-h1c) raises errors of its own. gunicorn 27.0.1 answers each
with 400 (414, 431 for the limits) and closes the connection. The releases OpenStack's
upper-constraints pin (26.0.0, 25.2.0) let most of them out of the protocol's
``data_received``: the event loop then logs "Fatal error on transport" with an 11-line ERROR
traceback, for one unauthenticated request (a NUL byte in a header is enough), and closes the
connection without an answer. :class:`Protocol` answers them as 27.0.1 does, logging nothing;
:class:`Worker` is gunicorn's asyncio worker serving connections with it
(``settings.worker_class``). gunicorn 27.0.1 and later run their own worker unchanged.
"""

from __future__ import annotations

import gunicorn_h1c
from gunicorn.asgi import protocol as gunicorn_protocol
from gunicorn.workers import gasgi

# Every request error gunicorn-h1c raises: its parser's and its protocol module's (two
# classes of one name), as gunicorn 27.0.1 collects them.
PARSE_ERRORS: tuple[type[Exception], ...] = tuple(
    error
    for error in (
        getattr(gunicorn_h1c, "ParseError", None),
        getattr(getattr(gunicorn_h1c, "_protocol", None), "ParseError", None),
    )
    if isinstance(error, type) and issubclass(error, Exception)
)
_LIMITS = (
    (getattr(gunicorn_h1c, "LimitRequestLine", None), 414),
    (getattr(gunicorn_h1c, "LimitRequestHeaders", None), 431),
)
_REASONS = {400: "Bad Request", 414: "URI Too Long", 431: "Request Header Fields Too Large"}


def status_of(error: Exception) -> int:
    for kind, status in _LIMITS:
        if kind is not None and isinstance(error, kind):
            return status
    return 400


def reason_of(error: Exception, status: int) -> str:
    """The parser's message when it is plain printable ASCII: it goes into the status line,
    which must hold neither a line break nor a byte latin-1 cannot encode."""
    text = str(error)
    return text if text.isascii() and text.isprintable() else _REASONS[status]


class Protocol(gunicorn_protocol.ASGIProtocol):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's asyncio protocol, answering the parse errors its release lets out."""

    @classmethod
    def _check_h1c_protocol_available(cls) -> bool:
        # gunicorn reads what this finds out on its own class (ASGIProtocol._h1c_has_limits):
        # found out on this subclass, the base's would stay unset and the parser refused.
        return bool(gunicorn_protocol.ASGIProtocol._check_h1c_protocol_available())

    def data_received(self, data: bytes) -> None:
        try:
            super().data_received(data)
        except PARSE_ERRORS as error:
            status = status_of(error)
            self._send_error_response(status, reason_of(error, status))
            self._close_transport()


class Worker(gasgi.ASGIWorker):  # type: ignore[misc]
    """gunicorn's asyncio worker, its connections served by :class:`Protocol`."""

    def init_process(self) -> None:
        # The worker creates each connection's protocol by this module-level name and has no
        # setting for it. Set in the worker's own process (after the fork), before it serves.
        gasgi.ASGIProtocol = Protocol
        super().init_process()

"""Faults: every exception the API lets out becomes one JSON error body, from one table.

The status comes from the first class of the exception's MRO found in STATUSES; the
fault name from the status (FAULT_NAMES, else masakariFault). Unknown exceptions are
500 with the reference's "Unexpected API Error" text; a database that cannot be reached is
503 with Retry-After (masakari.api.outage).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import webob
import webob.exc

from masakari import context, exception
from masakari.api import errors, microversion, outage
from masakari.compute import nova
from masakari.db import database

LOG = logging.getLogger(__name__)

FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}
DEFAULT_FAULT_NAME = "masakariFault"

# Most specific first is not required: the lookup walks the exception's MRO.
STATUSES: dict[type[BaseException], int] = {
    exception.Invalid: 400,
    exception.NotFound: 404,
    exception.Conflict: 409,
    exception.Forbidden: 403,
    # Not-found errors that the reference's controllers answer with 400.
    exception.MarkerNotFound: 400,
    exception.HostNotFoundByName: 400,
    exception.ComputeNotFoundByName: 400,
    # Invalid subclasses answered otherwise.
    exception.DuplicateNotification: 409,
    exception.HostOnMaintenance: 409,
    exception.InvalidContentType: 415,
    exception.InvalidGlobalAPIVersion: 406,
    errors.ActionNotImplemented: 405,
}

# webob decodes the path and the query string lazily, wherever they are first read.
BAD_ENCODING = "The request URL is not valid UTF-8."

UNEXPECTED = (
    "Unexpected API Error. Please report this at https://bugs.launchpad.net/masakari/ "
    "and attach the Masakari API log if possible.\n%s"
)


def status_and_message(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and the client-visible message for ``exc``, logged and counted (an
    unreachable database in the outage log)."""
    status, message = classify(exc)
    if status == 503 and database.unreachable(exc):
        outage.OUTAGES.failed(exc)
    elif isinstance(exc, exception.PlacementUnavailable):
        LOG.warning("%s", exc)
    elif isinstance(exc, exception.NovaError):
        if status != 403:
            LOG.error("Nova request failed: %s", exc)
    elif status == 500:
        LOG.exception("Unexpected error", exc_info=exc)
    return status, message


def classify(exc: BaseException) -> tuple[int, str]:
    """The status and message for ``exc``, with no side effect: the one place that decides
    them (the answer, and the code counted by the notification metrics)."""
    if isinstance(exc, UnicodeDecodeError):
        return 400, BAD_ENCODING
    if database.unreachable(exc):
        return 503, outage.MESSAGE
    if isinstance(exc, webob.exc.HTTPRequestEntityTooLarge):
        # oslo.middleware's size limit raises it while a body without Content-Length is
        # read (a chunked one, under a server that passes it on as it comes).
        return 413, exc.explanation
    if isinstance(exc, exception.NovaError):
        # The reference's host API passes a Nova 403 on and lets any other Nova failure
        # escape as a 500 naming the exception class it had (api-hosts-nova-errors).
        if exc.status == 403:
            return 403, exc.format_message()
        if isinstance(exc, exception.PlacementUnavailable):
            # Only the 1.5 routes read Placement: they name it, as masakari-manage does.
            return 503, exc.format_message()
        unavailable = nova.unavailable_message(exc)
        if unavailable is not None:
            return 500, unavailable
        return 500, UNEXPECTED % (f"<class '{nova.reference_class_name(exc)}'>")
    for cls in type(exc).__mro__:
        status = STATUSES.get(cls)
        if status is not None:
            assert isinstance(exc, exception.MasakariError)
            return status, exc.format_message()
    return 500, UNEXPECTED % type(exc)


def fault(
    status: int,
    message: str,
    version: microversion.Version | None = None,
    vary: bool = False,
) -> webob.Response:
    """``{"<faultName>": {"code", "message"}}``, application/json; charset=UTF-8.

    With ``version`` the response carries OpenStack-API-Version and Vary, with ``vary``
    only Vary (a 406 names no version); with neither, no version header at all.
    """
    name = FAULT_NAMES.get(status, DEFAULT_FAULT_NAME)
    body = json.dumps({name: {"code": status, "message": message}})
    response = webob.Response(status=status, body=body.encode("utf-8"))
    response.content_type = "application/json"
    response.charset = "UTF-8"
    if version is not None:
        response.headers[microversion.HEADER] = microversion.header_text(version)
    if version is not None or vary:
        response.headers.add("Vary", microversion.HEADER)
    return response


def from_exception(exc: BaseException, version: microversion.Version | None) -> webob.Response:
    status, message = status_and_message(exc)
    response = fault(status, message, version)
    if status == 503:
        response.headers["Retry-After"] = str(outage.RETRY_AFTER)
    return response


class FaultWrapper:
    """Last-resort middleware: an exception escaping the layers below becomes a JSON 500."""

    MESSAGE = "The server has either erred or is incapable of performing the requested operation."

    def __init__(self, application: Callable[..., Any]) -> None:
        self.application = application

    @classmethod
    def factory(cls, global_conf: dict[str, Any], **local_conf: Any) -> Callable[..., Any]:
        """paste.deploy filter factory (masakari.api.openstack:FaultWrapper.factory)."""
        return cls

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        # The outermost masakari layer of every pipeline, the reference's api-paste.ini's too.
        context.start_request(environ)
        try:
            return self.application(environ, start_response)
        except UnicodeDecodeError:
            return fault(400, BAD_ENCODING)(environ, start_response)
        except Exception as exc:
            if database.unreachable(exc):
                return from_exception(exc, None)(environ, start_response)
            LOG.exception(
                "Caught error on %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO")
            )
            return fault(500, self.MESSAGE)(environ, start_response)

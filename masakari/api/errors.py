"""Errors that only the HTTP layer raises (the domain's are in masakari.exception)."""

from __future__ import annotations

from masakari import exception


class ActionNotImplemented(exception.MasakariError):
    """The route exists (the reference's mapper generates it) but nothing implements it."""

    msg_fmt = (
        "The request method: '%(method)s' with action: '%(action)s' is not allowed on this resource"
    )


class ResourceNotFound(exception.NotFound):
    """A 404 with webob's default wording, for things that are not database rows."""

    msg_fmt = "The resource could not be found."


class UnsupportedMediaType(exception.InvalidContentType):
    msg_fmt = "Unsupported Content-Type"


class MalformedBody(exception.MalformedRequestBody):
    msg_fmt = "Malformed request body"

"""The request as handlers see it, and the replies they return."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import webob

from masakari.api import errors, microversion, validation

if TYPE_CHECKING:
    from masakari.api.state import AppState
    from masakari.context import RequestContext

# Body media types the API reads and writes (the vendor type is the reference's own).
JSON = "application/json"
VENDOR_JSON = "application/vnd.openstack.masakari+json"
MEDIA_TYPES = (JSON, VENDOR_JSON)

CONTEXT_KEY = "masakari.context"


class ApiRequest(webob.Request):
    """A routed /v1 request: version, route arguments, parsed body, context and app state."""

    api_version: microversion.Version
    body_data: Any
    state: AppState
    route_args: dict[str, str]

    @property
    def context(self) -> RequestContext:
        return self.environ[CONTEXT_KEY]  # type: ignore[no-any-return]

    def can(self, action: str) -> None:
        """Policy check; PolicyNotAuthorized (403) when refused."""
        self.context.can(action)

    def validated(self, schemas: Mapping[str, validation.Schema]) -> Any:
        """The body, checked against the schema of this request's microversion."""
        return validation.validate(microversion.select(self.api_version, schemas), self.body_data)

    def at_least(self, version: str) -> bool:
        return self.api_version >= microversion.parse_string(version)

    def request_media_type(self) -> str | None:
        """The body's media type: None for absent, empty or text/plain (read as JSON anyway).

        Anything but the two JSON types is UnsupportedMediaType (415).
        """
        if "CONTENT_TYPE" not in self.environ:
            return None
        media_type = self.content_type
        if not media_type or media_type == "text/plain":
            return None
        if media_type not in MEDIA_TYPES:
            raise errors.UnsupportedMediaType()
        return media_type

    def response_media_type(self) -> str:
        """A .json path suffix, else the best Accept match among the JSON types, else JSON."""
        if self.path.endswith(".json"):
            return JSON
        if "HTTP_ACCEPT" not in self.environ:
            return JSON  # what every offer's equal quality gives, without webob's parsing
        offers = self.accept.acceptable_offers(list(MEDIA_TYPES))
        return offers[0][0] if offers else JSON

    def parse_body(self) -> Any:
        """JSON body of a POST or PUT; an empty body is None (the schema then refuses it)."""
        if self.content_length == 0:
            return None
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise errors.MalformedBody() from exc


@dataclasses.dataclass(frozen=True)
class Reply:
    """``body``: what json.dumps encodes, or the JSON text already encoded (bytes)."""

    status: int
    body: Any = None


def ok(body: Any) -> Reply:
    return Reply(200, body)


def created(body: Any) -> Reply:
    return Reply(201, body)


def accepted(body: Any) -> Reply:
    return Reply(202, body)


def no_content() -> Reply:
    return Reply(204)


Handler = Callable[[ApiRequest], Reply]

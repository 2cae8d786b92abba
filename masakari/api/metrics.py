"""GET /metrics on the API: through the /v1 pipeline (authentication, request id, faults) and
the ``os_masakari_api:metrics`` rule. The unauthenticated listeners are
masakari.metrics.serve's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from masakari import exception
from masakari.api import faults
from masakari.api.request import CONTEXT_KEY
from masakari.db.database import Database
from masakari.metrics import collect
from masakari.policies import metrics as policies


class MetricsApp:
    """WSGI: GET (or HEAD) /metrics for a caller the policy allows."""

    def __init__(self, database: Callable[[], Database]) -> None:
        self.registry = collect.scrape_registry(database)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") not in ("", "/"):
            return faults.fault(404, "The resource could not be found.")(environ, start_response)
        if environ["REQUEST_METHOD"] not in ("GET", "HEAD"):
            return faults.fault(405, "Method Not Allowed")(environ, start_response)
        try:
            environ[CONTEXT_KEY].can(policies.SHOW)
        except exception.Forbidden as exc:
            return faults.from_exception(exc, None)(environ, start_response)
        body = collect.exposition(self.registry)
        start_response(
            "200 OK",
            [("Content-Type", collect.CONTENT_TYPE), ("Content-Length", str(len(body)))],
        )
        return [b""] if environ["REQUEST_METHOD"] == "HEAD" else [body]

"""Each API request logs under its own context: a line written before the token is
accepted (auth_token refusing one) names this request's id and no user, never those of the
request the same worker thread served before."""

from __future__ import annotations

import logging

from oslo_context import context as oslo_context

from tests.support.deployment import Deployment


class _Contexts(logging.Handler):
    """The context oslo.log's formatter prints for each record (record's own, or current)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[tuple[str, str | None, str | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        ctx = record.__dict__.get("context") or oslo_context.get_current()
        if ctx is not None:
            self.seen.append((record.getMessage(), ctx.request_id, ctx.user_id))


def test_a_refused_token_is_logged_under_its_own_request() -> None:
    handler = _Contexts()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with Deployment() as dep:
            first = dep.request("GET", "/v1/segments")
            assert first.status_int == 200
            handler.seen.clear()
            refused = dep.request("GET", "/v1/segments", headers={"X-Auth-Token": "forged"})
            assert refused.status_int == 401
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    own_id = refused.headers["x-openstack-request-id"]
    assert own_id != first.headers["x-openstack-request-id"]
    assert handler.seen, "auth_token logged nothing about the refused token"
    for message, request_id, user_id in handler.seen:
        assert (request_id, user_id) == (own_id, None), message

"""masakari.server.bridge: the environ, the body limit, the Host check, the answers."""

from __future__ import annotations

import asyncio
from typing import Any

from masakari.server import bridge


def _scope(headers: list[tuple[bytes, bytes]], **extra: Any) -> dict[str, Any]:
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": "/v1/segments",
        "raw_path": b"/v1/segments",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "headers": [(b"host", b"x"), *headers],
        "server": ("127.0.0.1", 15868),
        "client": ("127.0.0.2", 4242),
    }
    scope.update(extra)
    return scope


def _run(app: bridge.WSGIBridge, scope: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"{environ.get('CONTENT_LENGTH')}:{len(body)}".encode()]


def test_a_chunked_body_reaches_the_app_whole_with_its_length() -> None:
    app = bridge.WSGIBridge(_echo, max_body=100, threads=1)
    sent = _run(
        app,
        _scope([(b"transfer-encoding", b"chunked")]),
        [
            {"type": "http.request", "body": b"abc", "more_body": True},
            {"type": "http.request", "body": b"de", "more_body": False},
        ],
    )
    assert sent[0]["status"] == 200
    assert sent[1]["body"] == b"5:5"


def test_a_chunked_body_over_the_server_limit_is_413_without_the_app() -> None:
    calls: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append("called")
        return _echo(environ, start_response)

    chunks = [{"type": "http.request", "body": b"abc", "more_body": True}] * 3
    sent = _run(
        bridge.WSGIBridge(app, max_body=4, threads=1),
        _scope([(b"transfer-encoding", b"chunked")]),
        chunks,
    )
    assert sent[0]["status"] == 413
    assert calls == []
    # The rest of the body was not waited for.
    assert len(chunks) == 1


def test_a_declared_length_over_the_server_limit_is_413_unread() -> None:
    app = bridge.WSGIBridge(_echo, max_body=4, threads=1)
    sent = _run(app, _scope([(b"content-length", b"1000")]), [])
    assert sent[0]["status"] == 413


def test_a_body_at_the_server_limit_is_read() -> None:
    app = bridge.WSGIBridge(_echo, max_body=4, threads=1)
    sent = _run(
        app,
        _scope([(b"content-length", b"4")]),
        [{"type": "http.request", "body": b"abcd", "more_body": False}],
    )
    assert sent[1]["body"] == b"4:4"


def test_a_body_that_never_completes_is_408() -> None:
    app = bridge.WSGIBridge(_echo, max_body=100, threads=1)
    sent = _run(
        app,
        _scope([(b"content-length", b"10")]),
        [{"type": "http.request", "body": b"abc", "more_body": True}, {"type": "http.disconnect"}],
    )
    assert sent[0]["status"] == 408


def test_http_1_1_without_host_is_400() -> None:
    app = bridge.WSGIBridge(_echo, max_body=100, threads=1)
    scope = _scope([])
    scope["headers"] = []
    sent = _run(app, scope, [])
    assert sent[0]["status"] == 400
    assert b"Host" in sent[1]["body"]


def test_http_1_0_needs_no_host() -> None:
    assert not bridge.missing_host("1.0", [])
    assert bridge.missing_host("1.1", [(b"x-host", b"a")])
    assert not bridge.missing_host("1.1", [(b"Host", b"a")])


def test_environ() -> None:
    environ = bridge.make_environ(
        _scope(
            [
                (b"x-auth-token", b"good"),
                (b"x_auth_token", b"forged"),
                (b"x-project-id", b"a"),
                (b"x-project-id", b"b"),
                (b"content-type", b"application/json"),
            ],
            raw_path=b"/v1/segments/%C3%A9%2F",
            query_string=b"limit=1",
        ),
        b"{}",
    )
    assert environ["HTTP_X_AUTH_TOKEN"] == "good"
    assert environ["HTTP_X_PROJECT_ID"] == "a,b"
    assert environ["CONTENT_TYPE"] == "application/json"
    assert environ["CONTENT_LENGTH"] == "2"
    # PEP 3333: the decoded bytes of the path, as latin-1 text.
    assert environ["PATH_INFO"] == "/v1/segments/\xc3\xa9/"
    assert environ["QUERY_STRING"] == "limit=1"
    assert environ["REMOTE_ADDR"] == "127.0.0.2"
    assert (environ["SERVER_NAME"], environ["SERVER_PORT"]) == ("127.0.0.1", "15868")
    assert environ["wsgi.input"].read() == b"{}"


def test_app_headers_keep_their_case_and_get_a_length() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("201 Created", [("X-OpenStack-Request-Id", "req-1")])
        return [b"a", b"bc"]

    status, headers, body = bridge.call_wsgi(app, {})
    assert (status, headers, body) == (201, [(b"X-OpenStack-Request-Id", b"req-1")], b"abc")

"""Serve a WSGI application from gunicorn's asyncio (ASGI) worker.

The worker parses requests in its event loop, so a connection costs a thread only while
the application runs. This bridge keeps it that way for request bodies too: the body is
read into memory in the event loop before a thread is taken, so a client that sends its
body slowly holds no thread either. A chunked body reaches the application de-chunked,
with its length as CONTENT_LENGTH, so that oslo.middleware's size limit treats it as it
treats a declared length.

``max_body`` bounds that memory: a body declared or found longer is answered 413 here,
without running the application and without reading the rest. It is meant to be well
above the application's own limit ([oslo_middleware] max_request_body_size), which then
answers with its usual 413 on /v1 while / still reads bodies of any size up to it.
"""

from __future__ import annotations

import asyncio
import io
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from masakari.server.logs import DEFAULT_LINE, log_access

WSGIApp = Callable[..., Iterable[bytes]]
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]

# PEP 3333 names these two without the HTTP_ prefix.
_UNPREFIXED = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}


class TooLarge(Exception):
    """The request body is longer than the server buffers."""


class ClientGone(Exception):
    """The request body ended before it was complete: the client left or stalled."""


class WSGIBridge:
    """An ASGI application that runs ``app`` in a thread pool of ``threads`` threads."""

    def __init__(
        self, app: WSGIApp, max_body: int, threads: int, access_format: str = DEFAULT_LINE
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.access_format = access_format
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if missing_host(scope["http_version"], scope["headers"]):
            await _send(send, 400, [(b"content-type", b"text/plain")], MISSING_HOST)
            return
        try:
            body = await self._body(scope, receive)
        except TooLarge:
            await _send(send, 413, [(b"content-type", b"text/plain")], TOO_LARGE)
            return
        except ClientGone:
            # Gone, or the body stalled past gunicorn's timeout: the answer reaches a client
            # that is still there, and the unfinished body closes the connection.
            await _send(send, 408, [(b"content-type", b"text/plain")], BODY_TIMEOUT)
            return
        environ = make_environ(scope, body)
        loop = asyncio.get_running_loop()
        status, headers, payload = await loop.run_in_executor(self.executor, self._serve, environ)
        await _send(send, status, headers, payload)

    def _serve(self, environ: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        # The access line is written here, in the request's thread: a log write that stalls
        # (a busy disk, a full pipe) must not stall the event loop and every connection.
        started = time.monotonic()
        status, headers, payload = call_wsgi(self.app, environ)
        seconds = time.monotonic() - started
        log_access(self.access_format, environ, status, headers, len(payload), seconds)
        return status, headers, payload

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        declared = content_length(scope["headers"])
        if declared is not None and declared > self.max_body:
            raise TooLarge()
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk = message.get("body", b"")
            parts.append(chunk)
            size += len(chunk)
            if size > self.max_body:
                raise TooLarge()
            if not message.get("more_body", False):
                return b"".join(parts)


TOO_LARGE = b"Request Entity Too Large\n\nThe request body is larger than this server accepts.\n"
BODY_TIMEOUT = b"Request Timeout\n\nThe request body did not arrive in time.\n"
MISSING_HOST = b"Bad Request\n\nAn HTTP/1.1 request must carry a Host header.\n"


def missing_host(http_version: str, headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """RFC 9112 section 3.2: a server must refuse an HTTP/1.1 request without Host."""
    if http_version != "1.1":
        return False
    return not any(name.lower() == b"host" for name, _ in headers)


def content_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The declared Content-Length; gunicorn has already refused malformed ones."""
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value)
    return None


def make_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """The PEP 3333 environ of an ASGI HTTP scope whose body is ``body``."""
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", ""),
        # Percent-decoded bytes as latin-1 text, which is what webob expects to re-decode.
        "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "RAW_URI": _raw_uri(raw_path, scope.get("query_string", b"")),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").lower()
        # "X_Auth_Token" and "X-Auth-Token" would both become HTTP_X_AUTH_TOKEN: a client
        # could then shadow a header that a proxy in front set or removed.
        if "_" in name or name == "transfer-encoding":
            continue
        key = _UNPREFIXED.get(name) or "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    # The body is de-chunked here: the application sees a plain length.
    if body or "CONTENT_LENGTH" in environ:
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def _raw_uri(raw_path: bytes, query: bytes) -> str:
    # For the access line only: the target as sent, control characters quoted.
    target = raw_path + (b"?" + query if query else b"")
    return quote(target, safe="/?=&%:@!$'()*+,;~[]")


def call_wsgi(
    app: WSGIApp, environ: dict[str, Any]
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run ``app`` to the end: status, headers and the whole body."""
    started: list[Any] = []
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if exc_info is not None and started:
            raise exc_info[1].with_traceback(exc_info[2])
        started[:] = [status, headers]
        return chunks.append

    result = app(environ, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    return int(status.split(" ", 1)[0]), encoded, b"".join(chunks)


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    if not any(name.lower() == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return

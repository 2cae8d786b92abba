"""masakari-api as a deployer runs it: a subprocess on a synced database, and raw HTTP."""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from typing import Any

from masakari.server import settings
from tests.support.ports import free_port

BINDIR = os.path.dirname(sys.executable)

# The installed gunicorn serves pipelined requests and says "Connection: close" (the `server`
# extra); the upper-constraints' gunicorn does neither (docs/deployment.md).
STRICT = settings.strict_http()


class APIProcess:
    """``masakari-api --config-file F`` with noauth2 on a free port; SIGTERM at stop()."""

    def __init__(
        self,
        directory: str,
        db_url: str,
        workers: int = 2,
        extra: str = "",
        sync_url: str | None = None,
        scheme: str = "http",
        ca_file: str | None = None,
    ) -> None:
        self.port = free_port()
        self.scheme = scheme
        self.ca_file = ca_file
        self.log_path = os.path.join(directory, "masakari-api.log")
        self.conf = os.path.join(directory, "masakari.conf")
        with open(self.conf, "w") as fh:
            fh.write(
                "[DEFAULT]\n"
                "auth_strategy = noauth2\n"
                "masakari_api_listen = 127.0.0.1\n"
                f"masakari_api_listen_port = {self.port}\n"
                f"masakari_api_workers = {workers}\n"
                f"log_file = {self.log_path}\n"
                "[wsgi]\napi_paste_config =\n"
                f"[database]\nconnection = {db_url}\n"
                f"{extra}"
            )
        if sync_url is not None or db_url.startswith("sqlite"):
            self._sync(directory, sync_url or db_url)
        self.stderr_path = os.path.join(directory, "stderr.log")
        # The child has its own copy of the log's descriptor: ours is closed once it started.
        with open(self.stderr_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "masakari.cmd.api", "--config-file", self.conf],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise

    def _sync(self, directory: str, url: str) -> None:
        conf = os.path.join(directory, "sync.conf")
        with open(conf, "w") as fh:
            fh.write(f"[database]\nconnection = {url}\n")
        subprocess.run(
            [os.path.join(BINDIR, "masakari-manage"), "--config-file", conf, "db", "sync"],
            check=True,
            capture_output=True,
        )

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"masakari-api exited: {self.log()}")
            try:
                if self._root_status() == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"masakari-api did not answer: {self.log()}")

    def _root_status(self) -> int:
        if self.scheme == "http":
            return request(self.port, "GET", "/")[0]
        context = ssl.create_default_context(cafile=self.ca_file)
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=5)
        try:
            conn.request("GET", "/")
            return conn.getresponse().status
        finally:
            conn.close()

    def log(self) -> str:
        try:
            with open(self.log_path, errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""

    def stderr(self) -> str:
        with open(self.stderr_path, errors="replace") as fh:
            return fh.read()

    def stop(self) -> int:
        """SIGTERM, as a service manager does; the exit status."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def request(
    port: int, method: str, path: str, headers: dict[str, str] | None = None, timeout: float = 5
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A JSON request as a noauth2 user (u, project p): the status and the decoded body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "X-User-Id": "u", "X-Project-Id": "p"}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode()
        return resp.status, json.loads(text) if text else None
    finally:
        conn.close()


def exchange(port: int, data: bytes, timeout: float = 5) -> tuple[bytes, bool]:
    """Send ``data`` on a new connection; everything the server sent, and whether it closed
    the connection (False: still open after ``timeout``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            return received, False
        except ConnectionResetError:
            pass
        return received, True


class _Unclosable(io.BytesIO):
    # http.client closes its file after a "Connection: close" response; the bytes after it
    # (a smuggled response) must stay readable.
    def close(self) -> None:
        pass


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.fp = _Unclosable(data)

    def makefile(self, *args: object, **kwargs: object) -> io.BytesIO:
        return self.fp


def responses(data: bytes) -> list[tuple[int, bytes]]:
    """The HTTP responses in ``data``, in order: (status, body)."""
    source = _Bytes(data)
    found = []
    while source.fp.tell() < len(data):
        response = http.client.HTTPResponse(source)  # type: ignore[arg-type]
        response.begin()
        found.append((response.status, response.read()))
    return found

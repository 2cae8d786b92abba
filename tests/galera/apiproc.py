"""masakari-api processes for the Galera tests, each pointed at one node."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

HEADERS = {"Content-Type": "application/json", "X-User-Id": "u", "X-Project-Id": "p"}


def call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=HEADERS)
        resp = conn.getresponse()
        text = resp.read().decode()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text
    finally:
        conn.close()


@contextlib.contextmanager
def api_process(url: str, workdir: Path, workers: int = 2, extra: str = "") -> Iterator[int]:
    """Run masakari-api (noauth2) on ``url``; yield its port. Stopped with SIGTERM."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = workdir / "masakari.conf"
    conf.write_text(
        "[DEFAULT]\n"
        "auth_strategy = noauth2\n"
        "masakari_api_listen = 127.0.0.1\n"
        f"masakari_api_listen_port = {port}\n"
        f"masakari_api_workers = {workers}\n"
        "[wsgi]\napi_paste_config =\n"
        f"[database]\nconnection = {url}\n{extra}"
    )
    exe = shutil.which("masakari-api", path=os.path.dirname(sys.executable))
    assert exe, "masakari-api is not installed next to this Python"
    log_path = workdir / "api.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [exe, "--config-file", str(conf)], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if call(port, "GET", "/")[0] == 200:
                        break
                except OSError:
                    pass
                assert proc.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "masakari-api did not start"
                time.sleep(0.2)
            yield port
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)

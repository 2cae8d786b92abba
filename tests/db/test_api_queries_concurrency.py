"""N identical notifications at once, through several masakari-api processes on one database:
exactly one is accepted (202), every other one is a duplicate (409)."""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.db import migration
from masakari.db.database import Database
from masakari.ha import hosts, segments
from tests.support.api_process import call
from tests.support.ports import free_port

REQUESTS = 24
WORKERS = 3


@pytest.fixture
def api(db_url: str, tmp_path: Any) -> Iterator[int]:
    """masakari-api with WORKERS processes (noauth2) on a migrated database with one host."""
    db = Database.from_url(db_url)
    migration.upgrade(db.engine)
    segment = segments.create(
        db, {"name": "s", "recovery_method": "auto", "service_type": "compute", "enabled": False}
    ).uuid
    hosts.create(
        db, lambda name: None, segment, {"name": "compute-1", "type": "C", "control_attributes": ""}
    )
    db.dispose()
    port = free_port()
    conf = tmp_path / "masakari.conf"
    conf.write_text(
        "[DEFAULT]\n"
        "auth_strategy = noauth2\n"
        "masakari_api_listen = 127.0.0.1\n"
        f"masakari_api_listen_port = {port}\n"
        f"masakari_api_workers = {WORKERS}\n"
        "[wsgi]\napi_paste_config =\n"
        f"[database]\nconnection = {db_url}\n"
    )
    exe = shutil.which("masakari-api", path=os.path.dirname(sys.executable))
    assert exe, "masakari-api is not installed next to this Python"
    log = open(tmp_path / "api.log", "wb")
    proc = subprocess.Popen([exe, "--config-file", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(port, "GET", "/")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / "api.log").read_text()
            assert time.monotonic() < deadline, "masakari-api did not start"
            time.sleep(0.2)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, (tmp_path / "api.log").read_text()
        log.close()


def _log_tail(tmp_path: Any) -> str:
    return "".join((tmp_path / "api.log").read_text(errors="replace").splitlines(True)[-60:])


def test_identical_notifications_in_parallel_give_one_202(api: int, tmp_path: Any) -> None:
    body = {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": "compute-1",
            "generated_time": "2026-06-01T10:00:00",
            "payload": {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"},
        }
    }
    with concurrent.futures.ThreadPoolExecutor(REQUESTS) as pool:
        results = list(
            pool.map(lambda _: call(api, "POST", "/v1/notifications", body), range(REQUESTS))
        )
    statuses = sorted(status for status, _ in results)
    others = [r for r in results if r[0] not in (202, 409)]
    assert statuses == [202] + [409] * (REQUESTS - 1), (others, _log_tail(tmp_path))
    status, listed = call(api, "GET", "/v1/notifications")
    assert status == 200 and len(listed["notifications"]) == 1

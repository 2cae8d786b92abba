"""masakari-api with several workers: one count across them all, on /metrics and on the
unauthenticated listener of [metrics] api_port."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.api_process import APIProcess, request
from tests.support.ports import free_port

REPORTS = 24


def received(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "masakari_notifications_received_total" and sample.labels == {
                "type": "invalid",
                "code": "400",
            }:
                return sample.value
    return 0.0


def post_bad_report(port: int) -> int:
    # A new connection each time, so that the reports spread over the workers.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        body = json.dumps({"notification": {"type": "DISK"}})
        conn.request("POST", "/v1/notifications", body, {"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


def test_workers_share_one_count(tmp_path: Path) -> None:
    listener = free_port()
    api = APIProcess(
        str(tmp_path),
        f"sqlite:///{tmp_path}/masakari.db",
        workers=2,
        extra=f"[metrics]\nenabled = true\napi_port = {listener}\n",
    )
    try:
        assert [post_bad_report(api.port) for _ in range(REPORTS)] == [400] * REPORTS
        status, headers, body = request(api.port, "GET", "/metrics")
        assert status == 200, body
        assert headers["Content-Type"].startswith("text/plain")
        assert received(body.decode()) == REPORTS
        status, _, body = request(listener, "GET", "/metrics")
        assert status == 200
        assert received(body.decode()) == REPORTS
        assert b"masakari_database_up 1.0" in body
    finally:
        assert api.stop() == 0, api.log()

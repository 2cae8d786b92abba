"""A PostgreSQL database that goes away and comes back, through tests/support/tcpproxy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.db import backends
from tests.support.api_process import APIProcess, request
from tests.support.tcpproxy import TCPProxy


@pytest.fixture
def postgresql_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    reason = backends.server_reachable("postgresql")
    if reason:
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    with backends.temporary_database("postgresql", str(tmp_path)) as url:
        yield url


def _through(url: str, proxy: TCPProxy) -> str:
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url).set(host="127.0.0.1", port=proxy.port)
    return parsed.render_as_string(hide_password=False)


def _wait_status(port: int, path: str, status: int, seconds: float = 15) -> tuple[int, dict, bytes]:
    deadline = time.monotonic() + seconds
    while True:
        answer = request(port, "GET", path)
        if answer[0] == status or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_database_outage_is_503_and_recovers_by_itself(postgresql_url: str, tmp_path) -> None:
    target = backends.sa.engine.make_url(postgresql_url)
    with TCPProxy(target.host or "127.0.0.1", target.port or 5432) as proxy:
        api = APIProcess(
            str(tmp_path), _through(postgresql_url, proxy), workers=1, sync_url=postgresql_url
        )
        try:
            status, _, body = request(api.port, "GET", "/v1/segments")
            assert (status, json.loads(body)) == (200, {"segments": []})
            assert request(api.port, "GET", "/healthcheck")[:3:2] == (200, b"OK")

            proxy.stop()
            for _ in range(3):
                status, headers, body = request(api.port, "GET", "/v1/segments")
                assert status == 503, body
                assert int(headers["Retry-After"]) > 0
                fault = json.loads(body)["serviceUnavailable"]
                assert fault["code"] == 503
                assert "database" in fault["message"].lower()
            status, _, body = request(api.port, "GET", "/healthcheck")
            # One line per backend: disable_by_file's "OK", then the database's.
            assert (status, body.splitlines()) == (503, [b"OK", b"Database unreachable"])

            proxy.start()
            status, _, body = _wait_status(api.port, "/v1/segments", 200)
            assert (status, json.loads(body)) == (200, {"segments": []})
            assert request(api.port, "GET", "/healthcheck")[:3:2] == (200, b"OK")

            log = api.log()
            # One line when the outage starts, one when it ends; no traceback per request.
            assert log.count("Database unreachable, answering 503") == 1, log
            assert log.count("Database reachable again") == 1, log
            assert "Traceback" not in log
            assert "Unexpected API Error" not in log
        finally:
            assert api.stop() == 0

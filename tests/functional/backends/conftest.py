"""RabbitMQ and Redis on loopback: a test that needs one skips when it is down, unless CI
passes --require-servers."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

RABBIT_URL = os.environ.get("MASAKARI_TEST_RABBIT_URL", "rabbit://guest:guest@127.0.0.1:5672/")
REDIS_URL = os.environ.get("MASAKARI_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _require(request: pytest.FixtureRequest, name: str, url: str, port: int) -> None:
    where = urlsplit(url)
    host, port = where.hostname or "127.0.0.1", where.port or port
    if _reachable(host, port):
        return
    reason = f"{name} on {host}:{port} unreachable"
    if request.config.getoption("--require-servers"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def rabbit_url(request: pytest.FixtureRequest) -> str:
    _require(request, "RabbitMQ", RABBIT_URL, 5672)
    return RABBIT_URL


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> str:
    _require(request, "Redis", REDIS_URL, 6379)
    return REDIS_URL

"""One masakari-api (2 workers, SQLite, noauth2) for the package: starting one takes seconds."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from tests.support.api_process import APIProcess

# The connection tests open 600 sockets in this process, and the server inherits the limit.
OPEN_FILES = 4096


@pytest.fixture(scope="package")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIProcess]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < OPEN_FILES and (hard == resource.RLIM_INFINITY or hard >= OPEN_FILES):
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))
    directory = tmp_path_factory.mktemp("api")
    process = APIProcess(
        str(directory),
        f"sqlite:///{directory}/masakari.db",
        workers=2,
        extra="[oslo_middleware]\nmax_request_body_size = 4096\n",
    )
    yield process
    assert process.stop() == 0, process.log()

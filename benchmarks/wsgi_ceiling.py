"""The server of masakari-api with a trivial application: the API's throughput ceiling.

    python -m benchmarks.wsgi_ceiling --config-file masakari.conf

gunicorn with masakari-api's settings and bridge (workers, threads, access line), serving a
WSGI application that answers every request with a fixed small JSON body: no middleware,
no database. benchmarks/api_bench.py starts it and measures GET / against it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from masakari import conf as masakari_conf
from masakari.server import bridge, settings
from masakari.server.application import APIServer, server_body_limit

BODY = b'{"versions": []}'


def trivial(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
    )
    return [BODY]


class CeilingServer(APIServer):
    def load(self) -> Any:
        return bridge.WSGIBridge(
            trivial,
            max_body=server_body_limit(self.conf),
            threads=settings.thread_count(self.conf),
            access_format=self.conf.wsgi.wsgi_log_format,
        )


def main() -> int:
    conf = masakari_conf.load(sys.argv[1:])
    masakari_conf.setup_logging(conf)
    CeilingServer(conf).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

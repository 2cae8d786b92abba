"""masakari-api: serve the API on [DEFAULT]/masakari_api_listen:masakari_api_listen_port.

gunicorn runs ``masakari_api_workers`` processes (unset or 0: one per CPU, as the
reference) and restarts any that dies; masakari.server says how each serves. SIGTERM stops
it gracefully: no new connection is accepted, requests in progress finish (10 s at most).
The database schema is never touched here: run ``masakari-manage db sync`` first.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from masakari import conf as masakari_conf
from masakari.api import app as api_app
from masakari.db.database import Database
from masakari.metrics import multiproc
from masakari.server import application, settings

# The reference's WSGI entry point: distributions' pbr-generated ``masakari-wsgi`` scripts
# and the charm's Apache configuration import it from here.
from masakari.wsgi.loader import initialize_application

__all__ = ["initialize_application", "main"]

LOG = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    conf = masakari_conf.load(list(sys.argv[1:] if argv is None else argv))
    masakari_conf.setup_logging(conf)
    try:
        settings.worker_count(conf)
        # Fail before forking when the configuration cannot make an application; each
        # worker then builds its own, with its own database connections.
        db = Database.from_conf(conf)
        try:
            api_app.build(conf, db=db)
        finally:
            db.dispose()
    except Exception as exc:
        LOG.error("Failed to start masakari-api: %s", exc)
        return 1
    if not settings.strict_http():
        LOG.info(
            "gunicorn %s: pipelined requests are not served, nor is Connection: close said "
            "with keep_alive = false; gunicorn >= %s (the masakari[server] extra) does both",
            ".".join(map(str, settings.gunicorn_version())),
            ".".join(map(str, settings.STRICT_GUNICORN)),
        )
    multiproc.prepare(conf)
    application.freeze_startup_objects()
    application.APIServer(conf).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

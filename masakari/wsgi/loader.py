"""The API built from the configuration directory, for a WSGI server that is not masakari's.

Configuration is found as the reference finds it: ``masakari.conf`` and ``api-paste.ini``
in the directory named by ``OS_MASAKARI_CONFIG_DIR`` (default ``/etc/masakari``). Nothing
is built on import: ``masakari.wsgi.api`` builds at its import, ``masakari.cmd.api``
re-exports ``initialize_application`` for the reference's callers.
"""

from __future__ import annotations

import os
from typing import Any

from masakari import conf as masakari_conf
from masakari.api import app as api_app

CONFIG_DIR_ENV = "OS_MASAKARI_CONFIG_DIR"
DEFAULT_CONFIG_DIR = "/etc/masakari"
CONFIG_FILE = "masakari.conf"


def config_files(environ: dict[str, str] | None = None) -> list[str]:
    """The masakari.conf of the configuration directory, when it exists."""
    environ = dict(os.environ) if environ is None else environ
    directory = environ.get(CONFIG_DIR_ENV, DEFAULT_CONFIG_DIR).strip()
    path = os.path.join(directory, CONFIG_FILE)
    return [path] if os.path.exists(path) else []


def initialize_application() -> Any:
    """Parse the configuration, set up logging and build the application."""
    files = config_files()
    # No command-line arguments: they belong to the WSGI server, not to masakari. The
    # directory of the files is where a relative [wsgi]/api_paste_config is looked for.
    conf = masakari_conf.load([], default_config_files=files)
    masakari_conf.setup_logging(conf)
    return api_app.build(conf)

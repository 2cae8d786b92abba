"""gunicorn's entry to Keystone: the service parses sys.argv with oslo.config, and gunicorn's
own arguments would fail it; OS_KEYSTONE_CONFIG_FILES names the configuration."""

import sys

sys.argv = sys.argv[:1]

from keystone.wsgi.api import application  # noqa: E402,F401

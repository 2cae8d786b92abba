"""gunicorn's entry to Glance's API (OS_GLANCE_CONFIG_DIR); sys.argv cleared, as for Keystone."""

import sys

sys.argv = sys.argv[:1]

from glance.wsgi.api import application  # noqa: E402,F401

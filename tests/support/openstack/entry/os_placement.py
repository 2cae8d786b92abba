"""gunicorn's entry to Placement (OS_PLACEMENT_CONFIG_DIR); sys.argv cleared, as for Keystone."""

import sys

sys.argv = sys.argv[:1]

from placement.wsgi.api import application  # noqa: E402,F401

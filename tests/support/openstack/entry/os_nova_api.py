"""gunicorn's entry to nova-api (OS_NOVA_CONFIG_DIR, OS_NOVA_CONFIG_FILES); sys.argv cleared,
as for Keystone."""

import sys

sys.argv = sys.argv[:1]

from nova.wsgi.osapi_compute import application  # noqa: E402,F401

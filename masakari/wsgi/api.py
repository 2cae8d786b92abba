"""``masakari.wsgi.api:application``: the API for an external WSGI server.

The application is built when the module is imported, as the reference's is: uWSGI and
mod_wsgi look the callable up in the module's namespace (a lazy module ``__getattr__`` is
invisible to them), and a broken configuration then stops the server at start-up, where its
``--need-app`` (uWSGI) or boot check (gunicorn) reports it, instead of at the first request.
Where the configuration is read from: masakari.wsgi.loader.
"""

from __future__ import annotations

from masakari.wsgi.loader import initialize_application

application = initialize_application()

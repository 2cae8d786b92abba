"""masakari-api's HTTP server: gunicorn's pre-fork arbiter and asyncio worker, with a thin
bridge that runs the WSGI application in a thread pool (docs/configuration.md, "Server")."""

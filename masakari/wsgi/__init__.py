"""WSGI entry points for servers such as uwsgi, gunicorn or mod_wsgi."""

"""A database the API cannot reach: a 503 for the client, one log line per outage.

A lost database is not a bug of masakari, so it is neither a 500 nor a traceback per
request. The first failed request of an outage logs a warning, the first request that
reaches the database again logs that it is back; requests in between log nothing. oslo.db
drops the dead connections, so the API recovers by itself once the database answers.

The state is per process: each API worker reports its own outages.
"""

from __future__ import annotations

from masakari.db.outage import OutageLog

MESSAGE = "The database is unreachable; retry later."
# Seconds a client is told to wait (Retry-After) before it tries again.
RETRY_AFTER = 5


# One per API process (each worker says its own outages); dbcheck and the router report to it.
OUTAGES = OutageLog("answering 503 until it is back")

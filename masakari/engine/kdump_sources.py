"""The sources an engine's fence_kdump listener keeps messages from.

The kdump entries of the fencing file, for every host of the hosts table (an entry may be
a pattern's or a segment default's, its address a ``{host}`` template or a name): their
addresses, resolved. Worked out when the engine starts and every :data:`INTERVAL` seconds
after (a host added to masakari, a name that now resolves elsewhere), on the periodic
thread: the listener only looks the source up in the last set made, so that a datagram from
any other address is dropped before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from masakari.db import fencing as fence_db
from masakari.db.database import Database
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.fencing import kdump
from masakari.fencing.base import KDUMP

LOG = logging.getLogger(__name__)

# Seconds between two refreshes of the set.
INTERVAL = 60.0


class KdumpSources:
    def __init__(
        self,
        db: Database,
        fencing: HostFencing | None,
        resolve: Callable[[str], set[str]] = kdump.resolve,
    ) -> None:
        self.db = db
        self.fencing = fencing
        self.resolve = resolve
        # Replaced whole: the listener's thread reads it without a lock.
        self.addresses: frozenset[str] = frozenset()

    def allows(self, address: str) -> bool:
        return address in self.addresses

    def refresh(self) -> None:
        """The set again, from the hosts table and the fencing file (the periodic task)."""
        if self.fencing is None:
            return  # no kdump entry: nothing is kept
        with self.db.reader() as session:
            hosts = fence_db.hosts_to_check(session)
        names: set[str] = set()
        for name, segment_uuid, segment_name in hosts:
            for spec in self.fencing.drivers_for(FencedHost(name, segment_name, segment_uuid)):
                if spec.type == KDUMP and spec.address:
                    names.add(spec.address)
        found: set[str] = set()
        for name in sorted(names):
            try:
                found |= self.resolve(name)
            except (OSError, UnicodeError) as exc:
                # Its host's messages are dropped until it resolves: the readiness check
                # says so too.
                LOG.warning("kdump address %s does not resolve: %s", name, exc)
        if found != self.addresses:
            LOG.info("fence_kdump listener: keeping messages from %d address(es)", len(found))
        self.addresses = frozenset(found)

"""A run's failed host and spares: read, put on maintenance, spares taken and given back,
with the ``host.update`` notices around the changes; a part of
:class:`masakari.engine.effects.Effects`, written under its claim like the others."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import orm

from masakari import exception
from masakari.db import hosts, spares
from masakari.db.hosts import RecoveryHost
from masakari.db.progress import TaskNote
from masakari.engine.host_notices import SILENT, HostNotices
from masakari.engine.seam import Seam

T = TypeVar("T")


class HostChanges:
    """``effects.hosts``."""

    def __init__(self, seam: Seam) -> None:
        self._seam = seam
        # host.update notifications around the host changes below (the runner sets its own).
        self.host_notices: HostNotices = SILENT

    def host(self, host_uuid: str) -> RecoveryHost | None:
        return self._seam.read(lambda s: hosts.get_for_recovery(s, host_uuid))

    def reserved_host_names(self, segment_uuid: str) -> list[str]:
        return self._seam.read(lambda s: hosts.reserved_host_names(s, segment_uuid))

    def spares_taken(self, host: RecoveryHost) -> list[str]:
        """The spares the recoveries of ``host`` took that are still out of the pool."""
        return self._seam.read(
            lambda s: spares.taken_for(
                s, host.uuid, host.failover_segment_id, self._seam.notification_uuid
            )
        )

    def peer_host_names(self, host_name: str) -> list[str]:
        return self._seam.read(lambda s: hosts.peer_names(s, host_name))

    def put_host_on_maintenance(self, host_uuid: str, unreserve_spare: bool) -> RecoveryHost:
        """The failed host goes on maintenance (a failed spare is no spare any more)."""

        def maintain(session: orm.Session) -> RecoveryHost:
            host = hosts.get_for_recovery(session, host_uuid)
            if host is None:
                raise exception.HostNotFound(id=host_uuid)
            hosts.put_on_maintenance(
                session, host.uuid, unreserve=unreserve_spare and host.reserved
            )
            return host

        values = {"on_maintenance": True, **({"reserved": False} if unreserve_spare else {})}
        with self.host_notices.update(self._seam.db, values, uuid=host_uuid) as written:
            host = self._seam.write(maintain)
            written()
        return host

    def take_reserved_host(self, name: str, note: TaskNote | None = None) -> bool:
        """Take a spare; ``note`` is written in the same transaction, only if taken: the
        recovery's progress then names every spare it took (what host return gives back)."""

        def take(session: orm.Session) -> bool:
            if not hosts.take_reserved_host(session, name):
                return False
            if note is not None:
                self._seam.record_note(session, note)
            return True

        with self.host_notices.update(self._seam.db, {"reserved": False}, name=name) as written:
            taken = self._seam.write(take)
            if taken:
                written()
        return taken

    def return_spare(self, name: str) -> bool:
        """A spare a recovery took is reserved again; False when it changed meanwhile."""
        return self._seam.write(lambda session: spares.give_back(session, name))

    def give_back_reserved_host(self, name: str) -> None:
        self._seam.write(lambda session: hosts.give_back_reserved_host(session, name))

    def clear_maintenance(self, host_uuid: str) -> bool:
        return self._seam.write(lambda session: hosts.clear_maintenance(session, host_uuid))

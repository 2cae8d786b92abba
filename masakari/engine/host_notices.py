"""The versioned ``host.update.start``/``.end`` around the engine's own changes of a host.

The reference's engine saves the Host object when it puts a failed host on maintenance
(clearing ``reserved`` on a failed spare) and when it takes a spare for a recovery, and each
save sends ``host.update.start`` and ``.end`` with the host as it is about to be written.
That save names ``masakari-api`` as the publisher wherever it runs (the reference's Host
object always notifies as the API), so these do too: a consumer routing on the publisher
sees every ``host.update`` in one place. Effects calls ``update`` around those writes; with
notifications off (the default) it reads nothing and sends nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import sqlalchemy as sa

from masakari import notifier
from masakari.db.database import Database
from masakari.db.models import Host, Segment

# The publisher's binary of every host.update, the engine's included.
PUBLISHER = "masakari-api"


class HostNotices:
    def __init__(self, sender: notifier.Notifier | None = None) -> None:
        """``sender``: the engine's notifier; its transport is used, with ``PUBLISHER``."""
        self._notifier = None
        if sender is not None and sender.enabled:
            self._notifier = sender.publishing_as(PUBLISHER)

    @property
    def enabled(self) -> bool:
        return self._notifier is not None and self._notifier.enabled

    @contextlib.contextmanager
    def update(
        self,
        db: Database,
        values: Mapping[str, Any],
        *,
        uuid: str | None = None,
        name: str | None = None,
    ) -> Iterator[Callable[[], None]]:
        """Around the write of ``values`` to the host ``uuid`` (or ``name``): start before,
        end when the block calls what it is given (the write took place), error if it raises.
        """
        if self._notifier is None or not self._notifier.enabled:
            yield lambda: None
            return
        fields = _fields(db, uuid, name)
        if fields is None:  # gone: the write will say so
            yield lambda: None
            return
        fields.update(values)
        payload = lambda fault: notifier.host_payload(fields, fault)  # noqa: E731
        with self._notifier.around("host.update", payload) as done:
            yield lambda: done(payload(None))


def _fields(db: Database, uuid: str | None, name: str | None) -> dict[str, Any] | None:
    where = Host.uuid == uuid if uuid is not None else Host.name == name
    with db.reader() as session:
        host = session.scalar(sa.select(Host).where(where, Host.deleted == 0))
        if host is None:
            return None
        segment = session.scalar(sa.select(Segment).where(Segment.uuid == host.failover_segment_id))
        return notifier.host_fields(host, segment)


SILENT = HostNotices()

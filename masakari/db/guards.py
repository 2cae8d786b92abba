"""Per-host guards: a row whose change serialises per-host decisions across every process."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import HostGuard


def hold(session: orm.Session, host_uuid: str) -> None:
    """Change the host's guard row inside the caller's transaction.

    Two transactions that hold one host's guard conflict on every backend: PostgreSQL and
    InnoDB make the second wait for the first to end, Galera fails one of them at commit
    with a deadlock (certification) error. The first use of a host inserts its row; two
    concurrent first uses collide on the primary key, and the loser is retried or refused by
    the caller like any lost race.
    """
    bumped = session.execute(
        sa.update(HostGuard)
        .where(HostGuard.host_uuid == host_uuid)
        .values(version=HostGuard.version + 1)
        .execution_options(synchronize_session=False)
    )
    if affected_rows(bumped) == 0:
        session.add(HostGuard(host_uuid=host_uuid, version=1))
        session.flush()

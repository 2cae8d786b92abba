"""A run's evacuation slots (masakari.db.slots): taken, handed over and given back under
its claim; the other half of :class:`masakari.engine.effects.Effects`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import orm

from masakari import metrics
from masakari.db import slots, vmoves
from masakari.db import statuses as st
from masakari.db.database import Database, transaction
from masakari.engine.lease import Lease
from masakari.engine.ports import Clock

T = TypeVar("T")


class SlotChanges:
    _db: Database
    _clock: Clock
    lease: Lease
    notification_uuid: str

    def _write(self, fn: Callable[[orm.Session], T]) -> T:
        raise NotImplementedError

    def take_evacuation_slot(
        self, cap: int, instance_uuid: str, vmove_id: int | None = None
    ) -> int | None:
        """A slot of the evacuation cap, taken under our claim; None while all are held.

        ``vmove_id``: an evacuation ready to go, whose vmove turns ongoing in the same
        transaction (one write less between the slot and the evacuate request).
        """

        def take(session: orm.Session) -> int | None:
            number = slots.take(
                session,
                cap,
                self.notification_uuid,
                self.lease.owner,
                self.lease.token,
                instance_uuid,
                self._clock.now(),
            )
            if number is not None and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return number

        started = self._write(take)
        if started is not None and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return started

    def slot_holder(self) -> tuple[str, str, int]:
        """Who our slots name: notification, owner, token (what :meth:`receive_evacuation_slot`
        of another run checks before moving one)."""
        return self.notification_uuid, self.lease.owner, self.lease.token

    def receive_evacuation_slot(
        self,
        number: int,
        giver: tuple[str, str, int],
        instance_uuid: str,
        vmove_id: int | None = None,
    ) -> bool:
        """Take over slot ``number`` from another run of this engine without it ever being
        free; fenced on our claim. False when the giver no longer holds it."""

        def receive(session: orm.Session) -> bool:
            moved = slots.hand_over(
                session,
                number,
                giver,
                self.notification_uuid,
                self.lease.owner,
                self.lease.token,
                instance_uuid,
                self._clock.now(),
            )
            if moved and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return moved

        moved = self._write(receive)
        if moved and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return moved

    def _start_vmove(self, session: orm.Session, vmove_id: int) -> None:
        vmoves.update(
            session, vmove_id, {"status": st.VMOVE_ONGOING, "start_time": self._clock.now()}
        )

    def give_back_evacuation_slot(self, number: int) -> None:
        """Not fenced: giving a slot back is right whoever owns the claim now."""
        transaction(
            self._db,
            lambda s: slots.give_back(s, number, self.lease.owner, self.lease.token),
            retry_while=self.lease.check,
        )

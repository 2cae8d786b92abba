"""A run's evacuation slots (masakari.db.slots): taken, handed over and given back under
its claim; the other half of :class:`masakari.engine.effects.Effects`."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import orm

from masakari import metrics
from masakari.db import slots, vmoves
from masakari.db import statuses as st
from masakari.db.database import transaction
from masakari.engine.seam import Seam

T = TypeVar("T")


class SlotChanges:
    """``effects.slots``."""

    def __init__(self, seam: Seam) -> None:
        self._seam = seam

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
                self._seam.notification_uuid,
                self._seam.lease.owner,
                self._seam.lease.token,
                instance_uuid,
                self._seam.clock.now(),
            )
            if number is not None and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return number

        started = self._seam.write(take)
        if started is not None and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return started

    def slot_holder(self) -> tuple[str, str, int]:
        """Who our slots name: notification, owner, token (what :meth:`receive_evacuation_slot`
        of another run checks before moving one)."""
        return self._seam.notification_uuid, self._seam.lease.owner, self._seam.lease.token

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
                self._seam.notification_uuid,
                self._seam.lease.owner,
                self._seam.lease.token,
                instance_uuid,
                self._seam.clock.now(),
            )
            if moved and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return moved

        moved = self._seam.write(receive)
        if moved and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return moved

    def _start_vmove(self, session: orm.Session, vmove_id: int) -> None:
        vmoves.update(
            session, vmove_id, {"status": st.VMOVE_ONGOING, "start_time": self._seam.clock.now()}
        )

    def give_back_evacuation_slot(self, number: int) -> None:
        """Not fenced: giving a slot back is right whoever owns the claim now."""
        transaction(
            self._seam.db,
            lambda s: slots.give_back(s, number, self._seam.lease.owner, self._seam.lease.token),
            retry_while=self._seam.lease.check,
        )

"""A run's host fencing effects: power actions on a failed host's BMC, like Nova changes.

Each action is sent only while the run's lease holds, and recorded around the call: a row
``sent`` (a fenced write) before it, the answer after it. An engine that takes the
recovery over therefore knows what was sent, and reads the state back before it sends
anything again (masakari.engine.recovery.fence). The holding of a notification no driver
proved dead gives the claim up in the same fenced transaction. The other half of
:class:`masakari.engine.effects.Effects`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection
from typing import TypeVar

from masakari import metrics
from masakari.db import fencing, holds
from masakari.db.fencing import Attempt
from masakari.db.progress import TaskNote
from masakari.engine.lease import LeaseLost
from masakari.engine.seam import Seam
from masakari.fencing.base import (
    DriverSpec,
    FenceError,
    PowerDriver,
    PowerState,
    Refused,
    Unreachable,
)

T = TypeVar("T")

__all__ = ["Attempt", "FenceChanges", "failure_result"]


def failure_result(exc: FenceError) -> str:
    """An attempt's result for a driver's error."""
    if isinstance(exc, Unreachable):
        return fencing.UNREACHABLE
    if isinstance(exc, Refused):
        return fencing.REFUSED
    return fencing.FAILED


class FenceChanges:
    """Reads and fenced changes of host fencing; ``_write`` and ``_read`` are Effects'."""

    def __init__(self, seam: Seam) -> None:
        self._seam = seam

    # --- reads ---------------------------------------------------------------------------------

    def fence_attempts(self) -> list[Attempt]:
        return self._seam.read(lambda s: fencing.attempts(s, self._seam.notification_uuid))

    def released_hold(self) -> str | None:
        """Why the notification was held, if an operator released the hold."""
        return self._seam.read(lambda s: holds.released_hold(s, self._seam.notification_uuid))

    def kdump_messages(
        self, addresses: Collection[str], after: datetime.datetime
    ) -> list[datetime.datetime]:
        """kdump: when the messages from one of a host's ``addresses`` (IPs, as the
        listeners record them) any engine received after ``after`` arrived, oldest first."""
        return self._seam.read(lambda s: fencing.kdump_after(s, addresses, after))

    def reported_to_masakari(self) -> datetime.datetime | None:
        """When the notification reached masakari (its created_at: masakari's clock)."""
        return self._seam.read(lambda s: fencing.created_at(s, self._seam.notification_uuid))

    # --- records ---------------------------------------------------------------------------

    def record_fence(
        self,
        host: str,
        position: int,
        driver: str,
        action: str,
        result: str,
        message: str | None,
        started_at: datetime.datetime,
        duration: float | None,
        kind: str,
    ) -> None:
        """An attempt known whole at once (a kdump wait, a release)."""
        self._seam.write(
            lambda s: fencing.start(
                s,
                self._seam.notification_uuid,
                self._seam.lease.owner,
                self._seam.lease.token,
                host,
                position,
                driver,
                action,
                started_at,
                result=result,
                message=message,
                duration=duration,
            )
        )
        metrics.fence_attempt(kind, action, result, duration)

    def _begin(self, host: str, position: int, spec: DriverSpec, action: str) -> int:
        started = self._seam.clock.now()
        return self._seam.write(
            lambda s: fencing.start(
                s,
                self._seam.notification_uuid,
                self._seam.lease.owner,
                self._seam.lease.token,
                host,
                position,
                spec.describe(),
                action,
                started,
            )
        )

    def _answer(
        self,
        attempt_id: int,
        spec: DriverSpec,
        action: str,
        result: str,
        message: str | None,
        seconds: float,
    ) -> None:
        self._seam.write(lambda s: fencing.answer(s, attempt_id, result, message, seconds))
        metrics.fence_attempt(spec.type, action, result, seconds)

    # --- power actions ---------------------------------------------------------------------

    def _power(self, driver: PowerDriver, host: str, position: int, action: str) -> None:
        """Power off or on: recorded as sent, sent under the lease, answered (a failure's
        answer says why; the row names the driver)."""
        call = driver.power_off if action == fencing.OFF else driver.power_on
        attempt_id = self._begin(host, position, driver.spec, action)
        started = self._seam.clock.monotonic()
        try:
            self._seam.lease.check()
            call()
        except FenceError as exc:
            self._answer(
                attempt_id,
                driver.spec,
                action,
                failure_result(exc),
                exc.why,
                self._seam.clock.monotonic() - started,
            )
            raise
        except LeaseLost:
            raise  # nothing sent: the row stays ``sent``, and the next engine reads first
        self._answer(
            attempt_id,
            driver.spec,
            action,
            fencing.DONE,
            "accepted",
            self._seam.clock.monotonic() - started,
        )

    def power_off(self, driver: PowerDriver, host: str, position: int) -> None:
        self._power(driver, host, position, fencing.OFF)

    def power_on(self, driver: PowerDriver, host: str, position: int) -> None:
        self._power(driver, host, position, fencing.ON)

    def confirm_off(
        self,
        driver: PowerDriver,
        host: str,
        position: int,
        interval: float,
        timeout: float,
        wait: Callable[[float], None],
    ) -> bool:
        """Read the power state every ``interval`` s until it reads Off, up to ``timeout``
        s; one attempt row for the whole confirmation. True once Off.

        A read that fails is not the end: the BMC may answer the next one; the last error
        is what the row says when the time is up.
        """
        attempt_id = self._begin(host, position, driver.spec, fencing.STATUS)
        started = self._seam.clock.monotonic()
        reads = 0
        last: str = "no answer"
        result = fencing.TIMEOUT
        while True:
            self._seam.lease.check()
            reads += 1
            try:
                state = driver.power_status()
            except FenceError as exc:
                last, result = exc.why, failure_result(exc)
            else:
                if state is PowerState.OFF:
                    self._answer(
                        attempt_id,
                        driver.spec,
                        fencing.STATUS,
                        fencing.POWER_OFF,
                        f"off after {reads} read(s)",
                        self._seam.clock.monotonic() - started,
                    )
                    return True
                last, result = f"reads {state.value}", fencing.TIMEOUT
            if self._seam.clock.monotonic() - started + interval > timeout:
                break
            wait(interval)
        self._answer(
            attempt_id,
            driver.spec,
            fencing.STATUS,
            result,
            f"not off after {timeout:g} s ({reads} read(s)): {last}",
            self._seam.clock.monotonic() - started,
        )
        return False

    def read_back(self, driver: PowerDriver, host: str, position: int) -> bool:
        """One status read (an engine taking over an off that was sent): True when Off."""
        attempt_id = self._begin(host, position, driver.spec, fencing.STATUS)
        started = self._seam.clock.monotonic()
        self._seam.lease.check()
        try:
            state = driver.power_status()
        except FenceError as exc:
            self._answer(
                attempt_id,
                driver.spec,
                fencing.STATUS,
                failure_result(exc),
                exc.why,
                self._seam.clock.monotonic() - started,
            )
            return False
        result = fencing.POWER_OFF if state is PowerState.OFF else state.value
        self._answer(
            attempt_id,
            driver.spec,
            fencing.STATUS,
            result,
            f"read back: {state.value}",
            self._seam.clock.monotonic() - started,
        )
        return state is PowerState.OFF

    # --- the hold ------------------------------------------------------------------------------

    def hold(self, reason: str, note: TaskNote) -> bool:
        """Hold the notification and give the claim up, with the task's last progress note,
        in one fenced transaction (always made, or LeaseLost); the run must end then (raise
        Held)."""
        self._seam.hold(reason, lambda session: self._seam.record_note(session, note))
        return True

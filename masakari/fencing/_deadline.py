"""A call that returns within its deadline, whatever the library under it does.

Client libraries retry and sleep on their own (sushy: 5xx answers, connection errors) and
some set no timeout at all; a fence has a budget. The call runs on a daemon thread of its
own: at the deadline the caller gets :class:`Expired` while the thread is left to finish
(its library's own timeouts, set to the same budget, end it soon after) and its result is
dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Expired(Exception):
    """The call was not done by its deadline."""


class _Outcome(Generic[T]):
    __slots__ = ("value", "error")

    def __init__(self) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None


def within(timeout: float, call: Callable[[], T], name: str = "fence-call") -> T:
    """``call()``'s result or exception, or :class:`Expired` after ``timeout`` seconds."""
    outcome: _Outcome[T] = _Outcome()

    def run() -> None:
        try:
            outcome.value = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            outcome.error = exc

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise Expired()
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]

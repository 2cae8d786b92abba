"""The lower bound of a host recovery: the time Nova itself needs, given the engine's parallelism.

The Nova simulator (tests/fakes/nova.py) gives every *accepted* evacuation a duration drawn
from ``random.Random(seed).uniform(lo, hi)``, one draw per accepted ``evacuate`` call, in the
order the calls arrive. So whatever instance the k-th accepted call is for, it takes the k-th
draw, and the draws can be reproduced here from the seed.

An engine that runs at most ``threads`` evacuations at once cannot finish before the greedy
schedule that starts the k-th evacuation as soon as fewer than ``threads`` are running: by
induction on k, that schedule starts every evacuation at the earliest time any
``threads``-bounded schedule can (each start is the later of the previous start and the
moment the (k - threads)-th earliest finish frees a slot). Its makespan is the bound.

The engine learns that an instance has moved only by polling Nova every ``verify_interval``
seconds, starting when it asks for the evacuation; ``polled`` rounds each duration up to that
grid. The result is not a lower bound of Nova's work but of an engine that polls as designed,
and it shows how much of the overhead the polling quantum explains.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import random
from collections.abc import Iterable, Sequence


def evacuation_delays(count: int, lo: float, hi: float, seed: int) -> list[float]:
    """The durations the simulator gives its first ``count`` accepted evacuations, for
    ``NovaSimulator(evacuate_delay=(lo, hi), seed=seed)``."""
    rng = random.Random(seed)
    return [rng.uniform(lo, hi) for _ in range(count)]


def makespan(durations: Iterable[float], workers: int) -> float:
    """End of the greedy schedule of ``durations``, in order, on ``workers`` parallel slots."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    free = [0.0] * workers  # when each slot is free again
    end = 0.0
    for d in durations:
        start = heapq.heappop(free)
        heapq.heappush(free, start + d)
        end = max(end, start + d)
    return end


def polled(duration: float, interval: float) -> float:
    """When a poller that checks at 0, interval, 2*interval, … first sees a change that
    happens ``duration`` after it started."""
    if interval <= 0:
        return duration
    # the tolerance keeps an exact multiple (up to float noise) on its own grid point
    return math.ceil(duration / interval - 1e-9) * interval


@dataclasses.dataclass(frozen=True)
class Bound:
    """Seconds; ``total`` is the lower bound, ``with_polling`` the informational one."""

    nova: float  # makespan of the evacuations
    design_wait: float  # the wait the mode imposes before the first evacuation
    nova_polled: float  # makespan with each evacuation rounded up to the polling grid

    @property
    def total(self) -> float:
        return self.design_wait + self.nova

    @property
    def with_polling(self) -> float:
        return self.design_wait + self.nova_polled


def recovery_bound(
    delays: Sequence[float], threads: int, design_wait: float, verify_interval: float
) -> Bound:
    return Bound(
        nova=makespan(delays, threads),
        design_wait=design_wait,
        nova_polled=makespan([polled(d, verify_interval) for d in delays], threads),
    )

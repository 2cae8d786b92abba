"""Ordering groups (``[host_failure]/order_in_groups``): a failed host's evacuations in
batches, one per group, each sent once the previous batch's evacuations have ended (the
instance confirmed on its new host, or its evacuation failed) or after
``[host_failure]/group_start_timeout`` seconds, whichever comes first."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence

from masakari.engine.context import PollTimeout
from masakari.engine.effects import VMoveData
from masakari.engine.recovery.flow import TaskContext

# Seconds between two looks at a group still moving: the next group starts at most this late.
CHECK = 0.1

Batch = tuple[int | None, list[VMoveData]]


def batches(vmoves: Sequence[VMoveData], groups: Mapping[str, int | None] | None) -> list[Batch]:
    """``vmoves`` (in evacuation order, so grouped already) cut where the group changes; a
    single batch when groups are off."""
    if groups is None:
        return [(None, list(vmoves))] if vmoves else []
    cut: list[Batch] = []
    for vmove in vmoves:
        group = groups.get(vmove.instance_uuid)
        if not cut or cut[-1][0] != group:
            cut.append((group, []))
        cut[-1][1].append(vmove)
    return cut


class Pending:
    """The instances of one batch whose evacuation has not ended yet."""

    def __init__(self, instance_uuids: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._left = set(instance_uuids)

    def done(self, instance_uuid: str) -> None:
        with self._lock:
            self._left.discard(instance_uuid)

    def settled(self) -> bool:
        with self._lock:
            return not self._left

    def left(self) -> list[str]:
        with self._lock:
            return sorted(self._left)


def label(group: int | None) -> str:
    return "the instances without a group" if group is None else f"group {group}"


def in_turn(
    ctx: TaskContext, cut: Sequence[Batch], grouped: bool
) -> Iterator[tuple[list[VMoveData], Pending]]:
    """Each batch with the Pending its evacuations must mark done, yielded once the previous
    batch has settled or timed out (said in the progress). Raises what ``run.check`` raises
    while it waits."""
    timeout = ctx.conf.host_failure.group_start_timeout
    previous: tuple[int | None, Pending] | None = None
    for group, batch in cut:
        if previous is not None:
            try:
                ctx.run.poll(previous[1].settled, CHECK, timeout)
            except PollTimeout:
                ctx.update_details(
                    "Ordering {late} not settled after {t} s, still evacuating '{ids}': "
                    "starting {next} anyway".format(
                        late=label(previous[0]),
                        t=timeout,
                        ids=",".join(previous[1].left()),
                        next=label(group),
                    ),
                    0.5,
                )
        pending = Pending(v.instance_uuid for v in batch)
        if grouped:
            ctx.update_details(
                "Starting ordering {group}: '{ids}'".format(
                    group=label(group), ids=",".join(v.instance_uuid for v in batch)
                ),
                0.5,
            )
        yield batch, pending
        previous = (group, pending)

"""Writes recovery_workflow_details as a flow runs: one row per task that reported progress.

What the API shows is what the reference's taskflow storage held: a task appears once it has
reported progress; its state takes taskflow's values; its progress is the last reported
value while it runs and 1.0 once it succeeded or was reverted; each detail carries the
progress as a string and a ``str(datetime)`` timestamp.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from masakari.engine.context import RunContext
from masakari.engine.effects import TaskNote

LOG = logging.getLogger(__name__)

PENDING = "PENDING"
RUNNING = "RUNNING"
SUCCESS = "SUCCESS"
FAILURE = "FAILURE"
REVERTING = "REVERTING"
REVERTED = "REVERTED"

# taskflow moves a task's progress to these values when it enters the state.
_STATE_PROGRESS = {RUNNING: 0.0, SUCCESS: 1.0, REVERTING: 0.0, REVERTED: 1.0}


class FlowProgress:
    """The progress of one flow (one attempt) of one notification."""

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.attempt: int | None = None

    def start(self) -> None:
        """Take the next attempt number; rows come later, when tasks report."""
        self.attempt = self.run.effects.next_attempt()

    def task(self, position: int, name: str) -> TaskProgress:
        return TaskProgress(self, position, name)

    def write(self, task: TaskProgress, detail: dict[str, str] | None) -> None:
        if self.attempt is None:
            self.start()
        assert self.attempt is not None
        self.run.effects.record_task(
            self.attempt, task.position, task.name, task.state, task.progress, detail
        )


class TaskProgress:
    """One task's entry; created in the database by its first ``update``."""

    def __init__(self, flow: FlowProgress, position: int, name: str) -> None:
        self.flow = flow
        self.position = position
        self.name = name
        self.state = PENDING
        self.progress = 0.0
        self.reported = False

    def update(self, message: str, progress: float = 0.0) -> None:
        """The reference's ``update_details``: append a message at a progress value."""
        self.progress = float(progress)
        LOG.info("%s: %s", self.name, message)
        self.flow.write(self, self._detail(message))
        self.reported = True

    def update_with(
        self,
        message: str,
        progress: float,
        write: Callable[[TaskNote], bool],
        state: str | None = None,
    ) -> bool:
        """``update``, written by ``write`` in the transaction of a change of its own; when
        ``write`` says the change was not made, nothing is recorded. ``state``: the task's
        state written with it (a task whose change ends the run under its claim)."""
        if self.flow.attempt is None:
            self.flow.start()
        assert self.flow.attempt is not None
        detail = self._detail(message, progress)
        note = TaskNote(
            self.flow.attempt,
            self.position,
            self.name,
            state or self.state,
            float(progress),
            detail,
        )
        if not write(note):
            return False
        self.state = note.state
        self.progress = float(progress)
        LOG.info("%s: %s", self.name, message)
        self.reported = True
        return True

    def _detail(self, message: str, progress: float | None = None) -> dict[str, str]:
        return {
            "timestamp": str(self.flow.run.clock.now()),
            "message": message,
            "progress": str(float(self.progress if progress is None else progress)),
        }

    def set_state(self, state: str) -> None:
        self.state = state
        if state in _STATE_PROGRESS:
            self.progress = _STATE_PROGRESS[state]
        if self.reported:
            self.flow.write(self, None)

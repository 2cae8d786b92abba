"""Running a flow: a list of tasks, in order, with taskflow's visible states and reverts.

A task is a callable taking a :class:`TaskContext`; it reports with ``update_details`` and
ends by returning (SUCCESS) or raising. On a failure every task that ran is marked REVERTED,
newest first, as taskflow's engine does; the exception then propagates. The reserved-host
flow retries its main tasks once per reserved host, like the reference's
``ParameterizedForEach`` retry, reverting only those tasks between two hosts.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from oslo_config import cfg

from masakari.db.database import Database
from masakari.engine import progress as states
from masakari.engine.context import Cancelled, Nova, RunContext
from masakari.engine.progress import FlowProgress, TaskProgress

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class TaskContext:
    """What a task gets: the run, the flow's shared store, and its own progress entry.

    ``store`` holds the flow's inputs (``host_name``, ``notification_uuid``,
    ``instance_uuid``, ``process_name``, ``reserved_host``) and whatever a task leaves for
    the next ones.
    """

    run: RunContext
    store: dict[str, Any]
    progress: TaskProgress

    @property
    def conf(self) -> cfg.ConfigOpts:
        return self.run.conf

    @property
    def nova(self) -> Nova:
        return self.run.nova

    @property
    def db(self) -> Database:
        return self.run.db

    def update_details(self, message: str, progress: float = 0.0) -> None:
        self.progress.update(message, progress)


class Task(Protocol):
    def __call__(self, ctx: TaskContext) -> None: ...


F = TypeVar("F", bound=Callable[..., Any])


def task(name: str) -> Callable[[F], F]:
    """Give a task the name recovery_workflow_details shows (the reference's class name)."""

    def mark(fn: F) -> F:
        fn.task_name = name  # type: ignore[attr-defined]
        return fn

    return mark


def task_name(fn: object) -> str:
    name = getattr(fn, "task_name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(fn, "__qualname__", None) or type(fn).__name__


@dataclasses.dataclass
class _Step:
    task: Task
    progress: TaskProgress


class Flow:
    """One attempt: its tasks' progress entries, numbered in the configured order."""

    def __init__(
        self, run: RunContext, pre: Sequence[Task], main: Sequence[Task], post: Sequence[Task]
    ) -> None:
        self.run = run
        self.progress = FlowProgress(run)
        steps = [
            _Step(t, self.progress.task(i, task_name(t)))
            for i, t in enumerate([*pre, *main, *post])
        ]
        self.pre = steps[: len(pre)]
        self.main = steps[len(pre) : len(pre) + len(main)]
        self.post = steps[len(pre) + len(main) :]

    def _run_steps(self, steps: Sequence[_Step], store: dict[str, Any], done: list[_Step]) -> None:
        for step in steps:
            self.run.check()
            step.progress.set_state(states.RUNNING)
            done.append(step)
            try:
                step.task(TaskContext(self.run, store, step.progress))
            except Cancelled:
                raise
            except Exception:
                step.progress.set_state(states.FAILURE)
                raise
            step.progress.set_state(states.SUCCESS)

    def _revert(self, done: list[_Step]) -> None:
        for step in reversed(done):
            step.progress.set_state(states.REVERTING)
            step.progress.set_state(states.REVERTED)
        done.clear()

    def run_linear(self, store: dict[str, Any]) -> None:
        """pre, main and post as one linear flow: any failure reverts everything that ran."""
        self.progress.start()
        done: list[_Step] = []
        try:
            self._run_steps([*self.pre, *self.main, *self.post], store, done)
        except Cancelled:
            raise
        except Exception:
            self._revert(done)
            raise

    def run_per_candidate(self, store: dict[str, Any], candidates: Sequence[str]) -> None:
        """The reserved-host flow: main is retried with each candidate until one succeeds.

        When every candidate failed, only main is reverted (pre stays SUCCESS, as with
        taskflow's retry controller) and the last failure propagates.
        """
        self.progress.start()
        done: list[_Step] = []
        try:
            self._run_steps(self.pre, store, done)
        except Cancelled:
            raise
        except Exception:
            self._revert(done)
            raise
        last: Exception | None = None
        for candidate in candidates:
            store["reserved_host"] = candidate
            main_done: list[_Step] = []
            try:
                self._run_steps(self.main, store, main_done)
            except Cancelled:
                raise
            except Exception as exc:
                LOG.warning(
                    "Recovery of notification %s with reserved host %s failed: %s",
                    self.run.notification_uuid,
                    candidate,
                    exc,
                )
                last = exc
                self._revert(main_done)
                continue
            done.extend(main_done)
            last = None
            break
        if last is not None:
            raise last
        try:
            self._run_steps(self.post, store, done)
        except Cancelled:
            raise
        except Exception:
            self._revert(done)
            raise

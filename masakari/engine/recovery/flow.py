"""Running a flow: a list of tasks, in order, with taskflow's visible states and reverts.

A task is a callable taking a :class:`TaskContext`; it reports with ``update_details`` and
ends by returning (SUCCESS) or raising. On a failure every task that ran is marked REVERTED,
newest first, as taskflow's engine does; the exception then propagates. The reserved-host
flow retries its main tasks once per reserved host, like the reference's
``ParameterizedForEach`` retry, reverting only those tasks between two hosts.
:func:`run_flow` turns how a flow ended into the notification's status.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from oslo_config import cfg

from masakari import exception
from masakari.db import statuses
from masakari.engine import progress as states
from masakari.engine.context import Cancelled, NovaReads, RunContext
from masakari.engine.effects import Effects
from masakari.engine.progress import FlowProgress, TaskProgress
from masakari.engine.selection import Selection

LOG = logging.getLogger(__name__)

T = TypeVar("T")


@dataclasses.dataclass
class Store:
    """A flow's inputs, and what its tasks leave for the next ones.

    ``notification_uuid`` always; ``host_name`` and ``host_status`` in host flows,
    ``reserved_host`` in the main stage of the reserved-host flow, ``instance_uuid`` in the
    VM flow, ``process_name`` and ``host_name`` in the process flow. ``vmove_ids`` and
    ``ha_instance_ids`` are what the prepare task hands to the evacuation task, with the
    ``selection`` they come from (masakari.engine.selection: its order is the evacuation
    order); ``host_fenced`` says host fencing proved the host dead (or an operator said
    so by releasing its hold): the service is then forced down without the wait.
    ``extra`` is for third-party tasks.
    """

    notification_uuid: str
    host_name: str | None = None
    host_status: str | None = None
    instance_uuid: str | None = None
    process_name: str | None = None
    reserved_host: str | None = None
    vmove_ids: list[int] | None = None
    ha_instance_ids: set[str] | None = None
    selection: Selection | None = None
    host_fenced: bool = False
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


def required(value: T | None, name: str) -> T:
    """A store value the task cannot run without: missing from the notification's payload,
    or the task was configured in a flow of another notification type."""
    if value is None:
        raise exception.InvalidConfiguration(
            message=f"No {name} for this task: the notification's payload has none, or the "
            "task is configured in a flow that does not give it"
        )
    return value


@dataclasses.dataclass
class TaskContext:
    """What a task gets: the run, the flow's shared store, and its own progress entry."""

    run: RunContext
    store: Store
    progress: TaskProgress

    @property
    def conf(self) -> cfg.ConfigOpts:
        return self.run.conf

    @property
    def nova(self) -> NovaReads:
        return self.run.nova

    @property
    def effects(self) -> Effects:
        return self.run.effects

    def update_details(self, message: str, progress: float = 0.0) -> None:
        self.progress.update(message, progress)


class Task(Protocol):
    def __call__(self, ctx: TaskContext) -> None: ...


Stages = dict[str, list[Task]]


@dataclasses.dataclass(frozen=True)
class FlowTasks:
    """The configured task lists, resolved: {'pre': [...], 'main': [...], 'post': [...]}."""

    host_auto: Stages
    host_rh: Stages
    instance: Stages
    process: Stages


def run_flow(run: RunContext, body: Callable[[], None]) -> str:
    """Run a recovery's flow(s) and say the status it ends with.

    A skip ends ``finished``, an ignored instance ``ignored``, any other failure ``error``;
    Cancelled propagates: the run stops without an outcome.
    """
    try:
        body()
    except exception.SkipRecovery:
        return statuses.FINISHED
    except exception.IgnoreInstanceRecovery:
        return statuses.IGNORED
    except Cancelled:
        raise
    except Exception as exc:
        LOG.error("Failed to process notification '%s'. Reason: %s", run.notification_uuid, exc)
        run.effects.record_failure(failure_reason(exc))
        run.failure = exc
        return statuses.ERROR
    return statuses.FINISHED


def failure_reason(exc: BaseException) -> str:
    """What an operator reads as failure_reason: the error's text, or its kind when empty."""
    text = exc.format_message() if isinstance(exc, exception.MasakariError) else str(exc)
    return text or type(exc).__name__


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

    def _run_steps(self, steps: Sequence[_Step], store: Store, done: list[_Step]) -> None:
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

    def run_linear(self, store: Store) -> None:
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

    def run_per_candidate(self, store: Store, candidates: Sequence[str]) -> None:
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
            store.reserved_host = candidate
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

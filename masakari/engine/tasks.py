"""Task name → task: the reference's nine names, and third-party tasks by entry point.

The lists of [taskflow_driver_recovery_flows] name tasks as the reference does. A name that
is not built in is loaded from the ``masakari.task_flow.tasks`` entry-point namespace; the
object found there is a task (see docs/engine.md): a callable taking a
:class:`~masakari.engine.recovery.flow.TaskContext`, or a class whose instances are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import exception
from masakari.engine.recovery import evacuate, host, instance, prepare, process
from masakari.engine.recovery.flow import FlowTasks, Stages, Task, TaskContext, task, task_name

LOG = logging.getLogger(__name__)

NAMESPACE = "masakari.task_flow.tasks"
STAGES = ("pre", "main", "post")

__all__ = ["FlowTasks", "Task", "TaskContext", "load_flows", "resolve", "task", "task_name"]


@task("Noop")
def no_op(ctx: TaskContext) -> None:
    """Does nothing and reports nothing, so it never shows in the progress details."""
    LOG.info("Custom task executed successfully..!!")


disable_compute_service_task = host.disable_compute_service
prepare_HA_enabled_instances_task = prepare.prepare_ha_enabled_instances  # noqa: N816
evacuate_instances_task = evacuate.evacuate_instances
stop_instance_task = instance.stop_instance
start_instance_task = instance.start_instance
confirm_instance_active_task = instance.confirm_instance_active
disable_compute_node_task = process.disable_compute_node
confirm_compute_node_disabled_task = process.confirm_compute_node_disabled

BUILTIN: dict[str, Task] = {
    "disable_compute_service_task": disable_compute_service_task,
    "prepare_HA_enabled_instances_task": prepare_HA_enabled_instances_task,
    "evacuate_instances_task": evacuate_instances_task,
    "stop_instance_task": stop_instance_task,
    "start_instance_task": start_instance_task,
    "confirm_instance_active_task": confirm_instance_active_task,
    "disable_compute_node_task": disable_compute_node_task,
    "confirm_compute_node_disabled_task": confirm_compute_node_disabled_task,
    "no_op": no_op,
}


def _entry_point(name: str) -> Any:
    from stevedore import driver  # imported on demand: start-up cost only when used

    try:
        return driver.DriverManager(NAMESPACE, name, invoke_on_load=False).driver
    except Exception as exc:
        raise exception.InvalidConfiguration(
            message=f"Unknown recovery task {name!r}: not built in and not found in the "
            f"{NAMESPACE!r} entry points ({exc})"
        ) from exc


def resolve(name: str, loader: Callable[[str], Any] = _entry_point) -> Task:
    """The task registered under a name; a class is instantiated once, without arguments."""
    if name in BUILTIN:
        return BUILTIN[name]
    found = loader(name)
    if isinstance(found, type):
        found = found()
    if not callable(found):
        raise exception.InvalidConfiguration(
            message=f"Recovery task {name!r} ({found!r}) is not callable"
        )
    return found  # type: ignore[no-any-return]


def _resolve_lists(
    option: str, lists: dict[str, list[str]], loader: Callable[[str], Any]
) -> Stages:
    unknown = set(lists) - set(STAGES)
    if unknown:
        raise exception.InvalidConfiguration(
            message=f"[taskflow_driver_recovery_flows]/{option}: unknown stage(s) "
            f"{', '.join(sorted(unknown))}; use {', '.join(STAGES)}"
        )
    return {stage: [resolve(n, loader) for n in lists.get(stage) or []] for stage in STAGES}


def load_flows(conf: cfg.ConfigOpts, loader: Callable[[str], Any] = _entry_point) -> FlowTasks:
    """Resolve every configured task list at start-up: a bad name stops the engine early."""
    group = conf.taskflow_driver_recovery_flows
    return FlowTasks(
        host_auto=_resolve_lists(
            "host_auto_failure_recovery_tasks", group.host_auto_failure_recovery_tasks, loader
        ),
        host_rh=_resolve_lists(
            "host_rh_failure_recovery_tasks", group.host_rh_failure_recovery_tasks, loader
        ),
        instance=_resolve_lists(
            "instance_failure_recovery_tasks", group.instance_failure_recovery_tasks, loader
        ),
        process=_resolve_lists(
            "process_failure_recovery_tasks", group.process_failure_recovery_tasks, loader
        ),
    )

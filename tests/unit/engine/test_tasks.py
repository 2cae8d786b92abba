"""The task registry: the reference's names, entry points, start-up errors."""

from __future__ import annotations

import pytest

from masakari import exception
from masakari.engine import tasks
from masakari.engine.recovery.flow import task_name
from tests.support.runs import make_conf

REFERENCE_NAMES = {
    "disable_compute_service_task": "DisableComputeServiceTask",
    "prepare_HA_enabled_instances_task": "PrepareHAEnabledInstancesTask",
    "evacuate_instances_task": "EvacuateInstancesTask",
    "stop_instance_task": "StopInstanceTask",
    "start_instance_task": "StartInstanceTask",
    "confirm_instance_active_task": "ConfirmInstanceActiveTask",
    "disable_compute_node_task": "DisableComputeNodeTask",
    "confirm_compute_node_disabled_task": "ConfirmComputeNodeDisabledTask",
}


def test_builtin_names_show_the_reference_class_names():
    for name, shown in REFERENCE_NAMES.items():
        assert task_name(tasks.resolve(name)) == shown
        assert getattr(tasks, name) is tasks.resolve(name)
    assert set(tasks.BUILTIN) == {*REFERENCE_NAMES, "no_op"}


def test_entry_points_name_the_module_attributes():
    from importlib import metadata

    eps = {ep.name: ep for ep in metadata.entry_points(group=tasks.NAMESPACE)}
    for name in tasks.BUILTIN:
        assert eps[name].load() is tasks.BUILTIN[name]


def test_default_flows():
    flows = tasks.load_flows(make_conf())
    assert [task_name(t) for t in flows.host_rh["main"]] == [
        "PrepareHAEnabledInstancesTask",
        "EvacuateInstancesTask",
    ]
    assert flows.process["post"] == []


def test_unknown_task_is_a_start_up_error():
    conf = make_conf(
        **{
            "taskflow_driver_recovery_flows.process_failure_recovery_tasks": {
                "pre": ["no_such_task"],
                "main": [],
                "post": [],
            }
        }
    )
    with pytest.raises(exception.InvalidConfiguration, match="no_such_task"):
        tasks.load_flows(conf)


def test_unknown_stage_is_a_start_up_error():
    conf = make_conf(
        **{"taskflow_driver_recovery_flows.process_failure_recovery_tasks": {"during": []}}
    )
    with pytest.raises(exception.InvalidConfiguration, match="during"):
        tasks.load_flows(conf)


def test_third_party_task_class_is_instantiated_once():
    class Custom:
        task_name = "CustomTask"

        def __call__(self, ctx):
            pass

    found = tasks.resolve("custom", loader=lambda name: Custom)
    assert isinstance(found, Custom) and task_name(found) == "CustomTask"
    with pytest.raises(exception.InvalidConfiguration):
        tasks.resolve("bad", loader=lambda name: 42)

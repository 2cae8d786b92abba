"""Recovery options: [host_failure], [instance_failure], [process_failure] and the task lists."""

from __future__ import annotations

from oslo_config import cfg, types

from masakari.conf._text import paragraphs

HOST_GROUP = cfg.OptGroup(
    "host_failure",
    title="Host failure recovery options",
    help="How instances are recovered when a compute host fails.",
)
INSTANCE_GROUP = cfg.OptGroup(
    "instance_failure",
    title="Instance failure recovery options",
    help="How an instance is recovered when it fails on its host.",
)
PROCESS_GROUP = cfg.OptGroup(
    "process_failure",
    title="Process failure recovery options",
    help="What is done when a monitored process fails on a compute host.",
)
FLOWS_GROUP = cfg.OptGroup(
    "taskflow_driver_recovery_flows",
    title="Recovery workflow options",
    help="The tasks each recovery workflow runs, by phase.",
)

HOST_OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "evacuate_all_instances",
        default=True,
        help=paragraphs(
            """
True: evacuate every instance of the failed host, those whose metadata key
``[host_failure]/ha_enabled_instance_metadata_key`` is true counting as HA
instances. False: evacuate only the HA instances.
"""
        ),
    ),
    cfg.StrOpt(
        "ha_enabled_instance_metadata_key",
        default="HA_Enabled",
        help=paragraphs(
            """
Instance metadata key that marks an instance as HA-enabled for host recovery.
Its value is read as a boolean string (``True``, ``yes``, ``1``...).
"""
        ),
    ),
    cfg.BoolOpt(
        "ignore_instances_in_error_state",
        default=False,
        help="Leave instances in ERROR state on the failed host instead of evacuating them.",
    ),
    cfg.BoolOpt(
        "add_reserved_host_to_aggregate",
        default=False,
        help=paragraphs(
            """
With the reserved_host recovery methods, add the chosen reserved host to every
host aggregate the failed host belongs to before evacuating to it.
"""
        ),
    ),
    cfg.StrOpt(
        "service_disable_reason",
        default="Masakari detected host failed.",
        help="Reason given to Nova when disabling the compute service of a failed host.",
    ),
    # Option of this project only.
    cfg.BoolOpt(
        "force_down_fenced_host",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Faster host recovery. Instead of sleeping
``[DEFAULT]/wait_period_after_service_update`` after disabling the compute
service, mark it forced_down in Nova and evacuate at once. Applied only when
the notification's payload says ``host_status: NORMAL``, that is when the
monitor confirmed the host is powered off.

WARNING: forcing down a compute service whose host still runs its instances
lets Nova start a second copy of each instance elsewhere, and both copies then
write to the same disks, corrupting them. Enable this only with monitors that
fence (power off) the host before reporting it.
"""
        ),
    ),
    cfg.BoolOpt(
        "retry_only_while_host_down",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Before the periodic retry
(``process_unfinished_notifications_interval``) runs a host failure recovery
again that ended in ``error``, read the host's nova-compute service in Nova. A
host that is back (its nova-compute heartbeated after the previous attempt
ended, and Nova counts it up or it is forced down) is not recovered again: no
disable, fence or evacuation; the notification ends ``failed`` with the reason
in its recovery_workflow_details (task CheckHostDownTask) and failure_reason.
The host's nova-compute stays as the earlier attempt left it (disabled) and the
host on maintenance, for an operator to check and return. A host still down is
retried as before. False: the retry runs whatever the host's state, as in
masakari 22.0.0 (Nova refuses the evacuations of a host whose nova-compute is
up, and the retry disables a host that works).
"""
        ),
    ),
    cfg.BoolOpt(
        "order_by_priority",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Evacuate in priority order: HA-enabled instances first
as always, and inside each of the two groups the instances whose metadata key
``[host_failure]/priority_instance_metadata_key`` holds an integer, higher
first, before those without one. False keeps the reference's order.
"""
        ),
    ),
    cfg.StrOpt(
        "priority_instance_metadata_key",
        default="HA_Priority",
        help=paragraphs(
            """
(masakari rewrite only) Instance metadata key holding an instance's restart
priority (an integer, higher first), read when
``[host_failure]/order_by_priority`` is true and by recovery plans.
"""
        ),
    ),
    cfg.StrOpt(
        "ordering_metadata_source",
        default="instance",
        choices=("instance", "flavor"),
        help=paragraphs(
            """
(masakari rewrite only) Where the ordering keys
(``[host_failure]/priority_instance_metadata_key`` and
``[host_failure]/group_instance_metadata_key``) are read: ``instance``, the
server's metadata, which its project's users may set (they can then put their
instances ahead of other projects' ones); ``flavor``, the extra specs of the
server's flavor as Nova embeds it (compute API 2.47 and later), which only the
operator sets.
"""
        ),
    ),
    cfg.BoolOpt(
        "capacity_aware_targets",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Check free capacity in Placement before evacuating.
The reserved_host methods try first the reserved hosts that can hold all the
instances; an evacuation is never sent to a target Placement says is full:
what does not fit is recorded as failed with the reason, and a progress
message says so before the first evacuation. False evacuates as the
reference does.
"""
        ),
    ),
    cfg.BoolOpt(
        "order_in_groups",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Evacuate in ordering groups: the instances whose
metadata key ``[host_failure]/group_instance_metadata_key`` holds an integer
form one group per number, lower numbers first, and the instances without one
a last group. A group's evacuations are sent only once every evacuation of the
previous group has ended (the instance runs again elsewhere, or its evacuation
failed), or after ``[host_failure]/group_start_timeout`` seconds. Inside a
group the usual order applies (HA-enabled first, then priorities). False keeps
the reference's order.
"""
        ),
    ),
    cfg.StrOpt(
        "group_instance_metadata_key",
        default="HA_Group",
        help=paragraphs(
            """
(masakari rewrite only) Instance metadata key holding an instance's ordering
group (an integer, lower groups first), read when
``[host_failure]/order_in_groups`` is true and by recovery plans.
"""
        ),
    ),
    cfg.IntOpt(
        "group_start_timeout",
        default=600,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Longest wait, in seconds, for an ordering group's
evacuations to end before the next group starts anyway (the progress says
which instances were still moving). The late evacuations go on.
"""
        ),
    ),
]

INSTANCE_OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "process_all_instances",
        default=False,
        help=paragraphs(
            """
True: recover any failed instance. False: recover only instances whose
metadata key ``[instance_failure]/ha_enabled_instance_metadata_key`` is true.
"""
        ),
    ),
    cfg.StrOpt(
        "ha_enabled_instance_metadata_key",
        default="HA_Enabled",
        help=paragraphs(
            """
Instance metadata key that marks an instance as HA-enabled for instance
recovery. It may differ from the key used by host recovery.
"""
        ),
    ),
]

PROCESS_OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "service_disable_reason",
        default="Masakari detected process failed.",
        help="Reason given to Nova when disabling a compute service after a process failure.",
    ),
]


def task_lists_type() -> types.Dict:
    """The type of a recovery flow: phase name -> list of task names.

    The syntax is ``pre:[a, b],main:[c],post:[]``: the list brackets are
    required and task names may be quoted. Any phase name is accepted.
    """
    return types.Dict(
        bounds=False,
        value_type=types.List(bounds=True, item_type=types.String(quotes=True)),
    )


_TASK_HELP = """
Tasks of the {what} workflow, as ``pre:[...],main:[...],post:[...]``. Each
name is an entry point of the ``masakari.task_flow.tasks`` namespace, so
deployers and third parties can plug in their own tasks. Default: {tasks}.
"""


def _task_help(what: str, tasks: str) -> str:
    return paragraphs(_TASK_HELP.format(what=what, tasks=tasks))


FLOW_OPTS: list[cfg.Opt] = [
    cfg.Opt(
        "host_auto_failure_recovery_tasks",
        type=task_lists_type(),
        default={
            "pre": ["disable_compute_service_task"],
            "main": ["prepare_HA_enabled_instances_task"],
            "post": ["evacuate_instances_task"],
        },
        help=_task_help(
            what="host failure recovery (``auto`` method)",
            tasks="disable_compute_service_task, prepare_HA_enabled_instances_task, "
            "evacuate_instances_task",
        ),
    ),
    cfg.Opt(
        "host_rh_failure_recovery_tasks",
        type=task_lists_type(),
        default={
            "pre": ["disable_compute_service_task"],
            "main": ["prepare_HA_enabled_instances_task", "evacuate_instances_task"],
            "post": [],
        },
        help=_task_help(
            what="host failure recovery (``reserved_host`` method)",
            tasks="disable_compute_service_task, prepare_HA_enabled_instances_task, "
            "evacuate_instances_task",
        ),
    ),
    cfg.Opt(
        "instance_failure_recovery_tasks",
        type=task_lists_type(),
        default={
            "pre": ["stop_instance_task"],
            "main": ["start_instance_task"],
            "post": ["confirm_instance_active_task"],
        },
        help=_task_help(
            what="instance failure recovery",
            tasks="stop_instance_task, start_instance_task, confirm_instance_active_task",
        ),
    ),
    cfg.Opt(
        "process_failure_recovery_tasks",
        type=task_lists_type(),
        default={
            "pre": ["disable_compute_node_task"],
            "main": ["confirm_compute_node_disabled_task"],
            "post": [],
        },
        help=_task_help(
            what="process failure recovery",
            tasks="disable_compute_node_task, confirm_compute_node_disabled_task",
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    # The flows have their own generator namespace, as in the reference: see opts.py.
    return [
        (INSTANCE_GROUP, INSTANCE_OPTS),
        (HOST_GROUP, HOST_OPTS),
        (PROCESS_GROUP, PROCESS_OPTS),
    ]


def list_flow_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(FLOWS_GROUP, FLOW_OPTS)]

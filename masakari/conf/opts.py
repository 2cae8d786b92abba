"""The option lists behind the oslo.config.opts entry points, one per generator namespace."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf import (
    api,
    base,
    capacity,
    coordination,
    database,
    detection,
    drill,
    engine,
    engine_driver,
    fencing,
    guards,
    host_return,
    metrics,
    nova,
    osapi_v1,
    paths,
    quarantine,
    scope,
    service,
    ssl,
    wsgi,
)

GroupOpts = list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]

# Order of the groups in the sample file, as in the reference's.
_MODULES = (
    api,
    base,
    capacity,
    coordination,
    database,
    detection,
    drill,
    engine,
    engine_driver,
    fencing,
    guards,
    host_return,
    metrics,
    nova,
    osapi_v1,
    paths,
    quarantine,
    scope,
    service,
    ssl,
    wsgi,
)


def list_opts() -> GroupOpts:
    """Namespace ``masakari.conf``: every project option but the recovery flows."""
    merged: dict[str, tuple[str | cfg.OptGroup, list[cfg.Opt]]] = {}
    # Several modules add to [DEFAULT]; the generator wants each group once.
    for module in _MODULES:
        for group, opts in module.list_opts():
            name = group.name if isinstance(group, cfg.OptGroup) else group
            merged.setdefault(name, (group, []))[1].extend(opts)
    return list(merged.values())


def list_recovery_workflow_opts() -> GroupOpts:
    """Namespace ``customized_recovery_flow_opts``: [taskflow_driver_recovery_flows]."""
    return engine_driver.list_flow_opts()

"""Options as the tests read them: one by its group and name, and the recovery flows' group."""

from __future__ import annotations

from typing import Any

from oslo_config import cfg

FLOWS = "taskflow_driver_recovery_flows"


def option_value(conf: cfg.ConfigOpts, group: str, name: str) -> Any:
    return getattr(conf, name) if group == "DEFAULT" else getattr(getattr(conf, group), name)

"""Default policy rules, one module per API resource."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import (
    base,
    drills,
    extension_info,
    hosts,
    notifications,
    quarantines,
    segments,
    versions,
    vmoves,
)

# Order of the sample policy file, as in the reference's.
_MODULES = (
    base,
    extension_info,
    hosts,
    notifications,
    segments,
    versions,
    vmoves,
    drills,
    quarantines,
)


def list_rules() -> list[policy.RuleDefault]:
    """Every default rule: the ``oslo.policy.policies`` entry point ``masakari``."""
    return [rule for module in _MODULES for rule in module.list_rules()]

"""Rules of the VM move API (instances moved by a host recovery)."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":vmoves:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
DISCOVERABLE = _NAME % "discoverable"

_VMOVES = "/notifications/{notification_id}/vmoves"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List the instance moves of a host failure notification.",
        operations=[{"method": "GET", "path": _VMOVES}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one instance move.",
        operations=[{"method": "GET", "path": _VMOVES + "/{vmove_id}"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the vmoves extension is listed by the extensions API.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

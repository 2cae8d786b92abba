"""Rules of the extensions API."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":extensions:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
DISCOVERABLE = _NAME % "discoverable"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List the API extensions.",
        operations=[{"method": "GET", "path": "/extensions"}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one API extension.",
        operations=[{"method": "GET", "path": "/extensions/{extensions_id}"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the extensions API lists itself.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

"""Rules of the failover segment API."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":segments:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
CREATE = _NAME % "create"
UPDATE = _NAME % "update"
DELETE = _NAME % "delete"
DISCOVERABLE = _NAME % "discoverable"
# masakari rewrite only (API 1.5)
READINESS = _NAME % "readiness"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List failover segments.",
        operations=[{"method": "GET", "path": "/segments"}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one failover segment.",
        operations=[{"method": "GET", "path": "/segments/{segment_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="Create a failover segment.",
        operations=[{"method": "POST", "path": "/segments"}],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.RULE_ADMIN_API,
        description="Change the editable fields of a failover segment.",
        operations=[{"method": "PUT", "path": "/segments/{segment_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.RULE_ADMIN_API,
        description="Delete a failover segment.",
        operations=[{"method": "DELETE", "path": "/segments/{segment_id}"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the segments extension is listed by the extensions API.",
    ),
    policy.DocumentedRuleDefault(
        name=READINESS,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Run the readiness checks of a failover segment "
        "(microversion 1.5).",
        operations=[{"method": "GET", "path": "/segments/{segment_id}/readiness"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

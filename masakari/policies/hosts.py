"""Rules of the host API (hosts inside a failover segment)."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":os-hosts:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
CREATE = _NAME % "create"
UPDATE = _NAME % "update"
DELETE = _NAME % "delete"
DISCOVERABLE = _NAME % "discoverable"
# masakari rewrite only (API 1.5)
RECOVERY_PLAN = _NAME % "recovery_plan"

_HOSTS = "/segments/{segment_id}/hosts"
_HOST = _HOSTS + "/{host_id}"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List the hosts of a failover segment.",
        operations=[{"method": "GET", "path": _HOSTS}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one host.",
        operations=[{"method": "GET", "path": _HOST}],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="Add a host to a failover segment.",
        operations=[{"method": "POST", "path": _HOSTS}],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.RULE_ADMIN_API,
        description="Change the editable fields of a host.",
        operations=[{"method": "PUT", "path": _HOST}],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.RULE_ADMIN_API,
        description="Remove a host from its failover segment.",
        operations=[{"method": "DELETE", "path": _HOST}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the hosts extension is listed by the extensions API.",
    ),
    policy.DocumentedRuleDefault(
        name=RECOVERY_PLAN,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Show what recovering a host would do now "
        "(microversion 1.5).",
        operations=[{"method": "GET", "path": _HOST + "/recovery_plan"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

"""Rules of the notification API."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":notifications:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
CREATE = _NAME % "create"
DISCOVERABLE = _NAME % "discoverable"
RELEASE = _NAME % "release"
CANCEL = _NAME % "cancel"
FENCING = _NAME % "fencing"
EVIDENCE = _NAME % "evidence"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List notifications.",
        operations=[{"method": "GET", "path": "/notifications"}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one notification, with its recovery progress from microversion 1.1.",
        operations=[{"method": "GET", "path": "/notifications/{notification_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="Report a failure: what the masakari monitors call.",
        operations=[{"method": "POST", "path": "/notifications"}],
    ),
    policy.DocumentedRuleDefault(
        name=RELEASE,
        check_str=base.RULE_ADMIN_API,
        description="Release a held notification for recovery (microversion 1.4).",
        operations=[{"method": "POST", "path": "/notifications/{notification_id}/action"}],
    ),
    policy.DocumentedRuleDefault(
        name=CANCEL,
        check_str=base.RULE_ADMIN_API,
        description="Cancel a held notification: nothing is recovered (microversion 1.4).",
        operations=[{"method": "POST", "path": "/notifications/{notification_id}/action"}],
    ),
    # Not operations of their own: whether notification show includes a field. Both hold
    # what a project's members should not read (BMC addresses, agent errors, monitors'
    # signals) even when a policy file opens the notification rules to them.
    policy.DocumentedRuleDefault(
        name=FENCING,
        check_str=base.RULE_ADMIN_API,
        description="See the host fencing attempts (field fencing) in notification show "
        "(microversion 1.6); without it the field is left out.",
        operations=[{"method": "GET", "path": "/notifications/{notification_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=EVIDENCE,
        check_str=base.RULE_ADMIN_API,
        description="See the evidence of a host failure (field evidence) in notification show "
        "(microversion 1.7); without it the field is left out.",
        operations=[{"method": "GET", "path": "/notifications/{notification_id}"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the notifications extension is listed by the extensions API.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

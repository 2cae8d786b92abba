"""Rules of the quarantine API (masakari rewrite only, microversion 1.10)."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":quarantines:%s"

CREATE = _NAME % "create"
INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
START = _NAME % "start"
CANCEL = _NAME % "cancel"
RELEASE = _NAME % "release"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Quarantine a host: disable it in Nova and "
        "live-migrate its instances away (microversion 1.10).",
        operations=[
            {"method": "POST", "path": "/segments/{segment_id}/hosts/{host_id}/quarantine"}
        ],
    ),
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) List quarantines (microversion 1.10).",
        operations=[{"method": "GET", "path": "/quarantines"}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Show a quarantine and its instances "
        "(microversion 1.10).",
        operations=[{"method": "GET", "path": "/quarantines/{quarantine_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=START,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Start a quarantine its segment's limit held "
        "(microversion 1.10).",
        operations=[{"method": "POST", "path": "/quarantines/{quarantine_id}/action"}],
    ),
    policy.DocumentedRuleDefault(
        name=CANCEL,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Cancel a quarantine (microversion 1.10).",
        operations=[{"method": "POST", "path": "/quarantines/{quarantine_id}/action"}],
    ),
    policy.DocumentedRuleDefault(
        name=RELEASE,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Return a quarantined host to service "
        "(microversion 1.10).",
        operations=[{"method": "POST", "path": "/quarantines/{quarantine_id}/action"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

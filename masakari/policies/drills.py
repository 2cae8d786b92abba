"""Rules of the fire drill API (masakari rewrite only, microversion 1.9)."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":segments:drill:%s"

CREATE = _NAME % "create"
INDEX = _NAME % "index"
SHOW = _NAME % "show"

_PATH = "/segments/{segment_id}/drills"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Start a fire drill on a host of the segment: it "
        "is fenced, disabled and evacuated for real, then restored (microversion 1.9).",
        operations=[{"method": "POST", "path": _PATH}],
    ),
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) List the fire drills of a segment (1.9).",
        operations=[{"method": "GET", "path": _PATH}],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.RULE_ADMIN_API,
        description="(masakari rewrite only) Show one fire drill with its phases and report (1.9).",
        operations=[{"method": "GET", "path": _PATH + "/{drill_id}"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

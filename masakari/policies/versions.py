"""Rules of the version document, open to anyone."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":versions:%s"

INDEX = _NAME % "index"
DISCOVERABLE = _NAME % "discoverable"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ANY,
        description="List the API versions.",
        operations=[{"method": "GET", "path": "/"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ANY,
        description="Whether the versions extension is listed by the extensions API.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

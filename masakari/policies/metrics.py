"""Rule of GET /metrics (served only when [metrics] enabled is set)."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

SHOW = base.PREFIX + ":metrics"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.RULE_ADMIN_API,
        description="Read the Prometheus metrics (masakari rewrite only).",
        operations=[{"method": "GET", "path": "/metrics"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

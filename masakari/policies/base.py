"""Base rules that every API rule refers to."""

from __future__ import annotations

from oslo_policy import policy

PREFIX = "os_masakari_api"

CONTEXT_IS_ADMIN = "context_is_admin"
ADMIN_OR_OWNER = "admin_or_owner"
ADMIN_API = "admin_api"

RULE_ADMIN_OR_OWNER = "rule:" + ADMIN_OR_OWNER
RULE_ADMIN_API = "rule:" + ADMIN_API
RULE_ANY = "@"

RULES: list[policy.RuleDefault] = [
    policy.RuleDefault(
        CONTEXT_IS_ADMIN,
        "role:admin",
        description="Who is an administrator: what the ``is_admin:True`` check tests.",
    ),
    policy.RuleDefault(
        ADMIN_OR_OWNER,
        "is_admin:True or project_id:%(project_id)s",
        description="An administrator, or a member of the project that owns the target.",
    ),
    policy.RuleDefault(
        ADMIN_API,
        "is_admin:True",
        description="An administrator: the default of every masakari API rule.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES

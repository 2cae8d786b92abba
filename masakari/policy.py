"""Policy enforcement: an oslo.policy Enforcer built from a ConfigOpts, and authorize()."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from oslo_config import cfg
from oslo_policy import _checks, policy

from masakari import conf as masakari_conf
from masakari import exception, policies
from masakari.policies import base

LOG = logging.getLogger(__name__)


class IsAdminCheck(policy.Check):
    """``is_admin:True``: compares the credentials' is_admin flag with the match."""

    def __init__(self, kind: str, match: str) -> None:
        self.expected = match.lower() == "true"
        super().__init__(kind, str(self.expected))

    def __call__(
        self,
        target: Mapping[str, Any],
        creds: MutableMapping[str, Any],
        enforcer: Any,
        current_rule: str | None = None,
    ) -> bool:
        return bool(creds.get("is_admin")) == self.expected


def _register_checks() -> None:
    # oslo.policy keeps check kinds in a process-wide table; registering the
    # same class again is harmless.
    policy.register("is_admin", IsAdminCheck)


# How often, at most, the policy files are looked for and their modification times checked.
# oslo.policy does it on every check, two per API request: about ten stat() calls each, a
# tenth of a small GET's time. An edited file still takes effect within this delay.
RECHECK_SECONDS = 1.0


# Check kinds whose answer depends only on the rule, the target and the credentials. A rule
# built from anything else (http: asks a server) is evaluated every time.
_PURE_CHECKS: tuple[type, ...] = (
    _checks.AndCheck,
    _checks.OrCheck,
    _checks.NotCheck,
    _checks.RuleCheck,
    _checks.RoleCheck,
    _checks.GenericCheck,
    _checks.TrueCheck,
    _checks.FalseCheck,
    IsAdminCheck,
)
# Distinct (rule, target, credentials) answers kept; a full table is emptied, not evicted:
# a worker sees few distinct callers, and a refill costs one oslo.policy check each.
DECISIONS_KEPT = 4096


def _pure(check: Any) -> bool:
    if type(check) not in _PURE_CHECKS:
        return False
    children = getattr(check, "rules", None) or [getattr(check, "rule", None)]
    return all(_pure(child) for child in children if isinstance(child, _checks.BaseCheck))


def _frozen(value: Any) -> Any:
    """A hashable copy of a JSON-like value (credentials hold role lists)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_frozen(v) for v in value)
    return value


class Enforcer(policy.Enforcer):  # type: ignore[misc]
    """oslo.policy's Enforcer, looking at the policy files at most every RECHECK_SECONDS and
    remembering its answers until the rules change.

    oslo.policy evaluates a rule from scratch on every call (inspecting each check's
    signature as it goes): two checks per API request cost more than the request's query.
    An answer is a function of the rule, the target and the credentials while the rules
    stay the same, so it is kept until they change (a reload, set_rules, clear).
    """

    recheck_seconds = RECHECK_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._decisions: dict[Any, bool] = {}
        self._memo_ok: bool | None = None
        super().__init__(*args, **kwargs)
        self._next_check = 0.0

    def _forget(self) -> None:
        self._decisions = {}
        self._memo_ok = None

    def load_rules(self, force_reload: bool = False) -> None:
        now = time.monotonic()
        if force_reload or not self.rules or now >= self._next_check:
            before = dict(self.rules)
            super().load_rules(force_reload)
            self._next_check = now + self.recheck_seconds
            if dict(self.rules) != before:
                self._forget()

    def set_rules(self, *args: Any, **kwargs: Any) -> None:
        super().set_rules(*args, **kwargs)
        self._forget()

    def clear(self) -> None:
        super().clear()
        self._next_check = 0.0
        self._forget()

    def decide(self, rule: str, target: Mapping[str, Any], creds: Mapping[str, Any]) -> bool:
        """``authorize(rule, target, creds)`` without raising, remembered while the rules
        are unchanged and made only of checks that consult nothing else."""
        self.load_rules()
        if self._memo_ok is None:
            self._memo_ok = all(_pure(check) for check in self.rules.values())
        if not self._memo_ok:
            return bool(self.authorize(rule, dict(target), dict(creds)))
        key = (rule, _frozen(target), _frozen(creds))
        answer = self._decisions.get(key)
        if answer is None:
            # oslo.policy raises for an unregistered rule or a scope it refuses: those
            # calls are not remembered and raise again next time.
            answer = bool(self.authorize(rule, dict(target), dict(creds)))
            if len(self._decisions) >= DECISIONS_KEPT:
                self._decisions = {}
            self._decisions[key] = answer
        return answer


def make_enforcer(conf: cfg.ConfigOpts) -> Enforcer:
    """An Enforcer with masakari's defaults and the file of ``[oslo_policy] policy_file``.

    The file (YAML, or JSON which YAML reads too) overrides the defaults
    rule by rule; it is looked for next to the configuration files when its
    name is relative, and may be absent. It is reloaded when it changes
    (looked at once a second at most).
    """
    _register_checks()
    enforcer = Enforcer(conf)
    # The reference silences the warnings about changed defaults too: none of
    # its rules has a deprecated predecessor.
    enforcer.suppress_default_change_warnings = True
    enforcer.register_defaults(policies.list_rules())
    enforcer.load_rules()
    return enforcer


def check_is_admin(enforcer: Enforcer, credentials: Mapping[str, Any]) -> bool:
    """Whether ``credentials`` pass ``context_is_admin`` (by default: the admin role)."""
    return enforcer.decide(base.CONTEXT_IS_ADMIN, credentials, credentials)


def authorize(
    enforcer: Enforcer,
    context_credentials: dict[str, Any],
    action: str,
    target: dict[str, Any] | None = None,
) -> None:
    """Raise PolicyNotAuthorized unless the credentials may perform ``action`` on ``target``.

    ``context_credentials`` are a request context's policy values (user_id,
    project_id, roles...). Without an ``is_admin`` entry it is computed from
    ``context_is_admin``, as the reference's request context does. The
    target defaults to the credentials' own project and user. An action with
    no registered rule raises oslo.policy's PolicyNotRegistered.
    """
    creds = dict(context_credentials)
    if creds.get("is_admin") is None:
        creds["is_admin"] = check_is_admin(enforcer, creds)
    if target is None:
        target = {"project_id": creds.get("project_id"), "user_id": creds.get("user_id")}
    if not enforcer.decide(action, target, creds):
        LOG.debug("Policy %s denied to user %s", action, creds.get("user_id"))
        raise exception.PolicyNotAuthorized(action=action)


def _config_args(argv: list[str]) -> list[str]:
    """The --config-file and --config-dir arguments of an oslopolicy command line."""
    kept: list[str] = []
    wanted = ("--config-file", "--config-dir")
    args = iter(argv)
    for arg in args:
        if arg in wanted:
            kept.append(arg)
            kept.append(next(args, ""))
        elif arg.startswith(tuple(w + "=" for w in wanted)):
            kept.append(arg)
    return kept


def get_enforcer(argv: list[str] | None = None) -> Enforcer:
    """The ``oslo.policy.enforcer`` entry point, for the oslopolicy-* commands.

    Those commands have options of their own (--namespace, --output-file...)
    that masakari's parser would reject: only the configuration file
    arguments are kept from ``argv`` (default ``sys.argv[1:]``), so that the
    deployer's policy file is found.
    """
    args = sys.argv[1:] if argv is None else argv
    return make_enforcer(masakari_conf.load(_config_args(args)))

"""Policy enforcement: an oslo.policy Enforcer built from a ConfigOpts, and authorize()."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from oslo_config import cfg
from oslo_policy import policy

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


class Enforcer(policy.Enforcer):  # type: ignore[misc]
    """oslo.policy's Enforcer, looking at the policy files at most every RECHECK_SECONDS."""

    recheck_seconds = RECHECK_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._next_check = 0.0

    def load_rules(self, force_reload: bool = False) -> None:
        now = time.monotonic()
        if force_reload or not self.rules or now >= self._next_check:
            super().load_rules(force_reload)
            self._next_check = now + self.recheck_seconds

    def clear(self) -> None:
        super().clear()
        self._next_check = 0.0


def make_enforcer(conf: cfg.ConfigOpts) -> policy.Enforcer:
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


def check_is_admin(enforcer: policy.Enforcer, credentials: Mapping[str, Any]) -> bool:
    """Whether ``credentials`` pass ``context_is_admin`` (by default: the admin role)."""
    creds = dict(credentials)
    return bool(enforcer.authorize(base.CONTEXT_IS_ADMIN, creds, creds))


def authorize(
    enforcer: policy.Enforcer,
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
    try:
        enforcer.authorize(
            action, target, creds, do_raise=True, exc=exception.PolicyNotAuthorized, action=action
        )
    except exception.PolicyNotAuthorized:
        LOG.debug("Policy %s denied to user %s", action, creds.get("user_id"))
        raise


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


def get_enforcer(argv: list[str] | None = None) -> policy.Enforcer:
    """The ``oslo.policy.enforcer`` entry point, for the oslopolicy-* commands.

    Those commands have options of their own (--namespace, --output-file...)
    that masakari's parser would reject: only the configuration file
    arguments are kept from ``argv`` (default ``sys.argv[1:]``), so that the
    deployer's policy file is found.
    """
    args = sys.argv[1:] if argv is None else argv
    return make_enforcer(masakari_conf.load(_config_args(args)))

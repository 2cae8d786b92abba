"""masakari.policies and masakari.policy: the 27 default rules of the reference and the
project's own (microversions 1.4 to 1.7), overrides, entry points."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from oslo_policy import policy as oslo_policy

import masakari.conf
from masakari import exception, policies, policy
from masakari.policies import (
    base,
    drills,
    extension_info,
    hosts,
    notifications,
    quarantines,
    segments,
    versions,
    vmoves,
)
from tests.support.policy import MEMBER, PROJECT_ONLY, entry_point

REFERENCE_POLICY = (
    Path(__file__).resolve().parents[3] / "shared/spec/reference/policy-effective.json"
)

ADMIN = {"user_id": "u-admin", "project_id": "p-admin", "roles": ["admin", "member", "reader"]}


def _reference() -> dict[str, str]:
    if not REFERENCE_POLICY.exists():
        pytest.skip(f"reference facts not available: {REFERENCE_POLICY}")
    # The file holds one '"name": "check"' line per rule: a YAML mapping.
    return yaml.safe_load(REFERENCE_POLICY.read_text())


# Rules of the project's own API additions.


def _api_rules() -> list[str]:
    return [r.name for r in policies.list_rules() if r.check_str == base.RULE_ADMIN_API]


@pytest.fixture(scope="module")
def enforcer() -> oslo_policy.Enforcer:
    return policy.make_enforcer(masakari.conf.for_tests())


# --- the defaults -------------------------------------------------------------------------


def test_rules_equal_reference_in_order() -> None:
    reference = _reference()
    rules = [r for r in policies.list_rules() if r.name not in PROJECT_ONLY]
    assert len(rules) == 27
    assert [(r.name, r.check_str) for r in rules] == list(reference.items())


def test_project_only_rules_are_admin_by_default() -> None:
    own = {r.name: r.check_str for r in policies.list_rules() if r.name in PROJECT_ONLY}
    assert own == dict.fromkeys(PROJECT_ONLY, base.RULE_ADMIN_API)


def test_constants_name_the_rules() -> None:
    names = {r.name for r in policies.list_rules()}
    constants = {
        segments.INDEX,
        segments.DETAIL,
        segments.CREATE,
        segments.UPDATE,
        segments.DELETE,
        segments.DISCOVERABLE,
        hosts.INDEX,
        hosts.DETAIL,
        hosts.CREATE,
        hosts.UPDATE,
        hosts.DELETE,
        hosts.DISCOVERABLE,
        hosts.RECOVERY_PLAN,
        segments.READINESS,
        quarantines.CREATE,
        quarantines.INDEX,
        quarantines.DETAIL,
        quarantines.START,
        quarantines.CANCEL,
        quarantines.RELEASE,
        drills.CREATE,
        drills.INDEX,
        drills.SHOW,
        notifications.INDEX,
        notifications.DETAIL,
        notifications.CREATE,
        notifications.DISCOVERABLE,
        notifications.RELEASE,
        notifications.CANCEL,
        notifications.FENCING,
        notifications.EVIDENCE,
        vmoves.INDEX,
        vmoves.DETAIL,
        vmoves.DISCOVERABLE,
        extension_info.INDEX,
        extension_info.DETAIL,
        extension_info.DISCOVERABLE,
        versions.INDEX,
        versions.DISCOVERABLE,
        base.CONTEXT_IS_ADMIN,
        base.ADMIN_OR_OWNER,
        base.ADMIN_API,
    }
    assert constants == names
    assert segments.CREATE == "os_masakari_api:segments:create"
    assert hosts.UPDATE == "os_masakari_api:os-hosts:update"


def test_documented_operations() -> None:
    operations = {
        r.name: [(op["method"], op["path"]) for op in r.operations]
        for r in policies.list_rules()
        if isinstance(r, oslo_policy.DocumentedRuleDefault)
    }
    assert operations == {
        extension_info.INDEX: [("GET", "/extensions")],
        extension_info.DETAIL: [("GET", "/extensions/{extensions_id}")],
        hosts.INDEX: [("GET", "/segments/{segment_id}/hosts")],
        hosts.DETAIL: [("GET", "/segments/{segment_id}/hosts/{host_id}")],
        hosts.CREATE: [("POST", "/segments/{segment_id}/hosts")],
        hosts.UPDATE: [("PUT", "/segments/{segment_id}/hosts/{host_id}")],
        hosts.DELETE: [("DELETE", "/segments/{segment_id}/hosts/{host_id}")],
        hosts.RECOVERY_PLAN: [("GET", "/segments/{segment_id}/hosts/{host_id}/recovery_plan")],
        notifications.INDEX: [("GET", "/notifications")],
        notifications.DETAIL: [("GET", "/notifications/{notification_id}")],
        notifications.CREATE: [("POST", "/notifications")],
        notifications.RELEASE: [("POST", "/notifications/{notification_id}/action")],
        notifications.CANCEL: [("POST", "/notifications/{notification_id}/action")],
        notifications.FENCING: [("GET", "/notifications/{notification_id}")],
        notifications.EVIDENCE: [("GET", "/notifications/{notification_id}")],
        segments.INDEX: [("GET", "/segments")],
        segments.DETAIL: [("GET", "/segments/{segment_id}")],
        segments.CREATE: [("POST", "/segments")],
        segments.UPDATE: [("PUT", "/segments/{segment_id}")],
        segments.DELETE: [("DELETE", "/segments/{segment_id}")],
        segments.READINESS: [("GET", "/segments/{segment_id}/readiness")],
        quarantines.CREATE: [("POST", "/segments/{segment_id}/hosts/{host_id}/quarantine")],
        quarantines.INDEX: [("GET", "/quarantines")],
        quarantines.DETAIL: [("GET", "/quarantines/{quarantine_id}")],
        quarantines.START: [("POST", "/quarantines/{quarantine_id}/action")],
        quarantines.CANCEL: [("POST", "/quarantines/{quarantine_id}/action")],
        quarantines.RELEASE: [("POST", "/quarantines/{quarantine_id}/action")],
        drills.CREATE: [("POST", "/segments/{segment_id}/drills")],
        drills.INDEX: [("GET", "/segments/{segment_id}/drills")],
        drills.SHOW: [("GET", "/segments/{segment_id}/drills/{drill_id}")],
        versions.INDEX: [("GET", "/")],
        vmoves.INDEX: [("GET", "/notifications/{notification_id}/vmoves")],
        vmoves.DETAIL: [("GET", "/notifications/{notification_id}/vmoves/{vmove_id}")],
    }
    for rule in policies.list_rules():
        assert rule.description, rule.name
        assert not rule.scope_types, "the reference declares no scope types"


# --- enforcement --------------------------------------------------------------------------


def test_api_rules_count() -> None:
    assert len(_api_rules()) == 22 + len(PROJECT_ONLY)


@pytest.mark.parametrize("action", [r.name for r in policies.list_rules()])
def test_admin_is_allowed_everything(enforcer: oslo_policy.Enforcer, action: str) -> None:
    policy.authorize(enforcer, dict(ADMIN), action)


@pytest.mark.parametrize("action", _api_rules())
def test_member_is_denied_every_api_rule(enforcer: oslo_policy.Enforcer, action: str) -> None:
    with pytest.raises(exception.PolicyNotAuthorized) as raised:
        policy.authorize(enforcer, dict(MEMBER), action)
    assert raised.value.kwargs == {"action": action}
    assert str(raised.value) == f"Policy doesn't allow {action} to be performed."


def test_member_passes_the_open_and_owner_rules(enforcer: oslo_policy.Enforcer) -> None:
    policy.authorize(enforcer, dict(MEMBER), versions.INDEX)
    policy.authorize(enforcer, dict(MEMBER), versions.DISCOVERABLE)
    # admin_or_owner: the default target is the caller's own project.
    policy.authorize(enforcer, dict(MEMBER), base.ADMIN_OR_OWNER)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), base.ADMIN_OR_OWNER, {"project_id": "other"})
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), base.CONTEXT_IS_ADMIN)


def test_anonymous_credentials(enforcer: oslo_policy.Enforcer) -> None:
    policy.authorize(enforcer, {}, versions.INDEX)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, {}, segments.INDEX)


def test_is_admin_flag_decides_when_given(enforcer: oslo_policy.Enforcer) -> None:
    # As with the reference's request context, an explicit is_admin wins over the roles.
    policy.authorize(enforcer, dict(MEMBER, is_admin=True), segments.CREATE)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(ADMIN, is_admin=False), segments.CREATE)
    assert policy.check_is_admin(enforcer, ADMIN) is True
    assert policy.check_is_admin(enforcer, MEMBER) is False


def test_role_match_is_case_insensitive(enforcer: oslo_policy.Enforcer) -> None:
    policy.authorize(enforcer, {"roles": ["Admin"], "project_id": "p"}, hosts.DELETE)


def test_credentials_are_not_modified(enforcer: oslo_policy.Enforcer) -> None:
    creds = dict(MEMBER)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, creds, segments.INDEX)
    assert creds == MEMBER


def test_unknown_action_is_an_error(enforcer: oslo_policy.Enforcer) -> None:
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        policy.authorize(enforcer, dict(ADMIN), "os_masakari_api:nothing:index")


def test_default_policy_file_name() -> None:
    assert masakari.conf.for_tests().oslo_policy.policy_file == "policy.yaml"


# --- overrides ----------------------------------------------------------------------------


def test_missing_policy_file_keeps_the_defaults(tmp_path: Path) -> None:
    conf = masakari.conf.for_tests(**{"oslo_policy.policy_file": str(tmp_path / "absent.yaml")})
    enforcer = policy.make_enforcer(conf)
    policy.authorize(enforcer, dict(ADMIN), segments.INDEX)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), segments.INDEX)


# --- entry points and generators ----------------------------------------------------------


def test_policies_entry_point() -> None:
    assert entry_point("oslo.policy.policies", "masakari") is policies.list_rules

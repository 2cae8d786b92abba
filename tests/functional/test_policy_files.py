"""Policy files as a deployer writes them, read from disk: YAML and JSON overrides, a relative
path, edits picked up, remembered answers, the entry points and the sample (the rules
themselves: tests/unit/test_policy.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import policy as oslo_policy

import masakari.conf
from masakari import exception, policies, policy
from masakari.policies import (
    hosts,
    notifications,
    segments,
    vmoves,
)
from tests.support.clock import FakeClock
from tests.support.policy import MEMBER, PROJECT_ONLY, entry_point


def _enforcer_with_file(tmp_path: Path, name: str, content: str) -> oslo_policy.Enforcer:
    path = tmp_path / name
    path.write_text(content)
    return policy.make_enforcer(masakari.conf.for_tests(**{"oslo_policy.policy_file": str(path)}))


def test_yaml_override_opens_one_rule(tmp_path: Path) -> None:
    enforcer = _enforcer_with_file(tmp_path, "policy.yaml", f'"{segments.INDEX}": "role:member"\n')
    policy.authorize(enforcer, dict(MEMBER), segments.INDEX)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), segments.DETAIL)
    # The override replaced the rule: admins without the member role lose it.
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, {"roles": ["admin"], "project_id": "p"}, segments.INDEX)


def test_json_override_opens_one_rule(tmp_path: Path) -> None:
    enforcer = _enforcer_with_file(
        tmp_path, "policy.json", json.dumps({notifications.CREATE: "role:member or rule:admin_api"})
    )
    policy.authorize(enforcer, dict(MEMBER), notifications.CREATE)
    policy.authorize(enforcer, {"roles": ["admin"], "project_id": "p"}, notifications.CREATE)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), notifications.INDEX)


def test_overriding_a_base_rule_changes_every_api_rule(tmp_path: Path) -> None:
    enforcer = _enforcer_with_file(tmp_path, "policy.yaml", '"context_is_admin": "role:ops"\n')
    policy.authorize(enforcer, {"roles": ["ops"]}, vmoves.INDEX)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, {"roles": ["admin"]}, vmoves.INDEX)


def test_relative_policy_file_is_found_next_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(f'"{hosts.INDEX}": "role:member"\n')
    conf_file = tmp_path / "masakari.conf"
    conf_file.write_text("[DEFAULT]\n")
    conf = masakari.conf.load(["--config-file", str(conf_file)], default_config_files=[])
    policy.authorize(policy.make_enforcer(conf), dict(MEMBER), hosts.INDEX)


def test_an_edited_policy_file_applies_within_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(policy.time, "monotonic", clock.monotonic)
    enforcer = _enforcer_with_file(tmp_path, "p.yaml", '"os_masakari_api:segments:index": "@"\n')
    path = tmp_path / "p.yaml"
    policy.authorize(enforcer, dict(MEMBER), segments.INDEX)
    path.write_text('"os_masakari_api:segments:index": "!"\n')
    # oslo.policy compares modification times: make the edit visible whatever the filesystem.
    stat = path.stat()
    os.utime(path, (stat.st_atime + 5, stat.st_mtime + 5))
    clock.advance(policy.RECHECK_SECONDS / 2)
    policy.authorize(enforcer, dict(MEMBER), segments.INDEX)  # not looked at yet
    clock.advance(policy.RECHECK_SECONDS)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), segments.INDEX)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each rule oslo.policy itself evaluates."""
    calls: list[str] = []
    original = oslo_policy.Enforcer.authorize

    def spy(self: Any, rule: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(rule)
        return original(self, rule, *args, **kwargs)

    monkeypatch.setattr(oslo_policy.Enforcer, "authorize", spy)
    return calls


def test_an_answer_is_remembered_until_the_rules_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    enforcer = _enforcer_with_file(tmp_path, "p.yaml", f'"{segments.INDEX}": "role:member"\n')
    calls = _counting(monkeypatch)
    for _ in range(3):
        policy.authorize(enforcer, dict(MEMBER), segments.INDEX)
        with pytest.raises(exception.PolicyNotAuthorized):
            policy.authorize(enforcer, dict(MEMBER), segments.DETAIL)
    # Once per (rule, target, credentials), the caller's is_admin included.
    assert calls.count(segments.INDEX) == 1
    assert calls.count(segments.DETAIL) == 1
    # Other credentials or another target are other questions.
    policy.authorize(enforcer, dict(MEMBER, user_id="u-2"), segments.INDEX)
    policy.authorize(enforcer, dict(MEMBER), segments.INDEX, {"project_id": "p-member"})
    assert calls.count(segments.INDEX) == 3
    enforcer.set_rules(oslo_policy.Rules.from_dict({segments.INDEX: "!"}), overwrite=False)
    with pytest.raises(exception.PolicyNotAuthorized):
        policy.authorize(enforcer, dict(MEMBER), segments.INDEX)


class _Alternating(oslo_policy.Check):  # type: ignore[misc]
    """A check that consults something outside the rule: yes, then no, then yes..."""

    answers = [True, False]

    def __call__(self, target: Any, creds: Any, enforcer: Any, current_rule: Any = None) -> bool:
        self.answers.reverse()
        return self.answers[1]


def test_a_rule_that_consults_something_else_is_asked_every_time(tmp_path: Path) -> None:
    oslo_policy.register("alternating", _Alternating)
    enforcer = _enforcer_with_file(
        tmp_path, "p.yaml", f'"{segments.INDEX}": "alternating:x or role:nobody"\n'
    )
    seen = []
    for _ in range(4):
        try:
            policy.authorize(enforcer, dict(MEMBER), segments.INDEX)
            seen.append(True)
        except exception.PolicyNotAuthorized:
            seen.append(False)
    assert seen == [True, False, True, False]


def test_enforcer_entry_point_keeps_only_config_arguments(tmp_path: Path) -> None:
    assert entry_point("oslo.policy.enforcer", "masakari") is policy.get_enforcer
    (tmp_path / "custom.yaml").write_text(f'"{vmoves.DETAIL}": "@"\n')
    conf_file = tmp_path / "masakari.conf"
    conf_file.write_text("[oslo_policy]\npolicy_file = custom.yaml\n")
    enforcer = policy.get_enforcer(
        ["--namespace", "masakari", "--output-file", "out.yaml", f"--config-file={conf_file}"]
    )
    assert isinstance(enforcer, oslo_policy.Enforcer)
    assert len(enforcer.registered_rules) == 27 + len(PROJECT_ONLY)
    policy.authorize(enforcer, dict(MEMBER), vmoves.DETAIL)


def test_sample_generator_lists_every_rule(tmp_path: Path) -> None:
    out = tmp_path / "policy.yaml.sample"
    generator.generate_sample(
        args=["--namespace", "masakari", "--output-file", str(out)], conf=cfg.ConfigOpts()
    )
    text = out.read_text()
    for rule in policies.list_rules():
        assert f'#"{rule.name}": "{rule.check_str}"' in text

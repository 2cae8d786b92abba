"""Unsafe evacuations: server-group policies at an explicit target, local root disks."""

from __future__ import annotations

import types
from typing import Any

from masakari.compute.servers import Server
from masakari.engine.recovery import safety


def _options(**values: bool) -> Any:
    return types.SimpleNamespace(
        check_server_groups=values.get("groups", False),
        no_shared_storage=values.get("local", False),
    )


class _Nova:
    def __init__(self, groups: list[dict[str, Any]], on_target: list[str]) -> None:
        self.groups = groups
        self.on_target = on_target
        self.calls: list[str] = []

    def list_servers_on_host(self, host: str) -> list[dict[str, Any]]:
        self.calls.append(f"servers {host}")
        return [Server(i) for i in self.on_target]

    def list_server_groups(self) -> list[dict[str, Any]]:
        self.calls.append("groups")
        return self.groups


def test_anti_affinity_members_moving_to_one_target_keep_only_the_first() -> None:
    groups = [{"id": "g", "policies": ["anti-affinity"], "members": ["a", "b", "c"]}]
    found = safety.group_conflicts(groups, ["a", "b", "x"], set(), "spare")
    assert found == {"b": "server group 'g' (anti-affinity): member a is evacuated to 'spare' too"}


def test_affinity_breaks_when_a_member_stays_elsewhere() -> None:
    groups = [{"id": "g", "policy": "affinity", "members": ["a", "b", "c"]}]
    assert safety.group_conflicts(groups, ["a", "b", "c"], set(), "spare") == {}
    found = safety.group_conflicts(groups, ["a", "b"], set(), "spare")
    assert set(found) == {"a", "b"}
    assert found["a"] == "server group 'g' (affinity): member(s) c stay off 'spare'"
    # A member already on the target is with them.
    assert safety.group_conflicts(groups, ["a", "b"], {"c"}, "spare") == {}


def test_soft_policies_are_never_a_reason() -> None:
    groups = [{"id": "g", "policy": "soft-anti-affinity", "members": ["a", "b"]}]
    assert safety.group_conflicts(groups, ["a", "b"], {"a"}, "spare") == {}


def test_no_nova_request_when_off_or_without_a_target() -> None:
    nova = _Nova([], [])
    servers = [Server("a", image_id="img"), Server("b")]
    assert safety.unsafe(_options(), nova, servers, "spare") == {}
    assert safety.unsafe(_options(groups=True), nova, servers, None) == {}
    assert nova.calls == []
    found = safety.unsafe(_options(local=True), nova, servers, "spare")
    assert list(found) == ["a"]
    assert nova.calls == []


def test_local_disk_instances_are_not_checked_against_groups() -> None:
    nova = _Nova([{"id": "g", "policy": "anti-affinity", "members": ["a", "b"]}], [])
    servers = [Server("a", image_id="img"), Server("b")]
    found = safety.unsafe(_options(groups=True, local=True), nova, servers, "spare")
    assert list(found) == ["a"] and "root disk is local" in found["a"]
    assert nova.calls == ["servers spare", "groups"]

"""Unsafe evacuations: server-group policies at an explicit target, local root disks."""

from __future__ import annotations

import types
from typing import Any

from masakari.compute.servers import Server, ServerGroup
from masakari.engine.selection import safety
from tests.fakes.nova import NovaSimulator


def _options(**values: bool) -> Any:
    return types.SimpleNamespace(
        check_server_groups=values.get("groups", False),
        no_shared_storage=values.get("local", False),
    )


def _nova(sim: NovaSimulator, groups: dict[str, list[str]], on_target: list[str]) -> Any:
    """The simulator (in process) with server groups {policy: members} and servers on the
    target host 'spare'."""
    for sid in on_target:
        sim.add_server(sid, host="spare")
    for policy, members in groups.items():
        sim.add_server_group(policy, members, id="g")
    return sim.client()


def _requests(sim: NovaSimulator) -> list[str]:
    return [f"{c['method']} {c['path']}" for c in sim.nova_calls()]


def test_anti_affinity_members_moving_to_one_target_keep_only_the_first() -> None:
    groups = [
        ServerGroup.of({"id": "g", "policies": ["anti-affinity"], "members": ["a", "b", "c"]})
    ]
    found = safety.group_conflicts(groups, ["a", "b", "x"], set(), "spare")
    assert found == {"b": "server group 'g' (anti-affinity): member a is evacuated to 'spare' too"}


def test_affinity_breaks_when_a_member_stays_elsewhere() -> None:
    groups = [ServerGroup.of({"id": "g", "policy": "affinity", "members": ["a", "b", "c"]})]
    assert safety.group_conflicts(groups, ["a", "b", "c"], set(), "spare") == {}
    found = safety.group_conflicts(groups, ["a", "b"], set(), "spare")
    assert set(found) == {"a", "b"}
    assert found["a"] == "server group 'g' (affinity): member(s) c stay off 'spare'"
    # A member already on the target is with them.
    assert safety.group_conflicts(groups, ["a", "b"], {"c"}, "spare") == {}


def test_soft_policies_are_never_a_reason() -> None:
    groups = [ServerGroup.of({"id": "g", "policy": "soft-anti-affinity", "members": ["a", "b"]})]
    assert safety.group_conflicts(groups, ["a", "b"], {"a"}, "spare") == {}


def test_no_nova_request_when_off_or_without_a_target() -> None:
    sim = NovaSimulator()
    nova = _nova(sim, {}, [])
    servers = [Server("a", image_id="img"), Server("b")]
    assert safety.unsafe(_options(), nova, servers, "spare") == {}
    assert safety.unsafe(_options(groups=True), nova, servers, None) == {}
    assert sim.nova_calls() == []
    found = safety.unsafe(_options(local=True), nova, servers, "spare")
    assert list(found) == ["a"]
    assert sim.nova_calls() == []


def test_local_disk_instances_are_not_checked_against_groups() -> None:
    sim = NovaSimulator()
    nova = _nova(sim, {"anti-affinity": ["a", "b"]}, [])
    servers = [Server("a", image_id="img"), Server("b")]
    found = safety.unsafe(_options(groups=True, local=True), nova, servers, "spare")
    assert list(found) == ["a"] and "root disk is local" in found["a"]
    # the servers on the target, then the groups (a page, and the empty one that ends them)
    assert _requests(sim) == ["GET /servers/detail", *["GET /os-server-groups"] * 2]

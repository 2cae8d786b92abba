"""masakari.engine.plan: ordering, priorities, greedy fitting and reserved-host ranking."""

from __future__ import annotations

import pytest

from masakari import conf as masakari_conf
from masakari.compute.placement import HostCapacity, flavor_resources
from masakari.engine import plan


def _inst(iid: str, vcpus: int = 1, ha: bool = False, prio: int | None = None) -> plan.Instance:
    return plan.Instance(iid, iid, ha, prio, {"VCPU": vcpus, "MEMORY_MB": 0, "DISK_GB": 0})


def _host(name: str, vcpus: int, used: int = 0) -> HostCapacity:
    return HostCapacity(name, name + "-rp", {"VCPU": vcpus, "MEMORY_MB": 10**6}, {"VCPU": used})


class Caps:
    def __init__(self, *hosts: HostCapacity) -> None:
        self.hosts = {h.name: h for h in hosts}

    def host_capacity(self, name: str) -> HostCapacity | None:
        found = self.hosts.get(name)
        return None if found is None else HostCapacity(**vars(found) | {"used": dict(found.used)})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10", 10), (" -3 ", -3), ("0", 0), ("high", None), ("1.5", None), ("", None)],
)
def test_priority_of(value, expected):
    assert plan.priority_of({"HA_Priority": value}, "HA_Priority") == expected
    assert plan.priority_of({}, "HA_Priority") is None


def test_order_without_priorities_only_puts_ha_first():
    items = ["a", "b", "c", "d"]
    assert plan.order(items, str, {"c"}, None) == ["c", "a", "b", "d"]
    assert plan.order(items, str, None, None) == items


def test_order_with_priorities_inside_each_group():
    items = ["a", "b", "c", "d", "e"]
    prios = {"a": None, "b": 1, "c": 5, "d": 9, "e": -2}
    assert plan.order(items, str, {"a", "b", "c"}, prios) == ["c", "b", "a", "d", "e"]


def test_fit_is_greedy_and_lets_smaller_instances_through():
    placed = plan.fit(
        [_inst("big", 4), _inst("huge", 8), _inst("small", 1)], [_host("h1", 4), _host("h2", 2)]
    )
    assert placed == [(placed[0][0], "h1"), (placed[1][0], None), (placed[2][0], "h2")]


def test_rank_reserved_hosts_moves_fitting_ones_first():
    caps = Caps(_host("full", 8, used=7), _host("roomy", 8))
    ranked = plan.rank_reserved_hosts(["gone", "full", "roomy"], [_inst("a", 2)], caps)
    assert ranked == ["roomy", "gone", "full"]


def test_select_follows_the_prepare_task_rules():
    conf = masakari_conf.for_tests(
        **{
            "host_failure.evacuate_all_instances": False,
            "host_failure.ignore_instances_in_error_state": True,
        }
    )
    servers = [
        {"id": "ha-err", "metadata": {"HA_Enabled": "yes"}, "OS-EXT-STS:vm_state": "error"},
        {"id": "plain", "metadata": {}},
        {"id": "ha", "metadata": {"HA_Enabled": "True"}, "flavor": {"vcpus": 2, "swap": 1025}},
    ]
    chosen, skipped = plan.select(servers, conf)
    assert [i.id for i in chosen] == ["ha"]
    assert chosen[0].resources == {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 2}
    assert [(i.id, "error" in why) for i, why in skipped] == [("ha-err", True), ("plain", False)]


def test_flavor_resources_counts_swap_in_disk():
    server = {"flavor": {"vcpus": 4, "ram": 4096, "disk": 40, "ephemeral": 10, "swap": 512}}
    assert flavor_resources(server) == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 51}


class Nova:
    def __init__(self, servers: list[dict], up: set[str]) -> None:
        self.servers, self.up = servers, up

    def find_compute_services(self, host: str) -> list[dict]:
        return [{"status": "enabled", "state": "up"}] if host in self.up else []

    def list_servers_on_host(self, host: str) -> list[dict]:
        return self.servers


def test_build_without_a_provider_for_a_target_decides_nothing():
    conf = masakari_conf.for_tests(**{"host_failure.capacity_aware_targets": True})
    nova = Nova([{"id": "vm", "flavor": {"vcpus": 64}}], {"peer-1", "peer-fqdn"})
    found = plan.build(
        conf,
        nova,
        Caps(_host("peer-1", 2)),
        host="failed",
        recovery_method="auto",
        reserved_hosts=[],
        peers=["failed", "peer-1", "peer-fqdn"],
    )
    assert found.verdict == "unknown" and found.left_behind == []
    assert [(s.target, s.fits) for s in found.steps] == [("scheduler", None)]
    assert "no resource provider named 'peer-fqdn'" in found.messages[0]
    with pytest.raises(plan.UnknownCapacity):
        plan.split_by_capacity(
            [found.steps[0].instance],
            nova,
            Caps(),
            reserved_host="spare",
            peers=[],
        )

"""masakari.engine.selection, .capacity and .plan: ordering, priorities, greedy fitting,
reserved-host ranking and the plan built from them."""

from __future__ import annotations

import pytest

from masakari import conf as masakari_conf
from masakari.compute.nova import NovaClient
from masakari.compute.placement import HostCapacity, flavor_resources
from masakari.engine import capacity, plan, selection
from masakari.engine.effects import VMoveData
from masakari.engine.recovery import groups
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor


def _inst(
    iid: str, vcpus: int = 1, ha: bool = False, prio: int | None = None
) -> selection.Instance:
    return selection.Instance(iid, iid, ha, prio, {"VCPU": vcpus, "MEMORY_MB": 0, "DISK_GB": 0})


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
    assert selection.priority_of({"HA_Priority": value}, "HA_Priority") == expected
    assert selection.priority_of({}, "HA_Priority") is None


def test_order_without_priorities_only_puts_ha_first():
    items = ["a", "b", "c", "d"]
    assert selection.order(items, str, {"c"}, None) == ["c", "a", "b", "d"]
    assert selection.order(items, str, None, None) == items


def test_order_with_priorities_inside_each_group():
    items = ["a", "b", "c", "d", "e"]
    prios = {"a": None, "b": 1, "c": 5, "d": 9, "e": -2}
    assert selection.order(items, str, {"a", "b", "c"}, prios) == ["c", "b", "a", "d", "e"]


def test_order_with_groups_puts_groups_outermost_lowest_first():
    items = ["a", "b", "c", "d", "e"]
    groups = {"a": 2, "b": None, "c": 2, "d": -1, "e": 10}
    prios = {"a": 1, "c": 5}
    # Inside group 2, HA-enabled "a" before "c" whatever their priorities.
    assert selection.order(items, str, {"a", "b"}, prios, groups) == ["d", "a", "c", "e", "b"]
    assert selection.order(items, str, {"a", "b"}, prios, None) == ["a", "b", "c", "d", "e"]


def test_groups_only_when_order_in_groups_is_on():
    inst = selection.Instance.of({"id": "x", "metadata": {"Tier": " 4 "}}, _conf())
    assert inst.group is None
    conf = _conf(**{"host_failure.order_in_groups": True})
    conf.set_override("group_instance_metadata_key", "Tier", "host_failure")
    inst = selection.Instance.of({"id": "x", "metadata": {"Tier": " 4 "}}, conf)
    assert inst.group == 4 and selection.groups([inst], conf) == {"x": 4}
    assert selection.groups([inst], _conf()) is None


def _conf(**overrides: object):
    return masakari_conf.for_tests(**overrides)


def test_batches_cut_where_the_group_changes():
    moves = [
        VMoveData(n, f"m{n}", i, i, "h", None, "pending", None)
        for n, i in enumerate(["a", "b", "c", "d"])
    ]
    cut = groups.batches(moves, {"a": 1, "b": 1, "c": None, "d": None})
    assert [(g, [v.instance_uuid for v in b]) for g, b in cut] == [
        (1, ["a", "b"]),
        (None, ["c", "d"]),
    ]
    assert [g for g, _ in groups.batches(moves, None)] == [None]
    assert groups.batches([], None) == []


def _nova_with_a_big_vm_on(host: str, up: tuple[str, ...]) -> NovaClient:
    """The simulator (in process): a 64-vCPU server on ``host``, the ``up`` computes."""
    sim = NovaSimulator()
    for name in up:
        sim.add_service(name)
    sim.add_server("vm", host=host, flavor=Flavor(vcpus=64))
    return sim.client()


def test_reserved_steps_with_unknown_capacity_send_everything_there():
    conf = masakari_conf.for_tests(**{"host_failure.capacity_aware_targets": True})
    nova = _nova_with_a_big_vm_on("failed", up=("spare-fqdn", "spare"))
    found = plan.build(
        conf,
        nova,
        Caps(_host("spare", 2)),
        host="failed",
        recovery_method="reserved_host",
        reserved_hosts=["spare", "spare-fqdn"],
        peers=[],
    )
    # "spare" has no room: nothing is sent there; the one of unknown room gets everything.
    assert found.reserved_hosts == ["spare", "spare-fqdn"]
    assert [(s.target, s.fits, s.attempts) for s in found.steps] == [
        ("spare-fqdn", None, ["spare-fqdn"])
    ]
    assert [c.view()["sent"] for c in found.candidates] == [[], ["vm"]]
    assert found.verdict == "unknown"


def test_fit_is_greedy_and_lets_smaller_instances_through():
    placed = capacity.fit(
        [_inst("big", 4), _inst("huge", 8), _inst("small", 1)], [_host("h1", 4), _host("h2", 2)]
    )
    assert placed == [(placed[0][0], "h1"), (placed[1][0], None), (placed[2][0], "h2")]


def test_rank_reserved_hosts_moves_fitting_ones_first():
    caps = Caps(_host("full", 8, used=7), _host("roomy", 8))
    ranked = capacity.rank_reserved_hosts(["gone", "full", "roomy"], [_inst("a", 2)], caps)
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
    found = selection.select(conf, NovaSimulator().client(), "compute-1", servers, None)
    chosen = found.moving()
    assert [i.id for i in chosen] == ["ha"]
    assert chosen[0].resources == {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 2}
    skipped = found.left()
    assert [(i.id, "error" in why) for i, why in skipped] == [("ha-err", True), ("plain", False)]


def test_flavor_resources_counts_swap_in_disk():
    server = {"flavor": {"vcpus": 4, "ram": 4096, "disk": 40, "ephemeral": 10, "swap": 512}}
    assert flavor_resources(server) == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 51}


def test_build_without_a_provider_for_a_target_decides_nothing():
    conf = masakari_conf.for_tests(**{"host_failure.capacity_aware_targets": True})
    nova = _nova_with_a_big_vm_on("failed", up=("peer-1", "peer-fqdn"))
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
    with pytest.raises(capacity.UnknownCapacity):
        capacity.split_by_capacity(
            [found.steps[0].instance],
            nova,
            Caps(),
            reserved_host="spare",
            peers=[],
        )


def test_ordering_keys_from_the_flavor_when_the_operator_says_so():
    """A tenant's own HA_Priority / HA_Group count only while the source is the instance."""
    server = {
        "id": "x",
        "metadata": {"HA_Enabled": "True", "HA_Priority": "99", "HA_Group": "1"},
        "flavor": {"vcpus": 1, "extra_specs": {"HA_Priority": "5", "HA_Group": "3"}},
    }
    inst = selection.Instance.of(server, _conf())
    assert (inst.ha, inst.priority, inst.group) == (True, 99, 1)
    conf = _conf(**{"host_failure.ordering_metadata_source": "flavor"})
    inst = selection.Instance.of(server, conf)
    assert (inst.ha, inst.priority, inst.group) == (True, 5, 3)
    bare = selection.Instance.of({"id": "y", "metadata": {"HA_Priority": "99"}}, conf)
    assert (bare.priority, bare.group) == (None, None)

"""masakari.engine.tolerance: failures tolerated, on hand-computed segments of the Nova
simulator and its Placement (in process)."""

from __future__ import annotations

import dataclasses
import datetime
import math

import pytest
from prometheus_client import CollectorRegistry

from masakari import conf as masakari_conf
from masakari import metrics
from masakari.compute.placement import PlacementClient
from masakari.engine import tolerance
from masakari.metrics import capacity as capacity_metrics
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor

NOW = datetime.datetime(2026, 12, 6, 10, 0, 0)
GB = 1024


@dataclasses.dataclass(frozen=True)
class Seg:
    recovery_method: str
    name: str = "seg"
    uuid: str = "6a1f1b4c-0000-4000-8000-000000000001"


@dataclasses.dataclass(frozen=True)
class Host:
    name: str
    reserved: bool = False
    on_maintenance: bool = False


def _k(
    sim: NovaSimulator, method: str, hosts: list[Host], **overrides: object
) -> tolerance.Tolerance:
    conf = masakari_conf.for_tests(**overrides)
    nova = sim.client()
    return tolerance.compute(conf, nova, PlacementClient(nova.session), Seg(method), hosts, NOW)


def _vm(sim: NovaSimulator, host: str, vcpus: int, ram: int = 0) -> None:
    sim.add_server(host=host, flavor=Flavor(vcpus=vcpus, ram=ram, disk=0))


def test_auto_tolerates_one_host_when_two_largest_do_not_fit():
    # 4 VCPU each; c1 carries 3, c2 1+1, c3 1.
    sim = NovaSimulator()
    for name in ("c1", "c2", "c3"):
        sim.add_service(name, vcpus=4)
    _vm(sim, "c1", 3)
    _vm(sim, "c2", 1)
    _vm(sim, "c2", 1)
    _vm(sim, "c3", 1)
    found = _k(sim, "auto", [Host("c1"), Host("c2"), Host("c3")])
    # Any one: the 3 fits on c3 (3 free), 1+1 on c1 or c3, the 1 anywhere. c1 and c2 at
    # once: c3's 3 free take the 3, the two 1s are left behind.
    assert (found.k, found.limiting, found.worst_case) == (1, "VCPU", ["c1", "c2"])
    assert found.left_behind == 2 and found.exact and found.in_service == 3


def test_a_segment_without_room_tolerates_none():
    sim = NovaSimulator()
    for name in ("c1", "c2"):
        sim.add_service(name, vcpus=2, memory_mb=4 * GB)
        _vm(sim, name, 2, GB)
    found = _k(sim, "auto", [Host("c1"), Host("c2")])
    assert (found.k, found.limiting, found.worst_case) == (0, "VCPU", ["c1"])
    assert not found.below_target


def test_reserved_host_counts_only_the_spare():
    # The workers have room for each other, but reserved_host evacuates to the spare only.
    sim = NovaSimulator()
    sim.add_service("w1", vcpus=16)
    sim.add_service("w2", vcpus=16)
    sim.add_service("spare", status="disabled", vcpus=4)
    _vm(sim, "w1", 4)
    _vm(sim, "w2", 2)
    hosts = [Host("w1"), Host("w2"), Host("spare", reserved=True)]
    found = _k(sim, "reserved_host", hosts)
    assert (found.k, found.limiting, found.worst_case) == (1, "VCPU", ["w1", "w2"])
    # Without its spare (on maintenance: gone), no failure is absorbed.
    gone = [Host("w1"), Host("w2"), Host("spare", reserved=True, on_maintenance=True)]
    found = _k(sim, "reserved_host", gone)
    assert (found.k, found.limiting, found.worst_case) == (0, tolerance.NO_HOST, ["w1"])


def test_instances_that_fit_only_on_the_spare():
    sim = NovaSimulator()
    sim.add_service("w1", vcpus=2)
    sim.add_service("w2", vcpus=2)
    sim.add_service("spare", status="disabled", vcpus=2)
    _vm(sim, "w1", 2)
    _vm(sim, "w2", 2)
    hosts = [Host("w1"), Host("w2"), Host("spare", reserved=True)]
    # auto: the full peers have no room, and a disabled spare is no scheduler target.
    assert _k(sim, "auto", hosts).k == 0
    # auto_priority and rh_priority: what the auto flow leaves goes to the spare; two at once
    # do not fit.
    for method in ("auto_priority", "rh_priority"):
        found = _k(sim, method, hosts)
        assert (found.k, found.worst_case) == (1, ["w1", "w2"]), method


def test_allocation_ratio_and_reserved_amounts_are_placements():
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=8, memory_mb=16 * GB)
    sim.add_service("c2", vcpus=4, memory_mb=8 * GB)
    _vm(sim, "c1", 6, 2 * GB)
    vcpu = sim.placement.by_name("c2").inventories["VCPU"]
    vcpu.reserved, vcpu.allocation_ratio = 2, 4.0
    hosts = [Host("c1"), Host("c2")]
    # (4 - 2) * 4.0 = 8 VCPU on c2: the 6 fit.
    assert _k(sim, "auto", hosts).k == 1
    vcpu.allocation_ratio = 1.0
    found = _k(sim, "auto", hosts)
    assert (found.k, found.limiting) == (0, "VCPU")
    vcpu.allocation_ratio = 4.0
    # 8 GB with 7 reserved: 1 GB for a 2 GB instance.
    sim.placement.by_name("c2").inventories["MEMORY_MB"].reserved = 7 * GB
    found = _k(sim, "auto", hosts)
    assert (found.k, found.limiting) == (0, "MEMORY_MB")


def test_a_down_host_is_gone_and_no_target():
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=4)
    sim.add_service("c2", vcpus=4)
    sim.add_service("c3", vcpus=4, state="down")
    _vm(sim, "c1", 3)
    _vm(sim, "c2", 2)
    found = _k(sim, "auto", [Host("c1"), Host("c2"), Host("c3")])
    # c3 counts neither as a failure to absorb nor as room: c1's 3 do not fit in c2's 2.
    assert (found.k, found.in_service, found.worst_case) == (0, 2, ["c1"])


def test_out_of_scope_instances_need_no_room():
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=4)
    sim.add_service("c2", vcpus=4)
    _vm(sim, "c1", 4)
    sim.add_server(host="c2", flavor=Flavor(vcpus=4), metadata={"HA_Enabled": "True"})
    hosts = [Host("c1"), Host("c2")]
    assert _k(sim, "auto", hosts).k == 0
    # Only HA-enabled instances move: c1's needs no room, c2's does not fit on full c1.
    found = _k(sim, "auto", hosts, **{"host_failure.evacuate_all_instances": False})
    assert (found.k, found.worst_case) == (0, ["c2"])
    # With an empty c3: c2 and c1 failing at once leaves c3 for c2's one instance; c2 and c3
    # leave it behind (c1 full of an instance that needs no room itself).
    sim.add_service("c3", vcpus=4)
    found = _k(sim, "auto", [*hosts, Host("c3")], **{"host_failure.evacuate_all_instances": False})
    assert (found.k, found.worst_case) == (1, ["c2", "c3"])


def test_beyond_the_exact_budget_only_the_largest_are_judged(monkeypatch):
    sim = NovaSimulator()
    for name in ("c1", "c2", "c3"):
        sim.add_service(name, vcpus=4)
    _vm(sim, "c1", 3)
    _vm(sim, "c2", 1)
    _vm(sim, "c2", 1)
    _vm(sim, "c3", 1)
    monkeypatch.setattr(tolerance, "EXACT_SETS", 3)
    found = _k(sim, "auto", [Host("c1"), Host("c2"), Host("c3")])
    # k = 1 exactly (3 sets), k = 2 by the two largest (c1 3 VCPU, c2 2).
    assert (found.k, found.worst_case, found.exact) == (1, ["c1", "c2"], False)


def test_unknown_capacity_gives_no_k():
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=4)
    sim.add_service("c2", vcpus=4)
    del sim.placement.providers[sim.placement.by_name("c2").uuid]
    found = _k(sim, "auto", [Host("c1"), Host("c2")])
    assert found.k is None and "'c2'" in found.reason and not found.below_target


def test_targets_from_configuration():
    conf = masakari_conf.for_tests(**{"capacity.failures_to_tolerate": 1})
    assert tolerance.target_of(conf, Seg("auto")) == 1
    conf.set_override("segment_failures_to_tolerate", {"seg": "2"}, "capacity")
    assert tolerance.target_of(conf, Seg("auto")) == 2
    conf.set_override("segment_failures_to_tolerate", {Seg("auto").uuid: "0"}, "capacity")
    assert tolerance.target_of(conf, Seg("auto")) == 0
    conf.set_override("segment_failures_to_tolerate", {"seg": "two"}, "capacity")
    with pytest.raises(ValueError, match="'two'"):  # oslo.config's Integer, at the read
        tolerance.target_of(conf, Seg("auto"))


def test_below_target_is_judged_and_shown():
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=2)
    sim.add_service("c2", vcpus=2)
    _vm(sim, "c1", 2)
    found = _k(sim, "auto", [Host("c1"), Host("c2")], **{"capacity.failures_to_tolerate": 2})
    assert found.k == 1 and found.below_target
    view = found.view()
    assert view["target"] == 2 and view["below_target"] and view["limiting_resource"] == "hosts"
    assert view["worst_case_hosts"] == ["c1", "c2"]
    assert view["computed_at"] == "2026-12-06T10:00:00"
    assert tolerance.line(found).startswith("k=1 (target 2, below): Losing c1, c2 at once")


def _shown(name: str, segment: str) -> float | None:
    return metrics.OWN.get_sample_value(name, {"segment": segment})


def test_the_gauges_follow_the_segments(monkeypatch):
    monkeypatch.setattr(metrics, "OWN", CollectorRegistry(auto_describe=True))
    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)
    monkeypatch.setattr(capacity_metrics, "instruments", metrics.Once(capacity_metrics._create))
    monkeypatch.setattr(capacity_metrics, "_shown", {"tolerated": set(), "target": set()})

    def found(segment: str, k: int | None, target: int) -> tolerance.Tolerance:
        return tolerance.Tolerance(segment, k, target, None, [], 0, 2, True, "", NOW)

    capacity_metrics.failures_tolerated([found("a", 1, 2), found("b", None, 0)])
    assert _shown("masakari_segment_failures_tolerated", "a") == 1
    assert _shown("masakari_segment_failures_to_tolerate", "a") == 2
    assert math.isnan(_shown("masakari_segment_failures_tolerated", "b") or 0.0)
    assert _shown("masakari_segment_failures_to_tolerate", "b") is None
    # "b" deleted, "a"'s target taken away.
    capacity_metrics.failures_tolerated([found("a", 0, 0)])
    assert _shown("masakari_segment_failures_tolerated", "a") == 0
    assert _shown("masakari_segment_failures_to_tolerate", "a") is None
    assert _shown("masakari_segment_failures_tolerated", "b") is None


def test_disk_on_shared_storage_is_not_counted():
    # No compute node inventories DISK_GB (a sharing provider holds the disks).
    sim = NovaSimulator()
    sim.add_service("c1", vcpus=4)
    sim.add_service("c2", vcpus=4)
    sim.add_server(host="c1", flavor=Flavor(vcpus=2, ram=0, disk=80))
    for name in ("c1", "c2"):
        del sim.placement.by_name(name).inventories["DISK_GB"]
    found = _k(sim, "auto", [Host("c1"), Host("c2")])
    assert (found.k, found.limiting, found.worst_case) == (1, "hosts", ["c1", "c2"])


def test_once_judged_by_the_largest_k_is_not_called_exact(monkeypatch):
    sim = NovaSimulator()
    for name in ("c1", "c2", "c3"):
        sim.add_service(name, vcpus=8)
        _vm(sim, name, 1)
    # Sizes 1, 2, 3: 3, 3 and 1 sets; a budget of 4 tries every set of 1, the largest 2,
    # and could try the one set of 3: k = 2 still rests on the largest 2 alone.
    monkeypatch.setattr(tolerance, "EXACT_SETS", 4)
    found = _k(sim, "auto", [Host("c1"), Host("c2"), Host("c3")])
    assert (found.k, found.limiting, found.exact) == (2, tolerance.NO_HOST, False)

"""The engine's periodic failures tolerated ([capacity] check_interval): the gauges
masakari_segment_failures_tolerated and _to_tolerate, from what the Nova simulator and its
Placement hold."""

from __future__ import annotations

from masakari import metrics
from tests.fakes.placement import Flavor
from tests.support.engine import add_host, add_segment, make_conf, wait_for

LARGE = Flavor("m1.large", vcpus=4, ram=8192, disk=80)


def _gauge(name: str, segment: str) -> float | None:
    return metrics.OWN.get_sample_value(name, {"segment": segment})


def test_the_engine_sets_the_gauges_each_round(sim, db, engine_factory):
    seg = add_segment(db, "auto", name="gauged")
    for name in ("g-1", "g-2", "g-3"):
        sim.add_service(name, vcpus=8)
        sim.add_server(host=name, flavor=LARGE)
        add_host(db, seg, name)
    options = {"capacity.check_interval": 1, "capacity.failures_to_tolerate": 2}
    engine = engine_factory(make_conf(sim, **options))
    assert "failures_tolerated" in [t.name for t in engine.periodic.tasks]
    wait_for(
        lambda: _gauge("masakari_segment_failures_tolerated", "gauged") == 1, 10, "k = 1 shown"
    )
    assert _gauge("masakari_segment_failures_to_tolerate", "gauged") == 2
    # Filled: the next round shows it.
    sim.add_server(host="g-2", flavor=LARGE)
    sim.add_server(host="g-3", flavor=LARGE)
    wait_for(
        lambda: _gauge("masakari_segment_failures_tolerated", "gauged") == 0, 10, "k = 0 shown"
    )


def test_off_by_default(sim, engine_factory):
    engine = engine_factory(make_conf(sim), start=False)
    assert "failures_tolerated" not in [t.name for t in engine.periodic.tasks]

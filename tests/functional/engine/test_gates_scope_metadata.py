"""The bare ``key`` form of [host_failure] scope_include_metadata / scope_exclude_metadata.

docs/configuration.md: an entry ``key=value`` matches that value, a bare ``key`` matches the
key with any value (an empty one too). Through the API and an engine against the simulator,
as in test_guard_storms.py: asserted on what Nova was asked to evacuate.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import storms


@pytest.mark.parametrize("rule", ["include", "exclude"])
def test_a_bare_key_matches_any_value(make_cloud: Any, rule: str) -> None:
    # Both lists hold a key=value entry beside the bare key: the bare one must match alone.
    cloud = make_cloud(4, host_failure={f"scope_{rule}_metadata": "other=x, tier"})
    sim = cloud.dep.sim
    ha = {"HA_Enabled": "True"}
    gold = sim.add_server(host="compute-1", metadata={**ha, "tier": "gold"})
    empty = sim.add_server(host="compute-1", metadata={**ha, "tier": ""})
    # The value named as a key, and the key as a value, are no match.
    untagged = cloud.servers["compute-1"]
    lookalike = sim.add_server(host="compute-1", metadata={**ha, "gold": "tier"})
    sim.power_off("compute-1")
    cloud.start_engine()
    nid = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([nid]) == ["finished"]
    tagged, others = {gold, empty}, {untagged, lookalike}
    moved, left = (tagged, others) if rule == "include" else (others, tagged)
    assert sorted(cloud.evacuated()) == sorted(moved)
    for server in left:
        assert sim.server(server)["OS-EXT-SRV-ATTR:host"] == "compute-1"
        assert (
            f"Instance '{server}' is out of scope ([host_failure] scope_{rule}_metadata): "
            "not evacuated" in storms.messages(cloud, nid)
        )

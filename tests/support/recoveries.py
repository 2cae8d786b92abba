"""A recovery to look at: a host failure with three instances, one of which Nova fails to
evacuate, on an in-process deployment with fast engine options (the timeline and the
failed-task messages read it)."""

from __future__ import annotations

from tests.support.deployment import Deployment, host_down, report, segment_with_host, settle

# Engine options that make a recovery take seconds.
FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "2",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}


def recover(dep: Deployment) -> tuple[str, dict[str, str]]:
    """A host failure with three instances, one of which Nova fails to evacuate."""
    host_down(dep)
    servers = {
        name: dep.sim.add_server(host="compute-1", name=name, metadata={"HA_Enabled": "True"})
        for name in ("web-1", "web-2", "db-1")
    }
    dep.sim.state_fault("evacuate_error", servers["db-1"])
    segment_with_host(dep)
    nid = report(dep)
    settle(dep, nid, timeout=60)
    return nid, servers

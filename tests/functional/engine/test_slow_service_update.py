"""A service update that Nova answers only after its RPC to a dead compute it still counts up
(up to its rpc_response_timeout, 60 s): waited for at the defaults, judged by reading the
service when it timed out anyway; never sent a second time."""

from __future__ import annotations

from typing import Any

import pytest

from masakari.compute import retry
from masakari.compute.nova import NovaClient
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    add_host,
    add_segment,
    make_conf,
    notify,
    wait_status,
)

REASON = "Masakari detected process failed."
RPC_WAIT = 60.0


@pytest.fixture
def sim() -> NovaSimulator:
    """In process: the held answer is a read time-out for a client whose timeout is not
    longer, without waiting on the wall clock. The host's compute is dead, and Nova counts
    it up for the whole test."""
    simulator = NovaSimulator(rpc_response_timeout=RPC_WAIT, service_down_time=3600)
    simulator.add_service("compute-1")
    simulator.power_off("compute-1")
    return simulator


def _recover(db: Any, sim: NovaSimulator, engine_factory: Any, **overrides: Any) -> list[str]:
    """A nova-compute process failure of compute-1, recovered by an engine whose Nova client
    is built from the options (nova_api_timeout shorter than Nova's RPC wait); the calls."""
    host = add_host(db, add_segment(db), "compute-1")
    nid = notify(db, host, "PROCESS", {"event": "STOPPED", "process_name": "nova-compute"})
    conf = make_conf(sim, nova_api_timeout=5, **overrides)
    engine_factory(conf, nova=NovaClient.from_conf(conf, retry.ENGINE))
    assert wait_status(db, nid) == "finished"
    service = sim.service("compute-1")
    assert (service["status"], service["disabled_reason"]) == ("disabled", REASON)
    puts = [(c["body"], c["status"]) for c in sim.nova_calls() if c["method"] == "PUT"]
    assert puts == [({"status": "disabled", "disabled_reason": REASON}, 200)]
    return [f"{c['method']} {c['path']}" for c in sim.nova_calls()]


def test_the_disable_is_waited_for_at_the_defaults(db, sim, engine_factory):
    """nova_service_update_timeout (120 s) outlasts Nova's RPC wait: one PUT, answered, and
    the recovery's own confirmation read after it."""
    put = "PUT /os-services/" + sim.service("compute-1")["id"]
    calls = _recover(db, sim, engine_factory)
    assert calls == ["GET /os-services", "GET /os-services", put, "GET /os-services"]


def test_a_disable_that_timed_out_is_judged_by_reading_the_service(db, sim, engine_factory):
    """With a service update timeout shorter than Nova's RPC wait the PUT times out; the
    service already shows disabled, so it is not sent again and the recovery goes on."""
    put = "PUT /os-services/" + sim.service("compute-1")["id"]
    calls = _recover(db, sim, engine_factory, nova_service_update_timeout=RPC_WAIT / 2)
    # one read more than at the defaults: the check of the change that timed out
    assert calls == [
        "GET /os-services",
        "GET /os-services",
        put,
        "GET /os-services",
        "GET /os-services",
    ]

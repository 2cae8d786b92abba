"""[host_return] return_reserved_hosts: Nova is asked again after the spare is disabled.

An instance Nova places on the spare between masakari's first look (empty) and the disable
keeps the spare in service: not reserved again, and its nova-compute enabled again when
masakari disabled it, left as it is when someone else had. As in
test_guard_spares_and_safety.py: through the API and an engine against the simulator.
"""

from __future__ import annotations

from typing import Any

import pytest

from masakari.engine.recovery import host_return
from tests.fakes.nova import NovaSimulator, Request
from tests.support import storms

SPARE = "compute-4"


def _place_after_first_look(sim: NovaSimulator, host: str) -> list[str]:
    """Once Nova has answered the first listing of ``host``'s servers, a server lands there
    (the scheduler placed one, its spare being enabled): the ids placed."""
    answer = sim.handle_nova
    placed: list[str] = []

    def handle(req: Request) -> tuple[int, Any]:
        result = answer(req)
        listing = req.method == "GET" and req.parts == ["servers", "detail"]
        if listing and req.params.get("host") == host and not placed:
            placed.append(sim.add_server(host=host))
        return result

    sim.handle_nova = handle  # type: ignore[method-assign]
    return placed


def _spare_puts(cloud: storms.Cloud, service_id: str) -> list[Any]:
    return [
        c["body"]
        for c in cloud.dep.sim.nova_calls()
        if c["method"] == "PUT" and c["path"] == f"/os-services/{service_id}"
    ]


@pytest.mark.parametrize("disabled_by", [None, "hardware swap"], ids=["enabled", "disabled"])
def test_an_instance_placed_during_the_return_keeps_the_spare(
    make_cloud: Any, disabled_by: str | None
) -> None:
    cloud = make_cloud(4, host_return={"return_reserved_hosts": "true"})
    storms.with_spare(cloud, SPARE)
    sim = cloud.dep.sim
    sim.power_off("compute-1")
    cloud.start_engine()
    down = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([down]) == ["finished"]
    moved = cloud.servers["compute-1"]
    # The operator moved the instance home again: at first sight the spare is empty.
    with sim.lock:
        next(s for s in sim.servers if s.id == moved).host = "compute-1"
        service = next(s for s in sim.services if s.host == SPARE)
        if disabled_by is not None:
            service.status, service.disabled_reason = "disabled", disabled_by
    service_id = sim.service(SPARE)["id"]
    sim.power_on("compute-1")
    sim.clear_calls()
    placed = _place_after_first_look(sim, SPARE)
    back = cloud.report("compute-1", event="STARTED")["notification_uuid"]
    assert cloud.wait_final([back]) == ["finished"]

    assert len(placed) == 1
    looks = [
        c
        for c in sim.nova_calls()
        if c["path"] == "/servers/detail" and ["host", SPARE] in c["query"]
    ]
    assert len(looks) == 2
    assert storms.host_rows(cloud)[SPARE].reserved is False
    assert (
        f"Reserved host '{SPARE}' still hosts 1 instances: not returned to the reserved pool"
        in storms.messages(cloud, back)
    )
    if disabled_by is None:
        # Disabled for the pool, then enabled again for the instance that arrived.
        assert _spare_puts(cloud, service_id) == [
            {"status": "disabled", "disabled_reason": host_return.SPARE_DISABLE_REASON},
            {"status": "enabled"},
        ]
        assert sim.service(SPARE)["status"] == "enabled"
    else:
        # Someone else's disable is theirs: never touched.
        assert _spare_puts(cloud, service_id) == []
        assert (sim.service(SPARE)["status"], sim.service(SPARE)["disabled_reason"]) == (
            "disabled",
            disabled_by,
        )

"""The Nova simulator's rules: heartbeats, forced_down, evacuations that take time, faults."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from masakari import exception
from masakari.compute.nova import NovaClient, NovaRequestError
from masakari.compute.retry import Policy
from tests.fakes import nova as fake_nova
from tests.fakes.nova import (
    ADMIN_PROJECT_ID,
    ADMIN_TOKEN,
    MEMBER_TOKEN,
    FakeClock,
    NovaSimulator,
)

VM = "b2000000-0000-4000-8000-000000000001"

# The simulator's answers as they come: no client retry hides one.
FAST = Policy(connect_retries=0, retries=0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[NovaSimulator]:
    with NovaSimulator(clock=clock) as s:
        for host in ("compute-1", "compute-2", "compute-3"):
            s.add_service(host)
        s.add_server(VM, host="compute-1")
        yield s


@pytest.fixture
def nova(sim: NovaSimulator) -> NovaClient:
    return sim.client(timeout=5, policy=FAST)


def _status(call: Any) -> int | None:
    with pytest.raises(exception.NovaError) as err:
        call()
    return err.value.status


# --- heartbeats ---------------------------------------------------------------------------


def test_a_powered_off_host_is_down_after_service_down_time(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    sim.power_off("compute-1")
    clock.advance(60)
    assert nova.get_compute_service("compute-1").state == "up"
    clock.advance(0.5)
    svc = nova.get_compute_service("compute-1")
    assert svc.state == "down"
    # updated_at stays at the last heartbeat while the host is off
    assert sim.service("compute-1")["updated_at"] == "2026-01-01T00:00:00.000000"
    sim.power_on("compute-1")
    assert nova.get_compute_service("compute-1").state == "up"


def test_service_down_time_is_configurable(clock: FakeClock) -> None:
    with NovaSimulator(clock=clock, service_down_time=5) as sim:
        sim.add_service("compute-1")
        sim.power_off("compute-1")
        clock.advance(4)
        assert sim.service("compute-1")["state"] == "up"
        clock.advance(2)
        assert sim.service("compute-1")["state"] == "down"


def test_a_service_added_down(sim: NovaSimulator) -> None:
    sim.add_service("compute-9", state="down")
    assert sim.service("compute-9")["state"] == "down"


def test_forced_down_is_down_at_once(sim: NovaSimulator, nova: NovaClient) -> None:
    svc = nova.get_compute_service("compute-1")
    assert _status(lambda: nova.evacuate(VM)) == 400
    nova.force_down_service(svc.id)
    assert nova.get_compute_service("compute-1").state == "down"
    nova.evacuate(VM)
    assert sim.server(VM)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    nova.force_down_service(svc.id, False)
    assert nova.get_compute_service("compute-1").forced_down is False
    assert nova.get_compute_service("compute-1").state == "up"


def test_service_updates(sim: NovaSimulator, nova: NovaClient) -> None:
    svc = nova.get_compute_service("compute-1").id
    nova.disable_service(svc, "Masakari detected host failed.")
    assert sim.service("compute-1")["disabled_reason"] == "Masakari detected host failed."
    nova.enable_service(svc)
    assert (sim.service("compute-1")["status"], sim.service("compute-1")["disabled_reason"]) == (
        "enabled",
        None,
    )
    assert _status(lambda: nova.enable_service("00000000-0000-4000-8000-000000000000")) == 404


def test_a_service_id_that_is_no_uuid_is_refused_first(nova: NovaClient) -> None:
    """Nova checks the id's form before looking it up: 400, even for a host's name."""
    for sid in ("no-such-service", "compute-1"):
        with pytest.raises(NovaRequestError) as err:
            nova.disable_service(sid)
        assert err.value.status == 400
        assert err.value.detail.startswith(f"Invalid uuid {sid} (HTTP 400)")


def test_an_unknown_service_is_not_found_in_novas_words(nova: NovaClient) -> None:
    unknown = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NovaRequestError) as err:
        nova.disable_service(unknown)
    assert err.value.status == 404
    assert err.value.detail.startswith(f"Service {unknown} could not be found. (HTTP 404)")


def test_service_update_needs_2_53(sim: NovaSimulator) -> None:
    svc = sim.service("compute-1")["id"]
    resp = requests.put(
        f"{sim.compute_url}/os-services/{svc}",
        json={"status": "disabled"},
        headers={"X-Auth-Token": ADMIN_TOKEN, "X-OpenStack-Nova-API-Version": "2.52"},
        timeout=5,
    )
    assert resp.status_code == 404
    assert sim.service("compute-1")["status"] == "enabled"


# --- evacuation ---------------------------------------------------------------------------


def _fail_host(sim: NovaSimulator, clock: FakeClock, host: str = "compute-1") -> None:
    sim.power_off(host)
    clock.advance(sim.service_down_time + 1)


def test_evacuation_takes_time(clock: FakeClock) -> None:
    with NovaSimulator(clock=clock, evacuate_delay=30) as sim:
        sim.add_service("compute-1")
        sim.add_service("compute-2")
        sim.add_server(VM, host="compute-1", vm_state="error")
        nova = sim.client()
        _fail_host(sim, clock)
        nova.evacuate(VM)
        server = nova.get_server(VM)
        assert (server.host, server.task_state) == (
            "compute-1",
            "rebuilding",
        )
        assert _status(lambda: nova.evacuate(VM)) == 409
        clock.advance(29.9)
        assert nova.get_server(VM).task_state == "rebuilding"
        clock.advance(0.1)
        server = nova.get_server(VM)
        assert server.host == "compute-2"
        assert (server.vm_state, server.task_state) == ("active", None)
        assert server.power_state == 1


def _dues(seed: int) -> list[float]:
    clock = FakeClock()
    with NovaSimulator(clock=clock, evacuate_delay=(10, 20), seed=seed) as sim:
        sim.add_service("compute-1", state="down")
        sim.add_service("compute-2")
        for i in range(5):
            sim.add_server(f"c0000000-0000-4000-8000-00000000000{i}", host="compute-1")
        nova = sim.client()
        for s in sim.servers:
            nova.evacuate(s.id)
        return [e.due - sim.now() for e in sim.evacuations]


def test_evacuations_past_the_limit_wait_for_a_slot(clock: FakeClock) -> None:
    with NovaSimulator(clock=clock, evacuate_delay=10, evacuation_limit=2) as sim:
        sim.add_service("compute-1", state="down")
        sim.add_service("compute-2")
        ids = [f"c0000000-0000-4000-8000-00000000000{i}" for i in range(3)]
        for sid in ids:
            sim.add_server(sid, host="compute-1")
        nova = sim.client()
        for sid in ids:
            nova.evacuate(sid)  # all accepted: Nova queues what it cannot run yet

        def hosts() -> list[str]:
            return [nova.get_server(sid).host for sid in ids]

        assert sim.max_evacuations_in_flight == 3
        clock.advance(10)
        assert hosts() == ["compute-2", "compute-2", "compute-1"]
        # the third started when the first two ended, 10 s after its request
        clock.advance(9.9)
        assert hosts()[2] == "compute-1"
        clock.advance(0.1)
        assert hosts()[2] == "compute-2"


def test_evacuation_delays_come_from_a_seeded_generator() -> None:
    first = _dues(7)
    assert first == _dues(7)
    assert first != _dues(8)
    assert all(10 <= d <= 20 for d in first)
    assert len(set(first)) == 5


def test_the_destination_must_be_running(sim: NovaSimulator, clock: FakeClock) -> None:
    """A destination that dies before the rebuild keeps the instance rebuilding until it is
    back, as Nova's cast to a dead compute waits in the queue."""
    sim.set_evacuate_delay(10)
    _fail_host(sim, clock)
    sim.client().evacuate(VM, "compute-3")
    sim.power_off("compute-3")
    clock.advance(20)
    assert sim.server(VM)["OS-EXT-STS:task_state"] == "rebuilding"
    sim.power_on("compute-3")
    server = sim.server(VM)
    assert (server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-STS:task_state"]) == ("compute-3", None)


def test_no_valid_destination_leaves_the_instance_in_error(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    """As a real Nova 34: the evacuation is accepted (200), the conductor finds no host, the
    instance is in error on its host with no task, and its evacuate action ends in Error."""
    for host in ("compute-2", "compute-3"):
        nova.disable_service(nova.get_compute_service(host).id, "maintenance")
    _fail_host(sim, clock)
    nova.evacuate(VM)
    server = nova.get_server(VM)
    assert (server.host, server.vm_state, server.task_state) == ("compute-1", "error", None)
    assert sim.server(VM)["status"] == "ERROR"
    assert [(a.action, a.message) for a in nova.list_instance_actions(VM)] == [
        ("evacuate", "Error")
    ]
    assert sim.evacuations_accepted == {VM: 1}


def test_evacuate_to_an_unknown_host_in_novas_words(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    """The evacuate API words its 404 itself, not as ComputeHostNotFound."""
    _fail_host(sim, clock)
    with pytest.raises(NovaRequestError) as err:
        nova.evacuate(VM, "compute-9")
    assert err.value.detail.startswith("Compute host compute-9 not found. (HTTP 404)")


def test_evacuate_target_checks(sim: NovaSimulator, clock: FakeClock, nova: NovaClient) -> None:
    _fail_host(sim, clock)
    assert _status(lambda: nova.evacuate(VM, "compute-9")) == 404
    assert _status(lambda: nova.evacuate(VM, "compute-1")) == 400
    nova.evacuate(VM, "compute-3")
    assert sim.server(VM)["OS-EXT-SRV-ATTR:host"] == "compute-3"


@pytest.mark.parametrize(
    "vm_state,task_state,status",
    [("paused", None, 409), ("active", "rebooting", 409), ("stopped", None, 200)],
)
def test_evacuate_needs_a_steady_state(
    sim: NovaSimulator, clock: FakeClock, vm_state: str, task_state: str | None, status: int
) -> None:
    sid = sim.add_server(host="compute-1", vm_state=vm_state, task_state=task_state)
    _fail_host(sim, clock)
    nova = sim.client()
    if status == 200:
        nova.evacuate(sid)
        assert sim.server(sid)["OS-EXT-STS:power_state"] == 4
    else:
        assert _status(lambda: nova.evacuate(sid)) == status


# --- server actions -----------------------------------------------------------------------


def test_stop_start_reset(sim: NovaSimulator, nova: NovaClient) -> None:
    assert _status(lambda: nova.start_server(VM)) == 409
    nova.stop_server(VM)
    assert sim.server(VM)["OS-EXT-STS:vm_state"] == "stopped"
    assert _status(lambda: nova.stop_server(VM)) == 409
    nova.start_server(VM)
    assert sim.server(VM)["OS-EXT-STS:power_state"] == 1
    assert _status(lambda: nova.reset_state(VM, "deleted")) == 400
    nova.reset_state(VM, "error")
    assert sim.server(VM)["status"] == "ERROR"
    nova.lock_server(VM)
    assert nova.get_server(VM).locked is True
    nova.unlock_server(VM)
    assert nova.get_server(VM).locked is False
    assert _status(lambda: nova.get_server("no-such-vm")) == 404


def test_aggregates(sim: NovaSimulator, nova: NovaClient) -> None:
    sim.add_aggregate(1, "agg1", ["compute-1"])
    nova.add_host_to_aggregate(1, "compute-2")
    assert nova.list_aggregates()[0].hosts == ("compute-1", "compute-2")
    assert _status(lambda: nova.add_host_to_aggregate(1, "compute-2")) == 409
    assert _status(lambda: nova.add_host_to_aggregate(1, "compute-9")) == 404
    assert _status(lambda: nova.add_host_to_aggregate(7, "compute-3")) == 404


# --- faults -------------------------------------------------------------------------------


def test_status_fault_times(sim: NovaSimulator, nova: NovaClient) -> None:
    sim.fail(503, method="GET", path="/servers/{id}", times=2)
    assert _status(lambda: nova.get_server(VM)) == 503
    assert _status(lambda: nova.get_server(VM)) == 503
    assert nova.get_server(VM).id == VM
    assert [c["status"] for c in sim.nova_calls()] == [503, 503, 200]


def test_status_fault_for_one_server_and_action(sim: NovaSimulator, nova: NovaClient) -> None:
    other = sim.add_server(host="compute-1")
    sim.fail(500, action="os-stop", server=VM, message="boom")
    nova.stop_server(other)
    nova.lock_server(VM)
    with pytest.raises(NovaRequestError) as err:
        nova.stop_server(VM)
    assert str(err.value).startswith("boom (HTTP 500) (Request-ID: req-")


def test_applied_fault_changes_state(sim: NovaSimulator, nova: NovaClient) -> None:
    sim.fail(409, action="os-stop", apply=True, times=1)
    assert _status(lambda: nova.stop_server(VM)) == 409
    assert sim.server(VM)["OS-EXT-STS:vm_state"] == "stopped"


def test_state_faults(sim: NovaSimulator, clock: FakeClock, nova: NovaClient) -> None:
    stuck = sim.add_server(host="compute-1")
    broken = sim.add_server(host="compute-1")
    sim.state_fault("never_move", stuck)
    sim.state_fault("evacuate_error", broken)
    sim.state_fault("ignore_action", VM, action="os-stop")
    nova.stop_server(VM)
    assert sim.server(VM)["OS-EXT-STS:vm_state"] == "active"
    _fail_host(sim, clock)
    nova.evacuate(stuck)
    nova.evacuate(broken)
    assert sim.server(stuck)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert sim.server(broken)["OS-EXT-STS:vm_state"] == "error"
    assert sim.server(broken)["OS-EXT-SRV-ATTR:host"] == "compute-1"


def test_slow_answers_still_take_effect(sim: NovaSimulator) -> None:
    sim.slow(0.3, action="lock", times=1)
    nova = sim.client(timeout=0.1, policy=FAST)
    assert _status(lambda: nova.lock_server(VM)) is None
    nova = sim.client(timeout=5)
    # the slow request is processed once its delay is over
    for _ in range(50):
        if nova.get_server(VM).locked:
            break
        time.sleep(0.02)
    assert nova.get_server(VM).locked is True


def test_clear_faults(sim: NovaSimulator, nova: NovaClient) -> None:
    sim.fail(500)
    assert _status(lambda: nova.list_aggregates()) == 500
    sim.clear_faults()
    assert nova.list_aggregates() == []


# --- records, tokens, loading -------------------------------------------------------------


def test_calls_record_the_microversion_of_either_header(sim: NovaSimulator) -> None:
    url = f"{sim.compute_url}/servers/{VM}"
    for headers in (
        {"OpenStack-API-Version": "compute 2.60"},
        {"X-OpenStack-Nova-API-Version": "2.61"},
        {},
    ):
        resp = requests.get(url, headers={"X-Auth-Token": ADMIN_TOKEN, **headers}, timeout=5)
        assert resp.status_code == 200
        assert resp.headers["x-openstack-request-id"].startswith("req-")
    requests.get(sim.compute_url + "/", timeout=5)  # version discovery is not recorded
    assert [c["microversion"] for c in sim.nova_calls()] == ["2.60", "2.61", None]


def test_tokens(sim: NovaSimulator) -> None:
    url = sim.auth_url + "/auth/tokens"

    def validate(subject: str, caller: str = ADMIN_TOKEN) -> requests.Response:
        return requests.get(
            url, headers={"X-Auth-Token": caller, "X-Subject-Token": subject}, timeout=5
        )

    admin = validate(ADMIN_TOKEN).json()["token"]
    assert [r["name"] for r in admin["roles"]] == ["admin", "member"]
    assert admin["project"]["id"] == ADMIN_PROJECT_ID
    assert {e["type"] for e in admin["catalog"]} == {"compute", "identity", "placement"}
    member = validate(MEMBER_TOKEN)
    assert member.headers["X-Subject-Token"] == MEMBER_TOKEN
    assert "admin" not in [r["name"] for r in member.json()["token"]["roles"]]
    assert validate("bogus").status_code == 404
    assert validate(ADMIN_TOKEN, caller="bogus").status_code == 401
    issued = sim.session().get_token()
    assert issued is not None
    assert validate(issued).status_code == 200
    assert requests.get(sim.base_url + "/identity", timeout=5).status_code == 300


def test_member_token_is_refused_admin_apis(sim: NovaSimulator) -> None:
    headers = {"X-Auth-Token": MEMBER_TOKEN, "X-OpenStack-Nova-API-Version": "2.53"}
    resp = requests.get(f"{sim.compute_url}/os-services", headers=headers, timeout=5)
    assert resp.status_code == 403
    assert resp.json() == {
        "forbidden": {
            "code": 403,
            "message": "Policy does not allow os_compute_api:os-services:list to be performed.",
        }
    }
    assert requests.get(f"{sim.compute_url}/servers/{VM}", headers=headers, timeout=5).ok
    resp = requests.get(f"{sim.compute_url}/servers/{VM}", timeout=5)
    assert resp.status_code == 401


def test_load_a_conformance_nova_section(clock: FakeClock) -> None:
    spec = {
        "services": [
            {"host": "compute-1", "binary": "nova-compute", "status": "enabled", "state": "down"},
            {"host": "compute-2", "binary": "nova-compute", "status": "enabled", "state": "up"},
        ],
        "servers": [
            {"id": VM, "name": "vm1", "host": "compute-1", "vm_state": "active",
             "task_state": None, "power_state": 1, "locked": False,
             "metadata": {"HA_Enabled": "True"}, "user_id": "u"},
        ],
        "aggregates": [{"id": 1, "name": "agg1", "hosts": ["compute-1"]}],
        "faults": [
            {"method": "POST", "path": "/servers/{id}/action", "action": "evacuate",
             "status": 500, "times": 1},
            {"kind": "never_move", "server": VM},
        ],
        "evacuate_delay": {"min": 1, "max": 2, "seed": 3},
    }  # fmt: skip
    with NovaSimulator(clock=clock) as sim:
        sim.load(spec)
        nova = sim.client()
        assert _status(lambda: nova.evacuate(VM)) == 500
        nova.evacuate(VM)
        clock.advance(5)
        assert sim.snapshot() == {
            "servers": {VM: {"host": "compute-1", "vm_state": "active", "locked": False}},
            "services": {
                "compute-1/nova-compute": {"status": "enabled", "disabled_reason": None},
                "compute-2/nova-compute": {"status": "enabled", "disabled_reason": None},
            },
            "aggregates": {"1": ["compute-1"]},
        }


def test_unknown_paths(sim: NovaSimulator) -> None:
    headers = {"X-Auth-Token": ADMIN_TOKEN}
    resp = requests.get(f"{sim.compute_url}/os-hypervisors", headers=headers, timeout=5)
    assert (resp.status_code, list(resp.json())) == (404, ["itemNotFound"])
    resp = requests.delete(f"{sim.compute_url}/os-services", headers=headers, timeout=5)
    assert (resp.status_code, list(resp.json())) == (405, ["badMethod"])
    assert requests.get(sim.base_url + "/elsewhere", timeout=5).status_code == 404


# --- the flaky mode ---------------------------------------------------------------------------


def _kinds(sim: NovaSimulator, n: int, seed: int) -> list[str | None]:
    sim.flaky(reset=0.2, unavailable=0.2, late=0.1, late_seconds=0.3, seed=seed)
    nova = sim.client(timeout=0.1, policy=FAST)
    for _ in range(n):
        try:
            nova.get_server(VM)
        except exception.NovaError:
            pass
    with sim.lock:
        kinds = [c.fault for c in sim.calls[-n:]]
    sim.flaky()
    return kinds


def test_flaky_mode_is_seeded(sim: NovaSimulator) -> None:
    first = _kinds(sim, 30, seed=7)
    second = _kinds(sim, 30, seed=7)
    assert first == second
    assert {"reset", "unavailable", "late", None} <= set(first)


def test_flaky_reset_and_unavailable_come_before_acting(sim: NovaSimulator) -> None:
    nova = sim.client(timeout=2, policy=FAST)
    sim.flaky(reset=1.0)
    with pytest.raises(exception.NovaError) as err:
        nova.lock_server(VM)
    assert err.value.status is None
    sim.flaky(unavailable=1.0)
    assert _status(lambda: nova.lock_server(VM)) == 503
    sim.flaky()
    assert nova.get_server(VM).locked is False
    assert [c["status"] for c in sim.nova_calls()] == [599, 503, 200]


def test_flaky_late_answers_come_after_acting(sim: NovaSimulator) -> None:
    sim.flaky(late=1.0, late_seconds=0.5)
    with pytest.raises(exception.NovaTimeout):
        sim.client(timeout=0.1, policy=FAST).lock_server(VM)
    sim.flaky()
    assert sim.client(policy=FAST).get_server(VM).locked is True


def test_flaky_evacuations_are_counted_when_acted_on(sim: NovaSimulator) -> None:
    sim.add_service("compute-9", state="down")
    vm = sim.add_server(host="compute-9")
    nova = sim.client(timeout=0.1, policy=FAST)
    sim.flaky(unavailable=1.0)
    assert _status(lambda: nova.evacuate(vm)) == 503
    sim.flaky(late=1.0, late_seconds=0.3)
    assert _status(lambda: nova.evacuate(vm)) is None
    assert sim.evacuations_accepted == {vm: 1}


def test_connections_beyond_the_limit_wait_for_a_free_one() -> None:
    with NovaSimulator(max_connections=1) as sim:
        sim.add_service("compute-1")
        held = sim.client(policy=FAST)
        held.find_compute_services("compute-1")  # keeps its connection open (keep-alive)
        other = sim.client(timeout=10, policy=FAST)
        started = time.monotonic()
        assert other.find_compute_services("compute-1")
        # served once the idle one was closed by the server
        assert time.monotonic() - started >= fake_nova.IDLE_TIMEOUT * 0.9
        assert sim.queued_connections >= 1


# --- instance actions ---------------------------------------------------------------------


def test_instance_actions_of_one_instant_list_the_last_recorded_first(
    sim: NovaSimulator, nova: NovaClient
) -> None:
    """Nova sorts by created_at, then by id: actions recorded at the same time (the fake clock
    stands still) still list newest first."""
    nova.lock_server(VM)
    nova.stop_server(VM)
    nova.unlock_server(VM)
    assert [a.action for a in nova.list_instance_actions(VM)] == ["unlock", "stop", "lock"]


def test_reset_state_is_an_instance_action(sim: NovaSimulator, nova: NovaClient) -> None:
    """Nova records os-resetState as the action "resetState"; a refused state records none."""
    assert _status(lambda: nova.reset_state(VM, "deleted")) == 400
    nova.reset_state(VM, "error")
    assert [a.action for a in nova.list_instance_actions(VM)] == ["resetState"]


def test_lock_unlock_stop_and_start_record_their_events(
    sim: NovaSimulator, nova: NovaClient
) -> None:
    """The API's api_lock and api_unlock, the compute's compute_stop_instance and
    compute_start_instance, each a success; a reset-state records no event."""
    nova.lock_server(VM)
    nova.stop_server(VM)
    nova.start_server(VM)
    nova.unlock_server(VM)
    nova.reset_state(VM, "error")
    shown = [
        (a.action, [e["event"] for e in _action(sim, VM, a.request_id, "2.84")["events"]])
        for a in reversed(nova.list_instance_actions(VM))
    ]
    assert shown == [
        ("lock", ["api_lock"]),
        ("stop", ["compute_stop_instance"]),
        ("start", ["compute_start_instance"]),
        ("unlock", ["api_unlock"]),
        ("resetState", []),
    ]
    events = _action(sim, VM, nova.list_instance_actions(VM)[-1].request_id, "2.84")["events"]
    assert [(e["result"], e["details"]) for e in events] == [("Success", None)]


def test_instance_actions_record_what_nova_accepted(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    """Nova records an accepted request before carrying it out, newest first; a refused one
    leaves no action. From 2.58 an action has updated_at and the list pages by limit and
    marker."""
    assert _status(lambda: nova.evacuate(VM)) == 400  # its host is up: refused, not recorded
    nova.lock_server(VM)
    sim.power_off("compute-1")
    clock.advance(120)
    nova.evacuate(VM)
    actions = nova.list_instance_actions(VM)
    assert [a.action for a in actions] == ["evacuate", "lock"]
    assert actions[0].start_time is not None and actions[1].start_time is not None
    assert actions[0].start_time - actions[1].start_time == datetime.timedelta(seconds=120)
    url = f"{sim.compute_url}/servers/{VM}/os-instance-actions"

    def listed(version: str, query: str = "") -> list[dict[str, Any]]:
        headers = {"X-Auth-Token": ADMIN_TOKEN, "OpenStack-API-Version": f"compute {version}"}
        resp = requests.get(url + query, headers=headers, timeout=5)
        assert resp.status_code == 200, resp.text
        return list(resp.json()["instanceActions"])

    old = listed("2.53", "?limit=1")  # no paging before 2.58
    assert [(a["action"], "updated_at" in a, a["instance_uuid"]) for a in old] == [
        ("evacuate", False, VM),
        ("lock", False, VM),
    ]
    first = listed("2.58", "?limit=1")
    assert [(a["action"], "updated_at" in a) for a in first] == [("evacuate", True)]
    rest = listed("2.58", f"?limit=1&marker={first[0]['request_id']}")
    assert [a["action"] for a in rest] == ["lock"]


def _action(sim: NovaSimulator, server: str, request_id: str, version: str) -> dict[str, Any]:
    resp = requests.get(
        f"{sim.compute_url}/servers/{server}/os-instance-actions/{request_id}",
        headers={"X-Auth-Token": ADMIN_TOKEN, "OpenStack-API-Version": f"compute {version}"},
        timeout=5,
    )
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["instanceAction"])


def test_a_failed_evacuation_shows_its_error_event(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    """The conductor's rebuild_server event ends in Error with NoValidHost; an admin sees the
    events at any microversion, with the traceback, details only from 2.84."""
    for host in ("compute-2", "compute-3"):
        nova.disable_service(nova.get_compute_service(host).id, "maintenance")
    _fail_host(sim, clock)
    nova.evacuate(VM)
    (action,) = nova.list_instance_actions(VM)
    shown = _action(sim, VM, action.request_id, "2.53")
    assert (shown["action"], shown["message"], shown["instance_uuid"]) == ("evacuate", "Error", VM)
    (event,) = shown["events"]
    assert (event["event"], event["result"]) == ("rebuild_server", "Error")
    assert "NoValidHost" in event["traceback"]
    assert "details" not in event
    assert _action(sim, VM, action.request_id, "2.84")["events"][0]["details"]


def test_a_successful_evacuation_shows_its_events(clock: FakeClock) -> None:
    """rebuild_server (the conductor) when accepted, compute_rebuild_instance once the
    instance is rebuilt on its destination, then compute_stop_instance for a stopped one;
    the action's message stays null. A stopped instance stays stopped, one in error comes
    back active, a locked one stays locked."""
    with NovaSimulator(clock=clock, evacuate_delay=30) as sim:
        sim.add_service("compute-1")
        sim.add_service("compute-2")
        stopped = sim.add_server(host="compute-1", vm_state="stopped")
        broken = sim.add_server(host="compute-1", vm_state="error", locked=True)
        nova = sim.client()
        _fail_host(sim, clock)
        nova.evacuate(stopped)
        nova.evacuate(broken)
        (action,) = nova.list_instance_actions(stopped)
        events = _action(sim, stopped, action.request_id, "2.53")["events"]
        assert [(e["event"], e["result"]) for e in events] == [("rebuild_server", "Success")]
        clock.advance(31)
        rebuilt = [("rebuild_server", "Success"), ("compute_rebuild_instance", "Success")]
        for sid, status, events in (
            (stopped, "SHUTOFF", [*rebuilt, ("compute_stop_instance", "Success")]),
            (broken, "ACTIVE", rebuilt),
        ):
            server = sim.server(sid)
            assert (server["OS-EXT-SRV-ATTR:host"], server["status"]) == ("compute-2", status)
            (action,) = nova.list_instance_actions(sid)
            shown = _action(sim, sid, action.request_id, "2.53")
            assert shown["message"] is None
            assert [(e["event"], e["result"]) for e in shown["events"]] == events
        assert sim.server(broken)["locked"] is True


def test_evacuate_checks_its_target_before_the_state_and_the_source(
    sim: NovaSimulator, nova: NovaClient
) -> None:
    """As Nova's evacuate API: an unknown target (404) or the server's own host (400) is
    refused before the server's state or its source still counted up are looked at."""
    nova.reset_state(VM, "error")
    sim.update_server(VM, task_state="rebuilding")  # a state evacuate would refuse (409)
    for target, status, said in (
        ("nowhere", 404, "Compute host nowhere not found."),
        ("compute-1", 400, "The target host can't be the same one."),
    ):
        with pytest.raises(NovaRequestError) as err:
            nova.evacuate(VM, target)
        assert (err.value.status, said in err.value.detail) == (status, True)
    with pytest.raises(NovaRequestError) as err:
        nova.evacuate(VM, "compute-2")
    assert err.value.status == 409


def test_a_host_move_lag_shows_a_rebuilt_server_on_its_failed_host_a_moment(
    clock: FakeClock,
) -> None:
    """With host_move_lag, as in a real Nova, the rebuilt server's task clears (its event
    recorded) before its host changes; by default both happen at once."""
    with NovaSimulator(clock=clock, evacuate_delay=30) as sim:
        sim.add_service("compute-1")
        sim.add_service("compute-2")
        sim.host_move_lag = 5
        vm = sim.add_server(host="compute-1")
        nova = sim.client()
        _fail_host(sim, clock)
        nova.evacuate(vm)

        def seen() -> tuple[str | None, str | None, str]:
            server = nova.get_server(vm)
            return server.compute_host, server.task_state, server.vm_state

        clock.advance(31)
        assert seen() == ("compute-1", None, "active")
        clock.advance(5)
        assert seen() == ("compute-2", None, "active")


def test_evacuating_from_a_dead_host_nova_still_counts_up_is_refused(
    sim: NovaSimulator, clock: FakeClock, nova: NovaClient
) -> None:
    """Powered off, the host is up for Nova until service_down_time has passed: 400."""
    sim.power_off("compute-1")
    clock.advance(sim.service_down_time - 1)
    with pytest.raises(NovaRequestError) as err:
        nova.evacuate(VM)
    assert err.value.status == 400
    assert "Compute service of compute-1 is still in use." in err.value.detail
    assert nova.list_instance_actions(VM) == []


# --- the service update's RPC to a dead compute -------------------------------------------


@pytest.fixture
def rpc_sim(clock: FakeClock) -> NovaSimulator:
    """In process (no socket, no wall clock): an answer held ``rpc_response_timeout`` is a
    read time-out for a client whose timeout is not longer."""
    sim = NovaSimulator(clock=clock, rpc_response_timeout=60)
    for host in ("compute-1", "compute-2"):
        sim.add_service(host)
    return sim


def _update(sim: NovaSimulator, timeout: float, body: dict[str, Any]) -> int | None:
    nova = sim.client(timeout=timeout, policy=FAST)
    svc = sim.service("compute-1")["id"]
    try:
        nova._call("PUT", f"/os-services/{svc}", body=body)
    except exception.NovaError as exc:
        return exc.status
    return 200


def test_disabling_a_dead_compute_nova_counts_up_waits_for_the_rpc(
    rpc_sim: NovaSimulator, clock: FakeClock
) -> None:
    """Saved first, answered after rpc_response_timeout: a client waiting less times out
    (status None) with the change made; one waiting longer gets the 200."""
    rpc_sim.power_off("compute-1")
    clock.advance(10)  # dead, still up for Nova
    assert _update(rpc_sim, 30, {"status": "disabled", "disabled_reason": "failed"}) is None
    service = rpc_sim.service("compute-1")
    assert (service["status"], service["disabled_reason"], service["state"]) == (
        "disabled",
        "failed",
        "up",
    )
    # the same value again: Nova still makes the call
    assert _update(rpc_sim, 30, {"status": "disabled"}) is None
    assert _update(rpc_sim, 61, {"status": "enabled"}) == 200
    assert rpc_sim.service("compute-1")["status"] == "enabled"
    assert [c["status"] for c in rpc_sim.nova_calls()] == [200, 200, 200]


@pytest.mark.parametrize(
    "case", ["alive", "counted down", "forced down", "forced_down only", "forced with status"]
)
def test_service_updates_answer_at_once_without_a_waiting_rpc(
    rpc_sim: NovaSimulator, clock: FakeClock, case: str
) -> None:
    """Nova skips the RPC for a service it counts down (forced_down included, even set in the
    same request) or when "disabled" is not set; a live compute answers it at once."""
    body: dict[str, Any] = {"status": "disabled"}
    if case != "alive":
        rpc_sim.power_off("compute-1")
    if case == "counted down":
        clock.advance(rpc_sim.service_down_time + 1)
    if case == "forced down":
        assert _update(rpc_sim, 30, {"forced_down": True}) == 200
    if case == "forced_down only":
        body = {"forced_down": True}
    if case == "forced with status":
        body = {"status": "disabled", "forced_down": True}
    assert _update(rpc_sim, 30, body) == 200


def test_a_concurrent_read_sees_the_change_while_the_rpc_waits(clock: FakeClock) -> None:
    """On a socket the wait is the wall clock's, outside the simulator's lock."""
    with NovaSimulator(clock=clock, rpc_response_timeout=60) as sim:
        sim.add_service("compute-1")
        sim.power_off("compute-1")
        svc = sim.service("compute-1")["id"]
        answers: list[int | None] = []
        slow = sim.client(timeout=120, policy=FAST)

        def disable() -> None:
            try:
                slow.disable_service(svc, "failed")
                answers.append(200)
            except exception.NovaError as exc:
                answers.append(exc.status)

        putter = threading.Thread(target=disable)
        putter.start()
        reader = sim.client(timeout=5, policy=FAST)
        deadline = time.monotonic() + 30
        while reader.get_compute_service("compute-1").status != "disabled":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert putter.is_alive() and answers == []
    putter.join(timeout=10)  # the stopping simulator lets the held answer go
    assert not putter.is_alive()

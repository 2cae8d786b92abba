"""NovaClient.live_migrate and list_migrations against the Nova simulator, in process: the
requests, a migration followed to its end, the API's and the conductor's refusals, injected
failures, and the retry policy's verdict on an ambiguous failure."""

from __future__ import annotations

from typing import Any

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from masakari import exception
from masakari.compute import servers
from masakari.compute.nova import NovaClient, NovaRequestError
from masakari.compute.retry import Policy
from masakari.compute.servers import Migration, Server
from tests.fakes.nova import MEMBER_TOKEN, FakeClock, NovaSimulator
from tests.fakes.placement import Flavor

SERVER = "b2000000-0000-4000-8000-000000000001"
DELAY = 10.0
SMALL = Flavor(name="m1.small", vcpus=1, ram=512, disk=1)
LARGE = Flavor(name="m1.large", vcpus=4, ram=4096, disk=1)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> NovaSimulator:
    s = NovaSimulator(clock=clock, live_migration_delay=DELAY)  # in process
    for host in ("compute-1", "compute-2", "compute-3"):
        s.add_service(host, vcpus=4, memory_mb=8192, disk_gb=100)
    s.add_server(SERVER, host="compute-1", flavor=SMALL)
    return s


@pytest.fixture
def client(sim: NovaSimulator) -> NovaClient:
    return sim.client(timeout=5, policy=Policy(delay=0.01))


def used_vcpus(sim: NovaSimulator) -> dict[str, int]:
    return {
        rp.name: sim.placement.usages(rp.uuid).get("VCPU", 0)
        for rp in sim.placement.providers.values()
    }


def where(server: Server) -> tuple[str | None, str | None, str | None]:
    return server.host, server.vm_state, server.task_state


def events(sim: NovaSimulator, action: str = "live-migration") -> list[tuple[str, str]]:
    found = [a for a in sim.servers[0].actions if a.action == action][-1]
    return sorted((e.event, e.result) for e in found.events)


SUCCESS_EVENTS = [
    ("compute_check_can_live_migrate_destination", "Success"),
    ("compute_check_can_live_migrate_source", "Success"),
    ("compute_live_migration", "Success"),
    ("compute_post_live_migration_at_destination", "Success"),
    ("compute_pre_live_migration", "Success"),
    ("conductor_live_migrate_instance", "Success"),
]


def test_the_requests(sim: NovaSimulator, client: NovaClient) -> None:
    client.live_migrate(SERVER)
    sim.clock.advance(DELAY)
    client.live_migrate(SERVER, "compute-3", block_migration=False)
    client.list_migrations(SERVER)
    client.list_migrations(SERVER, None)
    action = f"/servers/{SERVER}/action"
    live = [["instance_uuid", SERVER], ["migration_type", "live-migration"]]
    sent = [(c["method"], c["path"], c["query"], c["body"], c["status"]) for c in sim.nova_calls()]
    assert sent == [
        ("POST", action, [], {"os-migrateLive": {"host": None, "block_migration": "auto"}}, 202),
        ("POST", action, [], {"os-migrateLive": {"host": "compute-3", "block_migration": False}},
         202),
        ("GET", "/os-migrations", live, None, 200),
        ("GET", "/os-migrations", [["instance_uuid", SERVER]], None, 200),
    ]  # fmt: skip
    assert {c["microversion"] for c in sim.nova_calls()} == {"2.53"}


def test_a_migration_followed_to_completion(
    sim: NovaSimulator, client: NovaClient, clock: FakeClock
) -> None:
    assert client.live_migrate(SERVER, "compute-2") is None
    assert client.get_server(SERVER).status == "MIGRATING"  # Nova's status of the task
    seen: list[tuple[Any, ...]] = []
    for _ in range(int(DELAY) + 1):
        server = client.get_server(SERVER)
        (migration,) = client.list_migrations(SERVER)
        step = (*where(server), migration.status, migration.dest_compute, migration.outcome)
        if not seen or seen[-1] != step:
            seen.append(step)
        clock.advance(1)
    assert client.get_server(SERVER).status == "ACTIVE"
    assert seen == [
        ("compute-1", "active", "migrating", "accepted", None, servers.IN_PROGRESS),
        ("compute-1", "active", "migrating", "preparing", "compute-2", servers.IN_PROGRESS),
        ("compute-1", "active", "migrating", "running", "compute-2", servers.IN_PROGRESS),
        ("compute-2", "active", None, "completed", "compute-2", servers.SUCCEEDED),
    ]
    assert migration.finished
    assert (migration.migration_type, migration.source_compute) == ("live-migration", "compute-1")
    assert migration.instance_uuid == SERVER
    assert migration.created_at is not None and migration.updated_at is not None
    assert [a.action for a in client.list_instance_actions(SERVER)] == ["live-migration"]
    assert events(sim) == SUCCESS_EVENTS
    assert used_vcpus(sim) == {"compute-1": 0, "compute-2": 1, "compute-3": 0}


def test_the_migration_holds_both_hosts_while_it_runs(
    sim: NovaSimulator, client: NovaClient, clock: FakeClock
) -> None:
    client.live_migrate(SERVER, "compute-2")
    assert used_vcpus(sim) == {"compute-1": 1, "compute-2": 1, "compute-3": 0}
    (migration,) = sim.migrations
    # the source's allocation is the migration's, the destination's the server's
    assert len(sim.placement.allocations[migration.uuid]) == 1
    assert len(sim.placement.allocations[SERVER]) == 1
    clock.advance(DELAY)
    sim.server(SERVER)  # the simulator catches up with its clock when asked
    assert used_vcpus(sim) == {"compute-1": 0, "compute-2": 1, "compute-3": 0}


def test_the_scheduler_picks_an_enabled_host_with_room(
    sim: NovaSimulator, client: NovaClient
) -> None:
    sim.update_service("compute-2", status="disabled")
    client.live_migrate(SERVER)
    sim.clock.advance(DELAY)
    assert client.get_server(SERVER).host == "compute-3"


def test_in_progress_migrations_of_a_server(sim: NovaSimulator, client: NovaClient) -> None:
    """GET /servers/{id}/migrations: live ones in progress only, in their own shape."""
    api = ks_adapter.Adapter(
        client.session,
        service_type="compute",
        interface="public",
        additional_headers={"OpenStack-API-Version": "compute 2.53"},
    )
    client.live_migrate(SERVER, "compute-2")
    sim.clock.advance(DELAY / 2)
    (shown,) = api.get(f"/servers/{SERVER}/migrations").json()["migrations"]
    migration = Migration.of(shown)
    assert (migration.status, migration.migration_type) == ("running", "live-migration")
    assert (migration.instance_uuid, migration.dest_compute) == (SERVER, "compute-2")
    (listed,) = api.get(f"/os-migrations?instance_uuid={SERVER}").json()["migrations"]
    assert listed["links"][0]["href"].endswith(f"/servers/{SERVER}/migrations/{migration.id}")
    sim.clock.advance(DELAY)
    assert api.get(f"/servers/{SERVER}/migrations").json()["migrations"] == []


def test_newest_first(sim: NovaSimulator, client: NovaClient) -> None:
    client.live_migrate(SERVER, "compute-2")
    sim.clock.advance(DELAY)
    client.live_migrate(SERVER, "compute-3")
    sim.clock.advance(DELAY)
    assert [(m.id, m.dest_compute) for m in client.list_migrations(SERVER)] == [
        (2, "compute-3"),
        (1, "compute-2"),
    ]


@pytest.mark.parametrize(
    ("setup", "host", "status", "nova_said"),
    [
        (
            {"vm_state": "stopped", "power_state": 4},
            None,
            409,
            f"Cannot 'os-migrateLive' instance {SERVER} while it is in vm_state stopped",
        ),
        (
            {"vm_state": "error"},
            None,
            409,
            f"Cannot 'os-migrateLive' instance {SERVER} while it is in vm_state error",
        ),
        (
            {"task_state": "rebuilding"},
            None,
            409,
            f"Cannot 'os-migrateLive' instance {SERVER} while it is in task_state rebuilding",
        ),
        ({}, "nowhere", 400, "Compute host nowhere could not be found."),
    ],
    ids=["stopped", "error", "task", "unknown-host"],
)
def test_refused_by_the_api(
    sim: NovaSimulator,
    client: NovaClient,
    setup: dict[str, Any],
    host: str | None,
    status: int,
    nova_said: str,
) -> None:
    sim.update_server(SERVER, **setup)
    with pytest.raises(NovaRequestError) as err:
        client.live_migrate(SERVER, host)
    assert err.value.status == status
    assert err.value.detail.startswith(nova_said + f" (HTTP {status})")
    # nothing recorded: no action, no migration
    assert client.list_instance_actions(SERVER) == []
    assert client.list_migrations(SERVER) == []


def test_a_second_request_while_one_runs_is_a_conflict(client: NovaClient) -> None:
    client.live_migrate(SERVER)
    with pytest.raises(NovaRequestError) as err:
        client.live_migrate(SERVER)
    assert err.value.status == 409
    assert "while it is in task_state migrating" in err.value.detail
    with pytest.raises(NovaRequestError):
        client.stop_server(SERVER)


def test_a_paused_or_locked_server_migrates(sim: NovaSimulator, client: NovaClient) -> None:
    sim.update_server(SERVER, vm_state="paused", power_state=3, locked=True)
    client.live_migrate(SERVER, "compute-2")
    sim.clock.advance(DELAY)
    server = client.get_server(SERVER)
    assert (server.host, server.vm_state, server.locked) == ("compute-2", "paused", True)


def test_a_member_may_not(sim: NovaSimulator) -> None:
    session = ks_session.Session(auth=token_endpoint.Token(sim.compute_url, MEMBER_TOKEN))
    member = NovaClient(session, policy=Policy(delay=0.01))
    with pytest.raises(NovaRequestError) as err:
        member.live_migrate(SERVER)
    assert err.value.status == 403
    assert "os_compute_api:os-migrate-server:migrate_live" in err.value.detail


@pytest.mark.parametrize(
    "body",
    [
        {"host": None},
        {"host": None, "block_migration": "maybe"},
        {"host": None, "block_migration": True, "disk_over_commit": False},
    ],
)
def test_a_body_outside_the_schema_is_refused_first(sim: NovaSimulator, body: Any) -> None:
    """Nova validates the body before it reads the server's state or its policy."""
    sim.update_server(SERVER, vm_state="stopped")
    api = ks_adapter.Adapter(sim.session(), service_type="compute", interface="public")
    answer = api.post(
        f"/servers/{SERVER}/action",
        json={"os-migrateLive": body},
        headers={"OpenStack-API-Version": "compute 2.53"},
        raise_exc=False,
    )
    assert answer.status_code == 400
    assert sim.migrations == []


def fill(sim: NovaSimulator, *hosts: str) -> None:
    for host in hosts:
        sim.add_server(host=host, flavor=LARGE)


@pytest.mark.parametrize(
    ("setup", "host"),
    [
        (lambda sim: fill(sim, "compute-2", "compute-3"), None),
        (lambda sim: fill(sim, "compute-2"), "compute-2"),
        (lambda sim: sim.update_service("compute-2", status="disabled"), "compute-2"),
        (lambda sim: sim.update_service("compute-2", forced_down=True), "compute-2"),
        (lambda sim: None, "compute-1"),
        (lambda sim: sim.update_service("compute-1", forced_down=True), None),
    ],
    ids=["no-room", "named-full", "named-disabled", "named-down", "own-host", "source-down"],
)
def test_refused_by_the_conductor(
    sim: NovaSimulator, client: NovaClient, setup: Any, host: str | None
) -> None:
    """202, then the migration in error, the server active where it was with its task
    cleared, and the conductor's event in Error (as on the real Nova: no valid host)."""
    setup(sim)
    before = used_vcpus(sim)
    client.live_migrate(SERVER, host)
    assert where(client.get_server(SERVER)) == ("compute-1", "active", None)
    (migration,) = client.list_migrations(SERVER)
    assert (migration.status, migration.outcome, migration.dest_compute) == (
        "error",
        servers.FAILED,
        None,
    )
    assert events(sim) == [("conductor_live_migrate_instance", "Error")]
    assert client.list_instance_actions(SERVER)[0].message == "Error"
    assert used_vcpus(sim) == before


def test_a_destination_that_died_but_counts_up_times_out(
    sim: NovaSimulator, client: NovaClient, clock: FakeClock
) -> None:
    """The conductor's RPC to it waits rpc_response_timeout, the server migrating meanwhile
    (seen on the real Nova, 20 s there); then the migration is in error."""
    sim.rpc_response_timeout = 20
    sim.power_off("compute-2")
    client.live_migrate(SERVER, "compute-2")
    clock.advance(19)
    assert where(client.get_server(SERVER)) == ("compute-1", "active", "migrating")
    assert client.list_migrations(SERVER)[0].status == "accepted"
    clock.advance(1)
    assert where(client.get_server(SERVER)) == ("compute-1", "active", None)
    assert client.list_migrations(SERVER)[0].status == "error"


@pytest.mark.parametrize(
    ("status", "failed_events"),
    [
        ("error", {"compute_pre_live_migration", "compute_live_migration"}),
        ("failed", set()),
    ],
)
def test_an_injected_failure_rolls_back_to_the_source(
    sim: NovaSimulator,
    client: NovaClient,
    clock: FakeClock,
    status: str,
    failed_events: set[str],
) -> None:
    sim.fail_live_migrations([SERVER], status)
    client.live_migrate(SERVER, "compute-2")
    clock.advance(DELAY)
    assert where(client.get_server(SERVER)) == ("compute-1", "active", None)
    (migration,) = client.list_migrations(SERVER)
    assert (migration.status, migration.outcome) == (status, servers.FAILED)
    assert {e for e, result in events(sim) if result == "Error"} == failed_events
    assert ("compute_rollback_live_migration_at_destination", "Success") in events(sim)
    assert used_vcpus(sim) == {"compute-1": 1, "compute-2": 0, "compute-3": 0}
    sim.fail_live_migrations([SERVER], None)
    client.live_migrate(SERVER, "compute-2")
    clock.advance(DELAY)
    assert client.get_server(SERVER).host == "compute-2"


def test_an_evacuation_leaves_its_migration_row(sim: NovaSimulator, client: NovaClient) -> None:
    sim.power_off("compute-1")
    sim.clock.advance(61)
    client.evacuate(SERVER, "compute-3")
    assert client.list_migrations(SERVER) == []  # live ones only, by default
    (migration,) = client.list_migrations(SERVER, None)
    assert (migration.migration_type, migration.status) == ("evacuation", "done")
    assert (migration.source_compute, migration.dest_compute) == ("compute-1", "compute-3")
    sim.power_on("compute-1")  # its nova-compute starts: it cleans the evacuated server up
    assert client.list_migrations(SERVER, "evacuation")[0].status == "completed"


# --- the retry policy ---------------------------------------------------------------------


def test_an_ambiguous_failure_is_not_sent_again(sim: NovaSimulator) -> None:
    """A balancer's 503 after Nova may have acted: the caller reads the migrations."""
    sim.fail(503, action="os-migrateLive", times=1, apply=True)
    client = sim.client(policy=Policy(delay=0.01))
    with pytest.raises(NovaRequestError) as err:
        client.live_migrate(SERVER)
    assert err.value.status == 503
    assert len(sim.actions(SERVER)) == 1
    assert client.list_migrations(SERVER)[0].status == "accepted"  # Nova took it


def test_a_time_out_is_not_sent_again(sim: NovaSimulator) -> None:
    sim.slow(2.0, action="os-migrateLive", times=1)
    client = sim.client(timeout=0.2, policy=Policy(delay=0.01))
    with pytest.raises(exception.NovaTimeout):
        client.live_migrate(SERVER)
    assert sim.actions(SERVER) == ["os-migrateLive"]


def test_a_time_out_of_the_read_is_retried(sim: NovaSimulator) -> None:
    sim.slow(2.0, path="/os-migrations", times=1)
    client = sim.client(timeout=0.2, policy=Policy(retries=1, delay=0.01))
    assert client.list_migrations(SERVER) == []
    assert [c["path"] for c in sim.nova_calls()] == ["/os-migrations"] * 2

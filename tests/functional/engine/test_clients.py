"""The stand-ins masakari-engine uses for Nova and Placement until the credentials work."""

from __future__ import annotations

import functools

import pytest

from masakari import conf as masakari_conf
from masakari import exception
from masakari.compute import retry
from masakari.compute.clients import Clients
from masakari.engine.clients import LazyNova, LazyPlacement
from tests.fakes.nova import NovaSimulator


def test_each_call_fails_until_the_credentials_work_then_builds_the_clients(
    sim: NovaSimulator,
) -> None:
    sim.add_service("compute-1")
    server = sim.add_server(host="compute-1")
    conf = masakari_conf.for_tests(**sim.conf_overrides())
    auth_url = conf.os_privileged_user_auth_url
    conf.set_override("os_privileged_user_auth_url", None)
    clients = Clients(conf)
    lazy = LazyNova(functools.partial(clients.nova, retry.ENGINE))
    placement = LazyPlacement(functools.partial(clients.placement, retry.ENGINE))
    for _ in range(2):
        with pytest.raises(exception.NovaError, match="os_privileged_user_auth_url"):
            lazy.lock_server(server)
        with pytest.raises(exception.NovaError, match="os_privileged_user_auth_url"):
            placement.host_capacity("compute-1")
    assert sim.nova_calls() == []
    conf.set_override("os_privileged_user_auth_url", auth_url)
    lazy.lock_server(server)
    assert lazy.get_server(server).locked is True
    capacity = placement.host_capacity("compute-1")
    assert capacity is not None and capacity.name == "compute-1"
    assert [c["method"] for c in sim.nova_calls()] == ["POST", "GET"]
    # one token for Nova and Placement: the same session
    assert sim.token_requests() == 1


def test_live_migration_goes_through_the_built_client(sim: NovaSimulator) -> None:
    sim.add_service("compute-1")
    sim.add_service("compute-2")
    server = sim.add_server(host="compute-1")
    clients = Clients(masakari_conf.for_tests(**sim.conf_overrides()))
    lazy = LazyNova(functools.partial(clients.nova, retry.ENGINE))
    lazy.live_migrate(server, "compute-2")
    (migration,) = lazy.list_migrations(server)
    assert (migration.status, migration.dest_compute) == ("completed", "compute-2")
    assert lazy.list_migrations(server, "evacuation") == []
    assert lazy.get_server(server).host == "compute-2"

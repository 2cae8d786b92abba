"""NovaClient where a socket is part of the test: a refused connection, and clients built
from the options (their own keystone session) against the simulator on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg

from masakari import exception
from masakari.compute import nova
from masakari.compute.nova import NovaClient, NovaRequestError
from masakari.compute.retry import Policy
from tests.fakes.nova import FakeClock, NovaSimulator

SERVER = "a1000000-0000-4000-8000-000000000001"


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator(clock=FakeClock()) as s:
        s.add_service("compute-1", state="down")
        s.add_server(SERVER, host="compute-1", metadata={"HA_Enabled": "True"})
        yield s


def test_a_refused_connection_is_retried_for_every_method() -> None:
    """Nothing was sent, so even an evacuate is tried again (and fails in the end here)."""
    sim = NovaSimulator().start()
    endpoint = sim.compute_url
    sim.stop()
    session = ks_session.Session(auth=token_endpoint.Token(endpoint, "admin-token"))
    client = NovaClient(session, policy=Policy(connect_retries=2, retries=0, delay=0.01))
    counted: list[int] = []
    real = nova.retry._CountingRetry.increment

    def increment(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        return real(self, *args, **kwargs)

    nova.retry._CountingRetry.increment = increment  # type: ignore[method-assign]
    try:
        with pytest.raises(exception.NovaError) as err:
            client.evacuate(SERVER)
    finally:
        nova.retry._CountingRetry.increment = real  # type: ignore[method-assign]
    assert err.value.status is None
    assert len(counted) == 3  # the first try and two more


def test_connection_failure() -> None:
    sim = NovaSimulator().start()
    client = sim.client(policy=Policy(connect_retries=0, retries=0))
    sim.stop()
    with pytest.raises(exception.NovaError) as err:
        client.get_server(SERVER)
    assert type(err.value) is exception.NovaError
    assert err.value.status is None
    assert str(err.value) == "Error while requesting Nova API."


def _conf(sim: NovaSimulator, **overrides: Any) -> cfg.ConfigOpts:
    """The options NovaClient.from_conf reads, registered here so the test does not depend on
    masakari.conf."""
    conf = cfg.ConfigOpts()
    conf.register_opts(
        [
            cfg.StrOpt("nova_catalog_admin_info", default="compute:nova:publicURL"),
            cfg.StrOpt("os_region_name"),
            cfg.StrOpt("nova_ca_certificates_file"),
            cfg.BoolOpt("nova_api_insecure", default=False),
            cfg.StrOpt("os_privileged_user_name"),
            cfg.StrOpt("os_privileged_user_password", secret=True),
            cfg.StrOpt("os_privileged_user_tenant"),
            cfg.StrOpt("os_privileged_user_auth_url"),
            cfg.StrOpt("os_user_domain_name", default="default"),
            cfg.StrOpt("os_project_domain_name", default="default"),
            cfg.StrOpt("os_system_scope"),
            cfg.FloatOpt("nova_api_timeout", default=60.0),
        ]
    )
    conf.register_opts([cfg.StrOpt("auth_type")], group="keystone_authtoken")
    conf([], default_config_files=[])
    values = {k: v for k, v in sim.conf_overrides().items() if "." not in k}
    values.update(overrides)
    for key, value in values.items():
        conf.set_override(key, value)
    conf.set_override("auth_type", "password", group="keystone_authtoken")
    return conf


def test_from_conf_uses_the_catalog_and_one_token(sim: NovaSimulator) -> None:
    conf = _conf(sim, os_region_name="RegionOne")
    nova.forget_clients()
    client = nova.get_client(conf)
    assert nova.get_client(conf) is client
    for _ in range(3):
        nova.get_client(conf).get_server(SERVER)
    assert sim.token_requests() == 1
    assert [c["microversion"] for c in sim.nova_calls()] == ["2.53"] * 3
    assert nova.get_client(_conf(sim)) is not client
    nova.forget_clients()


def test_from_conf_with_an_unknown_service_name(sim: NovaSimulator) -> None:
    client = NovaClient.from_conf(_conf(sim, nova_catalog_admin_info="compute:novva:publicURL"))
    with pytest.raises(NovaRequestError) as err:
        client.get_server(SERVER)
    assert err.value.status is None
    assert err.value.reference_class.startswith("keystoneauth1.exceptions.catalog.")
    assert sim.nova_calls() == []


def test_from_conf_with_masakari_conf(sim: NovaSimulator) -> None:
    """The same through the project's options."""
    from masakari import conf as masakari_conf

    conf = masakari_conf.for_tests(**sim.conf_overrides())
    NovaClient.from_conf(conf).get_server(SERVER)
    assert sim.token_requests() == 1

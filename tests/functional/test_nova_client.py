"""NovaClient where a socket is part of the test: a connection refused, or lost, on loopback
(everything else: tests/unit/test_nova_client.py, on the simulator in process)."""

from __future__ import annotations

from typing import Any

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from masakari import exception
from masakari.compute import nova
from masakari.compute.nova import NovaClient
from masakari.compute.retry import Policy
from tests.fakes.nova import NovaSimulator

SERVER = "a1000000-0000-4000-8000-000000000001"


def test_a_refused_connection_is_retried_for_every_method() -> None:
    """Nothing was sent, so even an evacuate is tried again (and fails in the end here)."""
    sim = NovaSimulator().start()
    endpoint = sim.compute_url
    sim.stop()
    session = ks_session.Session(auth=token_endpoint.Token(endpoint, "admin-token"))
    client = NovaClient(session, policy=Policy(connect_retries=2, retries=0, delay=0.01))
    counted: list[int] = []
    real = nova.retry._PolicyRetry.increment

    def increment(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        return real(self, *args, **kwargs)

    nova.retry._PolicyRetry.increment = increment  # type: ignore[method-assign]
    try:
        with pytest.raises(exception.NovaError) as err:
            client.evacuate(SERVER)
    finally:
        nova.retry._PolicyRetry.increment = real  # type: ignore[method-assign]
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

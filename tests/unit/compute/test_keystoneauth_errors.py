"""keystoneauth's failures, translated once for the Nova and the Placement client."""

from __future__ import annotations

import pytest
from keystoneauth1 import exceptions as ks_exc

from masakari import exception
from masakari.compute import nova


@pytest.mark.parametrize("service", ["Nova", "Placement"])
def test_a_connect_time_out_is_a_time_out_of_the_service(service: str) -> None:
    err = nova.keystoneauth_error(ks_exc.ConnectTimeout("slow"), service)
    assert isinstance(err, exception.NovaTimeout)
    assert err.status is None
    assert service in str(err)


@pytest.mark.parametrize("service", ["Nova", "Placement"])
def test_a_failed_connection_names_the_service(service: str) -> None:
    err = nova.keystoneauth_error(ks_exc.ConnectFailure("refused"), service)
    assert type(err) is exception.NovaError
    assert err.status is None
    assert service in str(err)
    assert nova.unavailable_message(err) == nova.UNREACHABLE


def test_no_endpoint_keeps_the_reference_text_for_nova_and_names_placement() -> None:
    missing = ks_exc.EndpointNotFound("no compute endpoint")
    for service, text in (("Nova", "no compute endpoint"), ("Placement", "Placement: ")):
        err = nova.keystoneauth_error(missing, service)
        assert isinstance(err, nova.NovaRequestError)
        assert text in str(err)
        assert nova.unavailable_message(err) == nova.NO_ENDPOINT


def test_keystone_refusing_the_token_keeps_its_status() -> None:
    err = nova.keystoneauth_error(ks_exc.Unauthorized("bad password"), "Placement")
    assert err.status == 401

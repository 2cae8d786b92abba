"""A deployment without working Nova settings: hosts answer 500 (as the reference does) with a
message that says what is wrong, and the engine says so once at start."""

from __future__ import annotations

import logging

import pytest

from masakari import conf as masakari_conf
from masakari.cmd import engine as engine_cmd
from masakari.compute import nova
from masakari.compute.clients import Clients
from tests.support.deployment import Deployment, host_body, segment_body
from tests.support.ports import free_port


def _create_host(settings: dict[str, str | None]) -> tuple[int, dict[str, object]]:
    with Deployment() as d:
        # Overrides rather than a conf file: an empty URL would not parse at all.
        for name, value in settings.items():
            d.conf.set_override(name, value)
        seg = d.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        resp = d.request("POST", f"/v1/segments/{seg}/hosts", host_body())
        hosts = d.request("GET", f"/v1/segments/{seg}/hosts").json["hosts"]
        assert hosts == []
        return resp.status_int, resp.json


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"os_privileged_user_auth_url": None, "os_privileged_user_password": None},
            "Nova is not configured: hosts and recoveries need the Nova credentials in "
            "masakari.conf ([DEFAULT] os_privileged_user_auth_url, "
            "os_privileged_user_password are not set).",
        ),
        (
            {"os_privileged_user_auth_url": f"http://127.0.0.1:{free_port()}/v3"},
            nova.UNREACHABLE,
        ),
        ({"nova_catalog_admin_info": "no-such-service:nova:publicURL"}, nova.NO_ENDPOINT),
    ],
    ids=["not-configured", "unreachable", "no-endpoint"],
)
def test_host_create_says_what_is_wrong_with_nova(settings, message) -> None:
    status, body = _create_host(settings)
    assert (status, body) == (500, {"masakariFault": {"code": 500, "message": message}})


def test_engine_says_once_at_start_that_nova_is_not_configured(tmp_path, caplog) -> None:
    conf = masakari_conf.load([], default_config_files=[])
    caplog.set_level(logging.INFO)
    client, _placement = engine_cmd._clients(Clients(conf))
    lines = [r.getMessage() for r in caplog.records if r.name == "masakari.cmd.engine"]
    assert len(lines) == 1
    assert lines[0].startswith("Nova is not configured: ")
    assert "os_privileged_user_auth_url, os_privileged_user_name" in lines[0]
    # The engine still starts; a recovery's first Nova call fails with the same reason.
    with pytest.raises(nova.NovaNotConfigured):
        client.get_server("x")

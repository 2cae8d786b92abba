"""NovaClient against the Nova simulator, in process (its own transport down to the socket):
request shapes, pagination, errors, retries, token reuse. What needs a socket (a refused
connection, a client built from the options): tests/functional/test_nova_client.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import exception
from masakari.compute import nova, retry
from masakari.compute.clients import Clients
from masakari.compute.nova import NovaClient, NovaRequestError
from masakari.compute.retry import Policy
from masakari.compute.servers import Server
from tests.fakes.nova import FakeClock, NovaSimulator

SERVER = "a1000000-0000-4000-8000-000000000001"

# Retries without the production backoff: a test waits milliseconds, not seconds.
FAST = Policy(delay=0.01)


@pytest.fixture
def sim() -> NovaSimulator:
    s = NovaSimulator(clock=FakeClock())  # not started: answers in process
    s.add_service("compute-1", state="down")
    s.add_service("compute-2")
    s.add_service("reserved-1")
    s.add_server(SERVER, host="compute-1", metadata={"HA_Enabled": "True"})
    s.add_aggregate(1, "agg1", ["compute-1"])
    return s


@pytest.fixture
def client(sim: NovaSimulator) -> NovaClient:
    return sim.client(timeout=5, policy=FAST)


def _call(method: str, path: str, query: Any, body: Any, status: int) -> dict[str, Any]:
    return {
        "method": method,
        "path": path,
        "query": query,
        "body": body,
        "microversion": "2.53",
        "status": status,
    }


SVC = "os-services/{svc}"
ACTION = f"/servers/{SERVER}/action"

# The request shapes recorded from the reference in /work/shared/conformance/golden.
SHAPES: list[tuple[str, Callable[[NovaClient, str], Any], dict[str, Any]]] = [
    (
        "find_compute_services",
        lambda c, svc: c.find_compute_services("compute-1"),
        _call(
            "GET", "/os-services", [["binary", "nova-compute"], ["host", "compute-1"]], None, 200
        ),
    ),
    (
        "disable_service",
        lambda c, svc: c.disable_service(svc, "Masakari detected host failed."),
        _call(
            "PUT",
            "/" + SVC,
            [],
            {"status": "disabled", "disabled_reason": "Masakari detected host failed."},
            200,
        ),
    ),
    (
        "enable_service",
        lambda c, svc: c.enable_service(svc),
        _call("PUT", "/" + SVC, [], {"status": "enabled"}, 200),
    ),
    (
        "force_down_service",
        lambda c, svc: c.force_down_service(svc),
        _call("PUT", "/" + SVC, [], {"forced_down": True}, 200),
    ),
    (
        "list_servers_on_host",
        lambda c, svc: c.list_servers_on_host("compute-1"),
        _call(
            "GET", "/servers/detail", [["all_tenants", "True"], ["host", "compute-1"]], None, 200
        ),
    ),
    (
        "get_server",
        lambda c, svc: c.get_server(SERVER),
        _call("GET", f"/servers/{SERVER}", [], None, 200),
    ),
    (
        "lock_server",
        lambda c, svc: c.lock_server(SERVER),
        _call("POST", ACTION, [], {"lock": None}, 202),
    ),
    (
        "unlock_server",
        lambda c, svc: c.unlock_server(SERVER),
        _call("POST", ACTION, [], {"unlock": None}, 202),
    ),
    (
        "reset_state",
        lambda c, svc: c.reset_state(SERVER, "error"),
        _call("POST", ACTION, [], {"os-resetState": {"state": "error"}}, 202),
    ),
    (
        "stop_server",
        lambda c, svc: c.stop_server(SERVER),
        _call("POST", ACTION, [], {"os-stop": None}, 202),
    ),
    (
        "evacuate",
        lambda c, svc: c.evacuate(SERVER),
        _call("POST", ACTION, [], {"evacuate": {}}, 200),
    ),
    (
        "evacuate_to_host",
        lambda c, svc: c.evacuate(SERVER, "reserved-1"),
        _call("POST", ACTION, [], {"evacuate": {"host": "reserved-1"}}, 200),
    ),
    (
        "list_aggregates",
        lambda c, svc: c.list_aggregates(),
        _call("GET", "/os-aggregates", [], None, 200),
    ),
    (
        "add_host_to_aggregate",
        lambda c, svc: c.add_host_to_aggregate(1, "reserved-1"),
        _call("POST", "/os-aggregates/1/action", [], {"add_host": {"host": "reserved-1"}}, 200),
    ),
]


@pytest.mark.parametrize("name,call,shape", SHAPES, ids=[s[0] for s in SHAPES])
def test_request_shape_is_the_references(
    sim: NovaSimulator, client: NovaClient, name: str, call: Any, shape: dict[str, Any]
) -> None:
    svc = sim.service("compute-1")["id"]
    call(client, svc)
    expected = dict(shape, path=shape["path"].replace("{svc}", svc))
    assert sim.nova_calls() == [expected]


def test_start_server_shape(sim: NovaSimulator, client: NovaClient) -> None:
    client.stop_server(SERVER)
    client.start_server(SERVER)
    assert sim.nova_calls()[-1] == _call("POST", ACTION, [], {"os-start": None}, 202)


def test_disable_without_reason_sends_none(sim: NovaSimulator, client: NovaClient) -> None:
    svc = sim.service("compute-2")["id"]
    client.disable_service(svc, None)
    assert sim.nova_calls()[-1]["body"] == {"status": "disabled"}


def test_results(sim: NovaSimulator, client: NovaClient) -> None:
    svc = client.get_compute_service("compute-1")
    assert (svc.host, svc.state, svc.status) == ("compute-1", "down", "enabled")
    client.evacuate(SERVER, "reserved-1")
    server = client.get_server(SERVER)
    assert isinstance(server, Server)
    assert (server.host, server.hypervisor_hostname, server.vm_state) == (
        "reserved-1",
        "reserved-1",
        "active",
    )
    assert (server.task_state, server.power_state, server.locked) == (None, 1, False)
    assert server.metadata == {"HA_Enabled": "True"}
    assert [a.hosts for a in client.list_aggregates()] == [("compute-1",)]
    assert client.list_servers_on_host("compute-1") == []


def test_unknown_compute_host(client: NovaClient) -> None:
    with pytest.raises(exception.ComputeNotFoundByName) as err:
        client.get_compute_service("compute-9")
    assert str(err.value) == "Compute service with name compute-9 could not be found."


# --- pagination --------------------------------------------------------------------------


@pytest.mark.parametrize("count,requests_made", [(5, 3), (4, 3), (1, 1), (0, 1)])
def test_all_pages_are_read(count: int, requests_made: int) -> None:
    sim = NovaSimulator(clock=FakeClock(), max_limit=2)
    sim.add_service("compute-1")
    ids = [sim.add_server(host="compute-1") for _ in range(count)]
    sim.add_server(host="compute-2")
    servers = sim.client().list_servers_on_host("compute-1")
    assert [s.id for s in servers] == ids[::-1]  # newest first, as Nova lists
    calls = sim.nova_calls()
    assert len(calls) == requests_made
    assert calls[0]["query"] == [["all_tenants", "True"], ["host", "compute-1"]]
    for before, after in zip(calls, calls[1:], strict=False):
        marker = dict(after["query"])["marker"]
        assert marker in ids
        assert dict(after["query"]) == {
            "all_tenants": "True",
            "host": "compute-1",
            "marker": marker,
        }
        assert before["status"] == 200


def test_every_server_group_page_is_read() -> None:
    sim = NovaSimulator(clock=FakeClock(), max_limit=2)
    ids = [sim.add_server_group("anti-affinity", [f"vm-{i}"]) for i in range(5)]
    sim.server_groups[0].project_id = "another-project"
    groups = sim.client().list_server_groups()
    assert [g.id for g in groups] == ids
    # Compute 2.53 lists the policy as a one-item list: read as the group's policy.
    assert groups[0].policy == "anti-affinity"
    assert groups[0].members == ("vm-0",)
    offsets = [dict(c["query"]) for c in sim.nova_calls()]
    assert offsets == [{"all_projects": "True", "offset": str(n)} for n in (0, 2, 4, 5)]


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status,message,text,reference_class",
    [
        (400, "Compute service of compute-1 is still in use.",
         "Invalid input received: Compute service of compute-1 is still in use. (HTTP 400)",
         "masakari.exception.InvalidInput"),
        (403, "Policy does not allow os_compute_api:os-services:list to be performed.",
         "Policy does not allow os_compute_api:os-services:list to be performed. (HTTP 403)",
         "masakari.exception.Forbidden"),
        (404, None, "Resource could not be found.", "masakari.exception.NotFound"),
        (409, None, "Conflict", "masakari.exception.Conflict"),
        (500, None, "Unexpected API Error. (HTTP 500)", "novaclient.exceptions.ClientException"),
        (503, None, "Service Unavailable. (HTTP 503)", "novaclient.exceptions.ClientException"),
        (413, "Quota exceeded.", "Quota exceeded. (HTTP 413)", "novaclient.exceptions.OverLimit"),
    ],
)  # fmt: skip
def test_error_text_is_the_references(
    sim: NovaSimulator,
    client: NovaClient,
    status: int,
    message: str | None,
    text: str,
    reference_class: str,
) -> None:
    sim.fail(status, method="POST", action="evacuate", message=message, times=1)
    with pytest.raises(NovaRequestError) as err:
        client.evacuate(SERVER)
    exc = err.value
    assert isinstance(exc, exception.NovaError)
    assert exc.status == status
    assert exc.reference_class == reference_class
    assert nova.reference_class_name(exc) == reference_class
    # novaclient appends the request id Nova sent in x-compute-request-id
    rid = str(exc.detail).rsplit("(Request-ID: ", 1)[1].rstrip(")")
    assert rid.startswith("req-")
    if status in (404, 409):
        assert str(exc) == text
    else:
        assert str(exc) == f"{text} (Request-ID: {rid})"


def _response(status: int, content: bytes, headers: dict[str, str]) -> requests.Response:
    resp = requests.Response()
    resp.status_code = status
    resp._content = content
    resp.headers.update(headers)
    return resp


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"", "Unknown Error (HTTP 502)"),
        (b"<html>bad gateway</html>", "Unknown Error (HTTP 502)"),
        (json.dumps(["x"]).encode(), "n/a (HTTP 502)"),
        (json.dumps({"message": "flat"}).encode(), "flat (HTTP 502)"),
        (json.dumps({"computeFault": {"code": 502}}).encode(), "Unknown Error (HTTP 502)"),
    ],
)
def test_error_text_of_odd_bodies(content: bytes, expected: str) -> None:
    exc = nova._nova_error(_response(502, content, {}))
    assert (str(exc), exc.status) == (expected, 502)


def test_not_found_keeps_novas_text_in_detail() -> None:
    body = json.dumps({"itemNotFound": {"code": 404, "message": "Instance x could not be found."}})
    exc = nova._nova_error(_response(404, body.encode(), {"x-compute-request-id": "req-1"}))
    assert str(exc) == "Resource could not be found."
    assert exc.detail == "Instance x could not be found. (HTTP 404) (Request-ID: req-1)"


def test_timeout(sim: NovaSimulator) -> None:
    sim.slow(2.0, method="POST", action="evacuate", times=1)
    client = sim.client(timeout=0.2, policy=FAST)
    started = time.monotonic()
    with pytest.raises(exception.NovaTimeout) as err:
        client.evacuate(SERVER)
    assert time.monotonic() - started < 1.5
    assert err.value.status is None
    assert str(err.value) == "Timeout while requesting Nova API."
    assert nova.reference_class_name(err.value) == "masakari.exception.MasakariException"
    # an evacuate is never sent twice by the client: it may have been carried out
    assert [c["method"] for c in sim.nova_calls()] == ["POST"]


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.get_server(SERVER),
        lambda c: c.lock_server(SERVER),
        lambda c: c.unlock_server(SERVER),
        lambda c: c.reset_state(SERVER, "error"),
    ],
    ids=["GET", "lock", "unlock", "os-resetState"],
)
def test_a_repeatable_request_that_times_out_is_sent_again(
    sim: NovaSimulator, call: Callable[[NovaClient], Any]
) -> None:
    sim.slow(2.0, times=1)
    client = sim.client(timeout=0.2, policy=Policy(retries=1, delay=0.01))
    try:
        call(client)
    except NovaRequestError as exc:  # the service id is unknown: answered, not retried
        assert exc.status == 404
    assert len(sim.nova_calls()) == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.evacuate(SERVER),
        lambda c: c.stop_server(SERVER),
        lambda c: c.start_server(SERVER),
        lambda c: c.add_host_to_aggregate(1, "compute-2"),
        lambda c: c.disable_service("x"),
        lambda c: c.force_down_service("x"),
    ],
    ids=["evacuate", "os-stop", "os-start", "add_host", "disable", "forced_down"],
)
def test_a_change_that_is_not_repeatable_is_not_sent_again_by_the_client(
    sim: NovaSimulator, call: Callable[[NovaClient], Any]
) -> None:
    sim.fail(503, times=1)
    client = sim.client(policy=FAST)
    with pytest.raises(NovaRequestError) as err:
        call(client)
    assert err.value.status == 503
    assert len(sim.nova_calls()) == 1


def test_a_service_update_waits_longer_than_nova_s_rpc(sim: NovaSimulator) -> None:
    """A disable of a dead compute Nova still counts up is answered after Nova's
    rpc_response_timeout: the service update's own timeout covers it, other requests keep
    the client's; it is never shorter than the client's."""
    sim.rpc_response_timeout = 60
    sim.power_off("compute-2")  # dead, up for Nova until service_down_time has passed
    svc = sim.service("compute-2")["id"]
    once = Policy(retries=0, delay=0.01)
    client = NovaClient(sim.session(), timeout=5, policy=once, service_update_timeout=120)
    client.disable_service(svc, "failed")
    sim.slow(10, action="lock", times=1)
    with pytest.raises(exception.NovaTimeout):
        client.lock_server(SERVER)
    short = NovaClient(sim.session(), timeout=5, policy=FAST, service_update_timeout=30)
    with pytest.raises(exception.NovaTimeout):
        short.enable_service(svc)
    never_shorter = NovaClient(sim.session(), timeout=61, policy=FAST, service_update_timeout=1)
    never_shorter.enable_service(svc)
    assert [c["status"] for c in sim.nova_calls() if c["method"] == "PUT"] == [200, 200, 200]
    assert sim.service("compute-2")["status"] == "enabled"


def test_the_service_update_timeout_comes_from_the_options(sim: NovaSimulator) -> None:
    sim.rpc_response_timeout = 60
    sim.power_off("compute-2")
    svc = sim.service("compute-2")["id"]
    overrides = dict(sim.conf_overrides(), nova_api_timeout=5)
    NovaClient.from_conf(masakari_conf.for_tests(**overrides)).disable_service(svc)
    short = masakari_conf.for_tests(**overrides, nova_service_update_timeout=30)
    with pytest.raises(exception.NovaTimeout):
        NovaClient.from_conf(short, policy=FAST).enable_service(svc)


def test_a_balancers_503_is_retried_by_the_engines_policy_only(sim: NovaSimulator) -> None:
    sim.fail(503, method="GET", times=1)
    with pytest.raises(NovaRequestError):
        sim.client(policy=Policy(status_codes=(), delay=0.01)).get_server(SERVER)
    sim.fail(503, method="GET", times=1)
    assert sim.client(policy=FAST).get_server(SERVER).id == SERVER
    assert [c["status"] for c in sim.nova_calls()] == [503, 503, 200]


def test_a_500_is_an_answer_and_is_not_retried(sim: NovaSimulator) -> None:
    sim.fail(500, method="GET", times=1)
    with pytest.raises(NovaRequestError):
        sim.client(policy=FAST).get_server(SERVER)
    assert len(sim.nova_calls()) == 1


def test_keystone_refusal() -> None:
    sim = NovaSimulator(users={"masakari": "secret"})
    sim.add_service("compute-1")
    client = NovaClient(sim.session(password="wrong"))
    with pytest.raises(NovaRequestError) as err:
        client.find_compute_services("compute-1")
    assert err.value.status == 401
    assert err.value.reference_class == "keystoneauth1.exceptions.http.Unauthorized"
    assert str(err.value).startswith("The request you have made requires authentication.")
    assert sim.nova_calls() == []


# --- the session -------------------------------------------------------------------------


def test_token_is_fetched_once(sim: NovaSimulator, client: NovaClient) -> None:
    for _ in range(5):
        client.find_compute_services("compute-1")
        client.get_server(SERVER)
    assert sim.token_requests() == 1
    assert len(sim.nova_calls()) == 10


def test_a_revoked_token_is_replaced_once(sim: NovaSimulator, client: NovaClient) -> None:
    client.get_server(SERVER)
    sim.revoke_tokens()
    client.get_server(SERVER)
    client.get_server(SERVER)
    assert sim.token_requests() == 2
    assert [c["status"] for c in sim.nova_calls()] == [200, 401, 200, 200]


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
            cfg.FloatOpt("nova_service_update_timeout", default=120.0),
            cfg.IntOpt("nova_api_max_connections", default=16),
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
    clients = Clients(conf)
    client = clients.nova()
    assert clients.nova() is client
    for _ in range(3):
        clients.nova().get_server(SERVER)
    assert sim.token_requests() == 1
    assert [c["microversion"] for c in sim.nova_calls()] == ["2.53"] * 3
    # each policy has a session and token of its own; another process's Clients its own
    assert clients.nova(retry.ENGINE) is not client
    assert Clients(conf).nova() is not client


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


def test_a_success_that_is_not_json_is_an_error() -> None:
    class HtmlAdapter(ks_adapter.Adapter):
        """What a misconfigured proxy in front of Nova answers."""

        def request(self, url: str, method: str, **kwargs: Any) -> requests.Response:
            return _response(200, b"<html>welcome</html>", {})

    client = NovaClient(HtmlAdapter(ks_session.Session()))
    with pytest.raises(exception.NovaError) as err:
        client.get_server(SERVER)
    assert err.value.status == 200


def _count(counter: Any, operation: str) -> float:
    return float(counter.labels(operation)._value.get())


def test_retries_and_give_ups_are_counted_by_operation(sim: NovaSimulator) -> None:
    from masakari import metrics

    counters = metrics.instruments()
    op = "GET /servers/{id}"
    retried, gave_up = _count(counters.nova_retries, op), _count(counters.nova_give_ups, op)
    sim.fail(503, method="GET", times=1)
    client = sim.client(policy=Policy(retries=2, delay=0.01))
    client.get_server(SERVER)
    assert _count(counters.nova_retries, op) == retried + 1
    sim.fail(503, method="GET", times=3)
    with pytest.raises(NovaRequestError):
        client.get_server(SERVER)
    assert _count(counters.nova_retries, op) == retried + 3
    assert _count(counters.nova_give_ups, op) == gave_up + 1

"""Host failure against the real Nova: a host's nova-compute killed (-9), masakari-monitors'
report sent, and what Nova then holds: where each server runs, in which state, its instance
actions, the failed host's service; and what masakari recorded."""

from __future__ import annotations

from collections.abc import Callable

from tests.openstack import records
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari, recommended
from tests.support.tcpproxy import TCPProxy

FAILED = "compute-1"
OTHERS = ["compute-2", "compute-3"]


def _servers(cloud: Cloud) -> dict[str, str]:
    """Three servers on the host that fails: two running (one HA-enabled), one stopped;
    the state each must have once recovered, by id."""
    running, ha, stopped = cloud.wait_active(
        [
            cloud.boot("vm-active", FAILED, wait=False),
            cloud.boot("vm-ha", FAILED, wait=False, metadata={"HA_Enabled": "True"}),
            cloud.boot("vm-stopped", FAILED, wait=False),
        ]
    )
    cloud.nova.post(f"/servers/{stopped}/action", json={"os-stop": None})
    cloud.wait_server(stopped, lambda s: records.vm_state(s) == "stopped", 60)
    return {running: "active", ha: "active", stopped: "stopped"}


def _fail(cloud: Cloud, wait_down: bool = True) -> None:
    cloud.kill_compute(FAILED)
    if wait_down:
        # A monitor reports once its cluster fenced the host, after Nova's heartbeat window.
        cloud.wait_computes([FAILED], "down", timeout=60)


def _assert_recovered(cloud: Cloud, masakari: Masakari, nid: str, expected: dict[str, str]) -> None:
    for server, state in expected.items():
        records.assert_recovered(cloud, server, FAILED, state)
        assert records.action_names(cloud, server)[-3:] == ["lock", "evacuate", "unlock"]
    moves = records.vmoves(masakari, nid)
    assert set(moves) == set(expected)
    assert {m["status"] for m in moves.values()} == {"succeeded"}
    for server, move in moves.items():
        assert move["dest_host"] == records.host_of(cloud.server(server))


def test_default_flow(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    expected = _servers(cloud)
    deployment = masakari()
    segment = deployment.segment("seg", [FAILED, *OTHERS])
    _fail(cloud)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, timeout=240)

    _assert_recovered(cloud, deployment, nid, expected)
    service = cloud.services()[FAILED]
    assert service["status"] == "disabled"
    assert service["disabled_reason"] == "Masakari detected host failed."
    assert service["forced_down"] is False
    assert records.masakari_host(deployment, segment, FAILED)["on_maintenance"] is True


def test_recommended_flow(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    expected = _servers(cloud)
    deployment = masakari(recommended())
    segment = deployment.segment("seg", [FAILED, *OTHERS])
    _fail(cloud)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, timeout=240)

    _assert_recovered(cloud, deployment, nid, expected)
    assert cloud.services()[FAILED]["status"] == "disabled"
    assert records.masakari_host(deployment, segment, FAILED)["on_maintenance"] is True

    # The host comes back and says so: the recommended host-return steps undo the recovery's.
    cloud.start_compute(FAILED)
    cloud.wait_computes([FAILED], "up", timeout=60)
    back = deployment.notify(
        "COMPUTE_HOST",
        FAILED,
        {"event": "STARTED", "cluster_status": "ONLINE", "host_status": "NORMAL"},
    )
    deployment.wait_notification(back, timeout=120)
    service = cloud.services()[FAILED]
    assert (service["status"], service["forced_down"]) == ("enabled", False)
    assert records.masakari_host(deployment, segment, FAILED)["on_maintenance"] is False


def test_forced_down_hand_off(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """A report of a fenced host (host_status NORMAL) with force_down_fenced_host: reported at
    once after the kill, while Nova still counts the host up; forced down, then evacuated
    without the wait for Nova's heartbeat window."""
    expected = _servers(cloud)
    deployment = masakari(
        recommended(host_failure={"force_down_fenced_host": True}),
    )
    deployment.segment("seg", [FAILED, *OTHERS])
    _fail(cloud, wait_down=False)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, timeout=240)

    _assert_recovered(cloud, deployment, nid, expected)
    service = cloud.services()[FAILED]
    assert (service["status"], service["forced_down"]) == ("disabled", True)


def test_disable_while_nova_counts_the_host_up(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    """Reported at once after the kill, while Nova still counts the host up: Nova's disable
    blocks its rpc_response_timeout in a call to the dead compute, longer than masakari's
    nova_api_timeout. The disable reaches Nova once (through the nova-drill proxy, counted)
    and the recovery goes on."""
    expected = _servers(cloud)
    rpc = cloud.layout.rpc_response_timeout
    nova = cloud.layout.port("nova")
    with TCPProxy("127.0.0.1", nova, port=cloud.layout.port("nova-proxy"), record=True) as proxy:
        deployment = masakari(
            {
                "DEFAULT": {
                    "nova_catalog_admin_info": "compute:nova-drill:publicURL",
                    "nova_api_timeout": max(5, rpc // 3),
                }
            }
        )
        deployment.segment("seg", [FAILED, *OTHERS])
        _fail(cloud, wait_down=False)
        nid = deployment.report_host_down(FAILED)
        deployment.wait_notification(nid, timeout=3 * rpc + 180)
        disables = proxy.requests(rb"PUT /v2\.1/os-services/\S+")
    assert len(disables) == 1, disables
    _assert_recovered(cloud, deployment, nid, expected)
    service = cloud.services()[FAILED]
    assert (service["status"], service["disabled_reason"]) == (
        "disabled",
        "Masakari detected host failed.",
    )

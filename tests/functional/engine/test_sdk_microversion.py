"""Microversion 1.4 through openstacksdk, as a client sees it over HTTP.

The SDK has no verb for the held-notification action: it goes through the proxy's raw
session with the microversion header. Its own resources (which send no 1.4) must see the
bodies of 1.3, held notification included.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from wsgiref import simple_server

import openstack.connection
import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from tests.fakes import nova as fake_nova
from tests.support.deployment import Deployment, host_body, segment_body
from tests.support.storms import host_report

# Keys of a notification at 1.3 (show adds recovery_workflow_details from 1.1).
KEYS_1_3 = {
    "created_at",
    "updated_at",
    "deleted_at",
    "deleted",
    "id",
    "notification_uuid",
    "generated_time",
    "source_host_uuid",
    "type",
    "payload",
    "status",
    "failover_segment_uuid",
    "message",
}


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def served() -> Iterator[tuple[Deployment, str]]:
    dep = Deployment(
        {
            "DEFAULT": {"api_max_microversion": "1.4", "notification_delay_max": "0"},
            "guards": {"hold_unknown_host_reports": "true"},
        }
    )
    server = simple_server.make_server("127.0.0.1", 0, dep.app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield dep, f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        dep.close()


def test_action_through_the_sdk_raw_session(served: tuple[Deployment, str]) -> None:
    dep, url = served
    seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
    assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).status_int == 201
    held = dep.request("POST", "/v1/notifications", host_report("compute-1", status="UNKNOWN"))
    nid = held.json["notification"]["notification_uuid"]

    session = ks_session.Session(auth=token_endpoint.Token(url, fake_nova.ADMIN_TOKEN))
    conn = openstack.connection.Connection(session=session, instance_ha_endpoint_override=url)

    # The SDK's resources, at the versions it speaks: 1.3 bodies, the hold invisible.
    shown = conn.instance_ha.get(f"/notifications/{nid}")
    assert shown.status_code == 200
    assert set(shown.json()["notification"]) == KEYS_1_3
    assert shown.json()["notification"]["status"] == "new"
    sdk_view = conn.instance_ha.get_notification(nid)
    assert sdk_view.status == "new"

    at_1_3 = conn.instance_ha.post(
        f"/notifications/{nid}/action", json={"release": None}, microversion="1.3"
    )
    assert at_1_3.status_code == 405

    at_1_4 = conn.instance_ha.get(f"/notifications/{nid}", microversion="1.4")
    assert at_1_4.headers["OpenStack-API-Version"] == "instance-ha 1.4"
    assert at_1_4.json()["notification"]["status"] == "held"

    released = conn.instance_ha.post(
        f"/notifications/{nid}/action", json={"release": None}, microversion="1.4"
    )
    assert released.status_code == 200
    body = released.json()["notification"]
    assert set(body) == KEYS_1_3 | {"hold_reason", "failure_reason"}
    assert (body["status"], body["hold_reason"]) == ("new", None)
    again = conn.instance_ha.post(
        f"/notifications/{nid}/action", json={"cancel": None}, microversion="1.4"
    )
    assert again.status_code == 409

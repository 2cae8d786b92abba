"""The policy matrix: every operation as admin and as member, and a policy file override."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.deployment import ADMIN, MEMBER, Deployment, Objects, host_body, segment_body

# An operation: (rule, method, path builder, body builder, admin status).
Paths = Callable[[Objects], tuple[str, Any]]


def _segment(o: Objects) -> tuple[str, Any]:
    return f"/v1/segments/{o.segment()}", None


def _segment_update(o: Objects) -> tuple[str, Any]:
    return f"/v1/segments/{o.segment()}", {"segment": {"description": "x"}}


def _hosts(o: Objects) -> tuple[str, Any]:
    return f"/v1/segments/{o.segment()}/hosts", None


def _host_create(o: Objects) -> tuple[str, Any]:
    return f"/v1/segments/{o.segment()}/hosts", host_body("compute-2")


def _host(o: Objects) -> tuple[str, Any]:
    segment = o.segment()
    return f"/v1/segments/{segment}/hosts/{o.host(segment, 'compute-3')}", None


def _host_update(o: Objects) -> tuple[str, Any]:
    segment = o.segment()
    host = o.host(segment, "compute-3")
    return f"/v1/segments/{segment}/hosts/{host}", {"host": {"reserved": True}}


def _notification_env(o: Objects) -> str:
    segment = o.segment(enabled=False)
    o.host(segment, "compute-4")
    return o.notification("compute-4", "COMPUTE_HOST", event="STOPPED")


def _notification(o: Objects) -> tuple[str, Any]:
    return f"/v1/notifications/{_notification_env(o)}", None


def _notification_create(o: Objects) -> tuple[str, Any]:
    segment = o.segment(enabled=False)
    o.host(segment, "compute-4")
    body = {
        "notification": {
            "type": "PROCESS",
            "hostname": "compute-4",
            "generated_time": "2026-05-05T00:00:00",
            "payload": {"event": "STOPPED", "process_name": "p"},
        }
    }
    return "/v1/notifications", body


def _vmoves(o: Objects) -> tuple[str, Any]:
    return f"/v1/notifications/{_notification_env(o)}/vmoves", None


def _vmove(o: Objects) -> tuple[str, Any]:
    notification = _notification_env(o)
    return f"/v1/notifications/{notification}/vmoves/{o.vmove(notification)}", None


def _fixed(path: str, body: Any = None) -> Paths:
    return lambda o: (path, body)


OPERATIONS: list[tuple[str, str, Paths, int]] = [
    ("segments:index", "GET", _fixed("/v1/segments"), 200),
    ("segments:detail", "GET", _segment, 200),
    ("segments:create", "POST", lambda o: ("/v1/segments", segment_body("seg-policy")), 201),
    ("segments:update", "PUT", _segment_update, 200),
    ("segments:delete", "DELETE", _segment, 204),
    ("os-hosts:index", "GET", _hosts, 200),
    ("os-hosts:detail", "GET", _host, 200),
    ("os-hosts:create", "POST", _host_create, 201),
    ("os-hosts:update", "PUT", _host_update, 200),
    ("os-hosts:delete", "DELETE", _host, 204),
    ("notifications:index", "GET", _fixed("/v1/notifications"), 200),
    ("notifications:detail", "GET", _notification, 200),
    ("notifications:create", "POST", _notification_create, 202),
    ("vmoves:index", "GET", _vmoves, 200),
    ("vmoves:detail", "GET", _vmove, 200),
    ("extensions:index", "GET", _fixed("/v1/extensions"), 200),
    ("extensions:detail", "GET", _fixed("/v1/extensions/segments"), 200),
]
IDS = [op[0] for op in OPERATIONS]


@pytest.mark.parametrize(("rule", "method", "paths", "status"), OPERATIONS, ids=IDS)
def test_admin_may(
    clean: Deployment, objects: Objects, rule: str, method: str, paths: Paths, status: int
) -> None:
    path, body = paths(objects)
    response = clean.request(method, path, body, headers=ADMIN)
    assert response.status_int == status, response.text


@pytest.mark.parametrize(("rule", "method", "paths", "status"), OPERATIONS, ids=IDS)
def test_member_may_not(
    clean: Deployment, objects: Objects, rule: str, method: str, paths: Paths, status: int
) -> None:
    path, body = paths(objects)
    response = clean.request(method, path, body, headers=MEMBER)
    assert response.status_int == 403, response.text
    assert response.json == {
        "forbidden": {
            "code": 403,
            "message": f"Policy doesn't allow os_masakari_api:{rule} to be performed.",
        }
    }


@pytest.mark.parametrize("headers", [ADMIN, MEMBER], ids=["admin", "member"])
def test_version_document_is_open_to_any_role(
    deployment: Deployment, headers: dict[str, str]
) -> None:
    assert deployment.request("GET", "/v1", headers=headers).status_int == 200


def test_member_list_of_extensions_hides_the_undiscoverable(tmp_path: Any) -> None:
    """Opening extensions:index to members lists only what their discoverable rules allow."""
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        '"os_masakari_api:extensions:index": "role:member"\n'
        '"os_masakari_api:segments:discoverable": "role:member"\n'
    )
    with Deployment({"oslo_policy": {"policy_file": str(policy_file)}}) as d:
        response = d.request("GET", "/v1/extensions", headers=MEMBER)
        assert response.status_int == 200
        # versions:discoverable is "@" by default.
        assert [e["alias"] for e in response.json["extensions"]] == ["segments", "versions"]


def test_policy_file_opens_one_operation_to_members(tmp_path: Any) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"os_masakari_api:segments:index": "role:member"\n')
    with Deployment({"oslo_policy": {"policy_file": os.fspath(policy_file)}}) as d:
        assert d.request("POST", "/v1/segments", segment_body("s1")).status_int == 201
        listed = d.request("GET", "/v1/segments", headers=MEMBER)
        assert listed.status_int == 200
        assert [s["name"] for s in listed.json["segments"]] == ["s1"]
        # Every other operation stays admin-only.
        segment = listed.json["segments"][0]["uuid"]
        assert d.request("GET", f"/v1/segments/{segment}", headers=MEMBER).status_int == 403
        assert (
            d.request("POST", "/v1/segments", segment_body("s2"), headers=MEMBER).status_int == 403
        )

"""The 1.4 to 1.8 surface exists only up to [DEFAULT] api_max_microversion.

docs/api.md: the served range is 1.0 to api_max_microversion (1.3 by default), ``latest`` is
that maximum, a version above it is a 406 -- except on a route a microversion added, which
then does not exist (404, as any unknown path; the 1.4 action route is the reference's
unimplemented action, 405 badMethod). Every route and field is checked at each configured
maximum and each requested version, so that gating on the newest version the code knows
instead of the configured one shows wherever it leaks.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.api import microversion
from tests.support.deployment import Deployment, host_body, segment_body

CONFIGURED = ("1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10")
# None: no header (1.0).
REQUESTED = (None, "1.0", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "latest")
UNKNOWN = "00000000-0000-4000-8000-000000000000"


def _effective(configured: str, requested: str | None) -> str | None:
    """The version a request is served at, or None for a 406."""
    if requested is None:
        return "1.0"
    if requested == "latest":
        return configured
    ok = microversion.parse_string(requested) <= microversion.parse_string(configured)
    return requested if ok else None


def _at_least(version: str | None, since: str) -> bool:
    return version is not None and (
        microversion.parse_string(version) >= microversion.parse_string(since)
    )


@dataclasses.dataclass
class Served:
    dep: Deployment
    configured: str
    segment: str
    host: str
    held: str


@pytest.fixture(scope="module", params=CONFIGURED)
def served(request: Any) -> Iterator[Served]:
    configured = request.param
    options = {
        "DEFAULT": {"api_max_microversion": configured},
        "guards": {"hold_unknown_host_reports": "true"},
        # Reports are judged, and kept as evidence: what 1.7 shows.
        "verdict": {"rule": "any_two"},
    }
    with Deployment(options) as dep:
        seg = dep.request("POST", "/v1/segments", segment_body("gates")).json["segment"]["uuid"]
        r = dep.request("POST", f"/v1/segments/{seg}/hosts", host_body("compute-1"))
        host = r.json["host"]["uuid"]
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()
        report = {
            "notification": {
                "type": "COMPUTE_HOST",
                "hostname": "compute-1",
                "generated_time": now,
                "payload": {"event": "STOPPED", "host_status": "UNKNOWN"},
            }
        }
        r = dep.request("POST", "/v1/notifications", report)
        assert r.status_int == 202, r.text
        yield Served(dep, configured, seg, host, r.json["notification"]["notification_uuid"])


def _is_406(r: Any, served: Served, requested: str | None) -> bool:
    message = (
        f"Version {requested} is not supported by the API. "
        f"Minimum is 1.0 and maximum is {served.configured}."
    )
    return r.status_int == 406 and r.json == {"masakariFault": {"code": 406, "message": message}}


def _is_unknown_path(r: Any) -> bool:
    # The mapper's 404: plain text, not a fault.
    return r.status_int == 404 and r.content_type != "application/json"


@pytest.mark.parametrize("requested", REQUESTED)
def test_the_action_route_from_1_4(served: Served, requested: str | None) -> None:
    version = _effective(served.configured, requested)
    path = f"/v1/notifications/{UNKNOWN}/action"
    r = served.dep.request("POST", path, {"release": None}, version=requested)
    if version is None:
        assert _is_406(r, served, requested), r.text
    elif _at_least(version, "1.4"):
        # The handler: the notification is unknown.
        assert r.status_int == 404 and "itemNotFound" in r.json, r.text
        assert r.headers["OpenStack-API-Version"] == f"instance-ha {version}"
    else:
        assert r.status_int == 405 and "badMethod" in r.json, r.text
        assert r.headers["OpenStack-API-Version"] == f"instance-ha {version}"


@pytest.mark.parametrize("route", ["recovery_plan", "readiness"])
@pytest.mark.parametrize("requested", REQUESTED)
def test_the_routes_of_1_5(served: Served, requested: str | None, route: str) -> None:
    version = _effective(served.configured, requested)
    if route == "readiness":
        path = f"/v1/segments/{served.segment}/readiness"
    else:
        path = f"/v1/segments/{served.segment}/hosts/{served.host}/recovery_plan"
    r = served.dep.request("GET", path, version=requested)
    if _at_least(version, "1.5"):
        assert r.status_int == 200, r.text
        assert route in r.json
        assert r.headers["OpenStack-API-Version"] == f"instance-ha {version}"
        if route == "readiness":
            tolerated = "failures_tolerated" in r.json["readiness"]
            assert tolerated == _at_least(version, "1.8"), r.text
    else:
        # Absent at every other version, a version above the maximum included.
        assert _is_unknown_path(r), (r.status, r.text)


@pytest.mark.parametrize("requested", REQUESTED)
def test_the_fields_of_1_4(served: Served, requested: str | None) -> None:
    version = _effective(served.configured, requested)
    dep, held = served.dep, served.held
    shown = dep.request("GET", f"/v1/notifications/{held}", version=requested)
    listed = dep.request("GET", "/v1/notifications", version=requested)
    if version is None:
        assert _is_406(shown, served, requested) and _is_406(listed, served, requested)
        return
    assert shown.headers["OpenStack-API-Version"] == f"instance-ha {version}"
    (row,) = listed.json["notifications"]
    for body in (shown.json["notification"], row):
        if _at_least(version, "1.4"):
            assert body["status"] == "held"
            assert body["hold_reason"] == "host status UNKNOWN: waiting for confirmation"
            assert "failure_reason" in body
        else:
            # The reference's body: the held notification is new, nothing more.
            assert body["status"] == "new"
            assert "hold_reason" not in body and "failure_reason" not in body
    # Filtering on held is a 1.4 word; below, a held notification is one of the new ones.
    by_status = dep.request("GET", "/v1/notifications?status=new", version=requested)
    assert len(by_status.json["notifications"]) == (0 if _at_least(version, "1.4") else 1)


@pytest.mark.parametrize("requested", REQUESTED)
def test_the_fencing_of_1_6_in_show_only(served: Served, requested: str | None) -> None:
    version = _effective(served.configured, requested)
    if version is None:
        return  # the 406 is test_the_fields_of_1_4's
    dep, held = served.dep, served.held
    shown = dep.request("GET", f"/v1/notifications/{held}", version=requested)
    (row,) = dep.request("GET", "/v1/notifications", version=requested).json["notifications"]
    # No fencing configured: an empty list, and lists never carry it.
    assert shown.json["notification"].get("fencing") == ([] if _at_least(version, "1.6") else None)
    assert "fencing" not in row


def test_the_version_documents_name_the_configured_maximum(served: Served) -> None:
    dep = served.dep
    assert dep.request("GET", "/v1").json["version"]["version"] == served.configured
    assert dep.request("GET", "/").json["versions"][0]["version"] == served.configured
    r = dep.request("GET", "/v1/segments", version="latest")
    assert r.headers["OpenStack-API-Version"] == f"instance-ha {served.configured}"


@pytest.mark.parametrize("requested", REQUESTED)
def test_the_evidence_of_1_7(served: Served, requested: str | None) -> None:
    version = _effective(served.configured, requested)
    dep, held = served.dep, served.held
    shown = dep.request("GET", f"/v1/notifications/{held}", version=requested)
    if version is None:
        assert _is_406(shown, served, requested)
        return
    (row,) = dep.request("GET", "/v1/notifications", version=requested).json["notifications"]
    assert "evidence" not in row, "a list shows no evidence"
    if _at_least(version, "1.7"):
        (report,) = shown.json["notification"]["evidence"]
        assert report == {
            "kind": "report",
            "source": "monitor",
            "failed": True,
            "value": "UNKNOWN",
            "detail": "COMPUTE_HOST STOPPED, host_status UNKNOWN",
            "observed_at": report["observed_at"],
        }
    else:
        assert "evidence" not in shown.json["notification"]

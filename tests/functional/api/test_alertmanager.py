"""POST /alertmanager: Alertmanager's webhook body as it sends it, its credentials, the
label-to-host rule, a repeated alert, a resolved one, and the route's absence unless
configured. Real Prometheus and Alertmanager send to it in test_alertmanager_real.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.ha import alerts
from tests.support.deployment import Deployment, host_body, segment_body

BASIC = "Basic " + base64.b64encode(b"alertmanager:s3cret").decode()
OPTIONS = {
    "DEFAULT": {"api_max_microversion": "1.10"},
    "quarantine": {
        "enabled": True,
        "max_hosts_per_segment": 3,
        "max_percent": 100,
        "alertmanager_username": "alertmanager",
        "alertmanager_password": "s3cret",
        "alertmanager_bearer_token": "tok-123",
    },
}


@pytest.fixture(scope="module")
def dep() -> Iterator[Deployment]:
    with Deployment(OPTIONS) as d:
        r = d.request("POST", "/v1/segments", segment_body("alerted"))
        seg = r.json["segment"]["uuid"]
        for host in ("am-1", "am-2", "am-3.example.org"):
            d.sim.add_service(host)
            assert d.request("POST", f"/v1/segments/{seg}/hosts", host_body(host)).status_int == 201
        yield d


def _alert(status: str = "firing", fingerprint: str = "f1", **labels: str) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "EdacCorrectableErrorsHigh", **labels},
        "annotations": {"summary": "correctable ECC errors on DIMM A3"},
        "startsAt": "2026-12-06T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": fingerprint,
    }


def _body(*alerts_: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": '{}:{alertname="EdacCorrectableErrorsHigh"}',
        "truncatedAlerts": 0,
        "status": alerts_[0]["status"] if alerts_ else "firing",
        "receiver": "masakari",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts_),
    }


def _post(dep: Deployment, body: Any, auth: str | None = BASIC, raw: bytes | None = None) -> Any:
    headers = {"Authorization": auth} if auth else {}
    return dep.request("POST", "/alertmanager", body, headers=headers, raw=raw)


def test_a_firing_alert_quarantines_its_host_once_and_its_resolution_withdraws_it(dep):
    r = _post(dep, _body(_alert(instance="am-1:9100", fingerprint="a1")))
    assert r.status_int == 200, r.text
    (entry,) = r.json["alerts"]
    assert (entry["host"], entry["outcome"]) == ("am-1", "requested")
    shown = dep.request("GET", f"/v1/quarantines/{entry['quarantine']}", version="1.10").json
    quarantine = shown["quarantine"]
    assert (quarantine["source"], quarantine["status"]) == ("alertmanager", "requested")
    assert quarantine["reason"] == ("EdacCorrectableErrorsHigh: correctable ECC errors on DIMM A3")
    # Alertmanager repeats a firing alert every repeat_interval: nothing new.
    again = _post(dep, _body(_alert(instance="am-1:9100", fingerprint="a1"))).json["alerts"]
    assert again[0]["outcome"] == "already" and again[0]["quarantine"] == entry["quarantine"]
    # Resolved before an engine started it: withdrawn, nothing was changed.
    resolved = _post(dep, _body(_alert("resolved", instance="am-1:9100", fingerprint="a1")))
    assert resolved.json["alerts"][0]["outcome"] == "resolved"
    assert resolved.json["alerts"][0]["quarantines"] == [entry["quarantine"]]
    after = dep.request("GET", f"/v1/quarantines/{entry['quarantine']}", version="1.10").json
    assert after["quarantine"]["status"] == "withdrawn"
    assert after["quarantine"]["signal_ended_at"]


def test_the_label_rule_and_what_is_ignored(dep):
    body = _body(
        _alert(hostname="am-3", fingerprint="b1"),  # by its first DNS label
        _alert(instance="unknown-9:9100", fingerprint="b2"),
        _alert(job="node", fingerprint="b3"),  # no host label at all
        _alert(instance="am-2:9100", masakari_signal="storage", fingerprint="b4"),
    )
    said = _post(dep, body, auth="Bearer tok-123").json["alerts"]
    assert [(e["host"], e["outcome"]) for e in said] == [
        ("am-3.example.org", "requested"),
        (None, "ignored"),
        (None, "ignored"),
        ("am-2", "requested"),
    ]
    storage = dep.request("GET", f"/v1/quarantines/{said[3]['quarantine']}", version="1.10")
    assert storage.json["quarantine"]["source"] == "storage"


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "Basic " + base64.b64encode(b"alertmanager:wrong").decode(),
        "Basic !!!",
        "Bearer nope",
        "Token tok-123",
    ],
)
def test_wrong_credentials_are_refused(dep, auth):
    r = _post(dep, _body(_alert(instance="am-1:9100", fingerprint="c1")), auth=auth)
    assert r.status_int == 401
    assert r.headers["WWW-Authenticate"] == 'Basic realm="masakari"'


def test_bodies_it_cannot_read(dep):
    assert _post(dep, None, raw=b"{not json").status_int == 400
    r = _post(dep, {"alerts": "x"})
    assert r.status_int == 400 and "'alerts' is not a list" in r.json["error"]
    assert dep.request("GET", "/alertmanager", headers={"Authorization": BASIC}).status_int == 405


def test_not_served_without_credentials_or_with_quarantine_off():
    for quarantine in ({"enabled": True}, {"enabled": False, "alertmanager_bearer_token": "t"}):
        with Deployment({"quarantine": quarantine}) as d:
            r = d.request("POST", "/alertmanager", _body(), headers={"Authorization": "Bearer t"})
            # Unknown as any path outside /v1: the version list, as the reference answers.
            assert r.status_int == 300 and "choices" in r.json


@pytest.mark.parametrize(
    ("named", "hosts", "found"),
    [
        ("compute-1", ["compute-1"], "compute-1"),
        ("compute-1.example.org", ["compute-1"], "compute-1"),
        ("compute-1", ["compute-1.example.org"], "compute-1.example.org"),
        ("compute-1", ["compute-1.a", "compute-1.b"], None),  # ambiguous: nobody
        ("compute-10", ["compute-1"], None),
        (None, ["compute-1"], None),
    ],
)
def test_match(named, hosts, found):
    assert alerts.match(named, hosts) == found

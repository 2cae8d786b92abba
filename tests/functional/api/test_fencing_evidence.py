"""Host fencing's evidence where operators read it: notification show at API 1.6 (and not
below, nor in lists), masakari-manage notification show and its HTML timeline, and the
readiness doctor's fencing findings from the checks the engines recorded."""

from __future__ import annotations

import datetime
import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from masakari.cmd import manage
from masakari.db import fencing
from masakari.db.models import utcnow
from tests.support.deployment import Deployment, host_body, segment_body

T0 = datetime.datetime(2026, 6, 1, 10, 0, 0, 250000)


@pytest.fixture(scope="module")
def dep():
    options = {"DEFAULT": {"api_max_microversion": "1.6"}, "fencing": {"check_interval": "60"}}
    with Deployment(options) as d:
        yield d


def report(dep: Deployment, host: str) -> str:
    body = {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": host,
            "generated_time": T0.isoformat(),
            "payload": {"event": "STOPPED", "host_status": "NORMAL"},
        }
    }
    r = dep.request("POST", "/v1/notifications", body)
    assert r.status_int == 202, r.text
    return r.json["notification"]["notification_uuid"]


def test_the_attempts_in_show_from_1_6_and_in_the_timeline(dep, tmp_path: Path) -> None:
    seg = dep.request("POST", "/v1/segments", segment_body("ev")).json["segment"]["uuid"]
    dep.request("POST", f"/v1/segments/{seg}/hosts", host_body("compute-1"))
    nid = report(dep, "compute-1")
    with dep.db.writer() as s:
        off = fencing.start(s, nid, "e-1", 1, "compute-1", 0, "ipmi 192.0.2.1:623", "off", T0)
        fencing.answer(s, off, fencing.UNREACHABLE, "no answer in 2 s", 2.0)
        fencing.start(
            s,
            nid,
            "e-1",
            1,
            "compute-1",
            1,
            "bmc-b: redfish https://192.0.2.2",
            "status",
            T0 + datetime.timedelta(seconds=2),
            result=fencing.POWER_OFF,
            message="off after 2 read(s)",
            duration=0.75,
        )

    shown = dep.request("GET", f"/v1/notifications/{nid}", version="1.6").json["notification"]
    assert shown["fencing"] == [
        {
            "host": "compute-1",
            "position": 0,
            "driver": "ipmi 192.0.2.1:623",
            "action": "off",
            "result": "unreachable",
            "message": "no answer in 2 s",
            "started_at": "2026-06-01T10:00:00.250000",
            "duration": 2.0,
        },
        {
            "host": "compute-1",
            "position": 1,
            "driver": "bmc-b: redfish https://192.0.2.2",
            "action": "status",
            "result": "off",
            "message": "off after 2 read(s)",
            "started_at": "2026-06-01T10:00:02.250000",
            "duration": 0.75,
        },
    ]
    older = dep.request("GET", f"/v1/notifications/{nid}", version="1.5").json["notification"]
    assert "fencing" not in older
    listed = dep.request("GET", "/v1/notifications", version="1.6").json["notifications"]
    assert all("fencing" not in row for row in listed)

    page = tmp_path / "t.html"
    out = io.StringIO()
    argv = ["--config-file", dep.conf_path, "notification", "show", nid, "--html", str(page)]
    with redirect_stdout(out):
        assert manage.main(argv) == 0
    text = out.getvalue()
    assert "host fencing:" in text and "held:" not in text
    lines = [line.split() for line in text.splitlines() if "192.0.2." in line]
    assert any(w[:5] == ["0", "ipmi", "192.0.2.1:623", "off", "unreachable"] for w in lines)
    assert any("status" in w and "off" in w and "0.75s" in w for w in lines)
    html = page.read_text()
    assert html.count('class="bar fence"') == 2
    assert 'data-result="unreachable"' in html and 'data-result="off"' in html


def test_the_doctor_reports_recorded_fencing_checks_only_when_there_are_some(dep) -> None:
    seg = dep.request("POST", "/v1/segments", segment_body("doc")).json["segment"]
    for name in ("compute-2", "compute-3"):
        dep.request("POST", f"/v1/segments/{seg['uuid']}/hosts", host_body(name))
    path = f"/v1/segments/{seg['uuid']}/readiness"
    before = dep.request("GET", path, version="1.5").json["readiness"]["findings"]
    assert not [f for f in before if f["check"] == "fencing"]

    now = utcnow()
    with dep.db.writer() as s:
        fencing.replace_checks(
            s,
            "compute-2",
            [
                fencing.Check(
                    "compute-2", 0, "ipmi 192.0.2.2:623", "unreachable", "no answer", now, "e-1"
                ),
                fencing.Check(
                    "compute-2",
                    1,
                    "redfish https://192.0.2.12",
                    "ok",
                    "power state: on",
                    now,
                    "e-1",
                ),
            ],
        )
        fencing.replace_checks(
            s, "compute-3", [fencing.Check("compute-3", 0, "", "unfenced", "no driver", now, "e-1")]
        )
    found = dep.request("GET", path, version="1.5").json["readiness"]
    fenced = [f for f in found["findings"] if f["check"] == "fencing"]
    assert [f["status"] for f in fenced] == ["warning", "warning"]
    assert (
        "compute-2': ipmi 192.0.2.2:623: unreachable (no answer); fenced by redfish"
        in fenced[0]["detail"]
    )
    assert "compute-3' has no power fencing configured" in fenced[1]["detail"]
    assert all(f["segment"] == seg["name"] for f in fenced)

    old = now - datetime.timedelta(seconds=400)  # more than 3 check intervals (60 s)
    with dep.db.writer() as s:  # every driver of a host fails: its failure would be held
        fencing.replace_checks(
            s,
            "compute-2",
            [
                fencing.Check(
                    "compute-2", 0, "ipmi 192.0.2.2:623", "refused", "bad password", old, "e-1"
                )
            ],
        )
        fencing.replace_checks(
            s, "compute-3", [fencing.Check("compute-3", 0, "ipmi x", "ok", None, old, "e-1")]
        )
    found = dep.request("GET", path, version="1.5").json["readiness"]
    assert found["status"] == "failure" and found["code"] == 2
    details = [f["detail"] for f in found["findings"] if f["check"] == "fencing"]
    assert any(
        "no fencing driver answers" in d and "its failure would be held" in d for d in details
    )
    assert any("no engine checks them now" in d for d in details)


def test_segment_check_prints_the_fencing_findings(dep) -> None:
    seg = dep.request("POST", "/v1/segments", segment_body("cli")).json["segment"]
    dep.request("POST", f"/v1/segments/{seg['uuid']}/hosts", host_body("compute-4"))
    with dep.db.writer() as s:
        fencing.replace_checks(
            s,
            "compute-4",
            [
                fencing.Check(
                    "compute-4", 0, "ipmi 192.0.2.4:623", "refused", "bad password", utcnow(), "e-1"
                )
            ],
        )
    out = io.StringIO()
    with redirect_stdout(out):
        code = manage.main(["--config-file", dep.conf_path, "segment", "check", seg["name"]])
    assert code == 2
    printed = out.getvalue()
    assert (
        f"FAILURE  fencing [{seg['name']}]: Host 'compute-4': no fencing driver answers" in printed
    )

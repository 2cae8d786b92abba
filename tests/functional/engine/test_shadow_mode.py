"""Shadow mode end to end: an engine, the API and the Nova simulator (SQLite).

The detector in shadow sees a dead host and records it; the API lists no notification and
Nova is asked for nothing but its services. A monitor's report under [verdict] rule monitor
with shadow_rule fence is recovered as the reference would, and its evidence (API 1.7,
``masakari-manage notification show``) says the shadow rule would have held it. The polls
one by one: test_detection_shadow.py."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import metrics
from masakari.cmd import manage
from masakari.db.models import DetectorShadowReport
from tests.support.deployment import (
    Deployment,
    engine,
    host_body,
    host_down,
    report,
    segment_body,
    until_settled,
)
from tests.support.detector import detecting

ENGINE = {
    "api_max_microversion": "1.7",
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "2",
    "verify_interval": "1",
    "engine_poll_interval": "0.05",
    "notification_delay_max": "0",
}
HOSTS = ("compute-1", "compute-2", "compute-3")


@contextlib.contextmanager
def deployed(**sections: dict[str, str]) -> Iterator[Deployment]:
    with Deployment({"DEFAULT": ENGINE, **sections}) as dep:
        seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        for host in HOSTS:
            assert (
                dep.request("POST", f"/v1/segments/{seg}/hosts", host_body(host)).status_int == 201
            )
        yield dep


def shadowed(dep: Deployment) -> list[tuple[str, str, str | None]]:
    with dep.db.reader() as s:
        found = s.scalars(sa.select(DetectorShadowReport).order_by(DetectorShadowReport.id))
        return [(r.host_name, r.decision, r.gate) for r in found]


def until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return found


def test_a_detector_in_shadow_records_a_dead_host_and_nothing_is_reported_or_disabled(
    capsys,
) -> None:
    detection_opts = {"enabled": "true", "mode": "shadow", "poll_interval": "0.3"}
    with deployed(detection={**detection_opts, "grace_period": "1"}) as dep:
        dep.sim.service_down_time = 1.0
        vm = dep.sim.add_server(host="compute-2", metadata={"HA_Enabled": "True"})
        with detecting(dep):
            dep.sim.power_off("compute-2")
            until(lambda: shadowed(dep), 15, "the shadow report of compute-2")
            time.sleep(1.5)  # more polls: the same failure, no second row, still no report
            assert shadowed(dep) == [("compute-2", "report", None)]
            listed = dep.request("GET", "/v1/notifications").json["notifications"]
            assert listed == []
        assert [c for c in dep.sim.nova_calls() if c["method"] != "GET"] == []
        assert dep.sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "compute-2"
        assert dep.sim.service("compute-2")["status"] == "enabled"
        assert manage.main(["--config-file", dep.conf_path, "detection", "shadow"]) == 0
        (header, line) = capsys.readouterr().out.splitlines()
        assert header.split()[:5] == ["time", "host", "segment", "would", "gate"]
        # time (a date and a time), host, segment, would, gate, engine
        cells = line.split()
        assert [cells[2], cells[4], cells[5], cells[6]] == [
            "compute-2",
            "report",
            "-",
            "ctl-1:detector",
        ]


def shadow_judgements(decision: str, agreement: str) -> float:
    labels = {"rule": "monitor", "shadow_rule": "fence", "decision": decision}
    labels["agreement"] = agreement
    found = metrics.OWN.get_sample_value("masakari_verdict_shadow_judgements_total", labels)
    return found or 0.0


@pytest.mark.parametrize("shadow_rule", ["fence", None])
def test_a_monitors_report_is_recovered_by_the_monitor_rule_and_the_shadow_says_it_would_hold(
    capsys, shadow_rule
) -> None:
    verdict_opts = {} if shadow_rule is None else {"shadow_rule": shadow_rule}
    with deployed(verdict=verdict_opts) as dep:
        vm = dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        host_down(dep, "compute-1")
        before = shadow_judgements("hold", "disagree")
        nid = report(dep, "compute-1")
        with engine(dep):
            shown = until_settled(dep, nid, version="1.7")
        assert shown["status"] == "finished"
        assert dep.sim.evacuations_accepted == {vm: 1}
        shadows = [e for e in shown["evidence"] if e["kind"] == "shadow"]
        if shadow_rule is None:  # the defaults: no evidence is kept, nothing judged
            assert shown["evidence"] == []
            return
        assert [(e["source"], e["failed"], e["value"]) for e in shadows] == [
            ("shadow rule fence", False, "hold")
        ]
        assert shadows[0]["detail"] == (
            "would hold: no host fencing is configured for the host "
            "(rule monitor confirmed: disagrees)"
        )
        assert shadow_judgements("hold", "disagree") == before + 1
        assert manage.main(["--config-file", dep.conf_path, "notification", "show", nid]) == 0
        timeline = capsys.readouterr().out
        assert "would hold" in timeline

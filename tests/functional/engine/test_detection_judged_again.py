"""A monitor's report that comes after the verdict held the detector's report of the same
failure: refused (409) as its duplicate, kept as its evidence, and the verdict's hold ends
with it, for an engine to judge the failure again; a guard's or host fencing's hold stays.
Through the API (Keystone, the simulator) and an engine with the detector (SQLite)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.db import holds
from masakari.ha import notifications as intake
from masakari.ha.intake import Rules
from tests.support.deployment import Deployment, host_body, segment_body
from tests.support.detector import detecting

OPTIONS = {
    "DEFAULT": {
        "api_max_microversion": "1.7",
        "wait_period_after_service_update": "0",
        "wait_period_after_evacuation": "2",
        "verify_interval": "1",
        "engine_poll_interval": "0.05",
        "notification_delay_max": "0",
    },
    "detection": {"enabled": "true", "poll_interval": "0.3", "grace_period": "1"},
    "verdict": {"rule": "monitor", "wait": "1"},
}
HOSTS = ("compute-1", "compute-2", "compute-3")
VERDICT_HOLD = "verdict: monitor: no monitor's report of the failure within 1 s"


@pytest.fixture
def dep() -> Iterator[Deployment]:
    with Deployment(OPTIONS) as deployment:
        # Nova says a silent host is down once the detector's grace is over.
        deployment.sim.service_down_time = 1.0
        seg = deployment.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        for host in HOSTS:
            made = deployment.request("POST", f"/v1/segments/{seg}/hosts", host_body(host))
            assert made.status_int == 201
        yield deployment


def shown(dep: Deployment, nid: str) -> dict[str, Any]:
    got = dep.request("GET", f"/v1/notifications/{nid}", version="1.7")
    return dict(got.json["notification"])


def listed(dep: Deployment) -> list[dict[str, Any]]:
    return list(dep.request("GET", "/v1/notifications", version="1.4").json["notifications"])


def until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def monitor_reports(dep: Deployment, host: str, host_status: str) -> int:
    body = {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": host,
            "generated_time": datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat(),
            "payload": {"event": "STOPPED", "host_status": host_status},
        }
    }
    return int(dep.request("POST", "/v1/notifications", body).status_int)


@pytest.mark.parametrize("host_status", ["NORMAL", "UNKNOWN"])
def test_a_monitors_report_after_the_verdicts_hold_has_the_failure_judged_again(
    dep, host_status
) -> None:
    vm = dep.sim.add_server(host="compute-2", metadata={"HA_Enabled": "True"})
    with detecting(dep):
        dep.sim.power_off("compute-2")
        (found,) = until(lambda: listed(dep), 10, "the detector reports compute-2")
        nid = found["notification_uuid"]
        held = until(lambda: shown(dep, nid)["hold_reason"], 15, "the verdict holds it")
        assert held == VERDICT_HOLD
        assert dep.sim.evacuations_accepted == {}

        assert monitor_reports(dep, "compute-2", host_status) == 409
        if host_status == "NORMAL":  # the confirmation it waited for: recovered
            until(lambda: shown(dep, nid)["status"] == "finished", 30, "the recovery")
            assert dep.sim.evacuations_accepted == {vm: 1}
        else:  # judged again, not released: no power-off confirmed, held again
            again = (
                "verdict: monitor: the monitor's report says host_status UNKNOWN: "
                "no power-off confirmed"
            )
            until(lambda: shown(dep, nid)["hold_reason"] == again, 15, "held again")
            time.sleep(1.0)
            assert dep.sim.evacuations_accepted == {}
        verdicts = [e for e in shown(dep, nid)["evidence"] if e["kind"] == "verdict"]
        assert [v["failed"] for v in verdicts] == [False, host_status == "NORMAL"]
        assert not any(v["detail"].startswith("released by an operator") for v in verdicts)
        assert [n["notification_uuid"] for n in listed(dep)] == [nid]


@pytest.mark.parametrize(
    "reason",
    [
        holds.REASON_FENCE_FAILED + "ipmi bmc-compute-1: unreachable",
        holds.REASON_UNFENCED,
        holds.REASON_BREAKER,
        holds.REASON_STORM,
        holds.REASON_SEGMENT,
        VERDICT_HOLD,
    ],
)
def test_only_the_verdicts_hold_is_ended_by_a_report(dep, reason) -> None:
    detected = {
        "type": "COMPUTE_HOST",
        "hostname": "compute-1",
        "generated_time": datetime.datetime.now(datetime.UTC).isoformat(),
        "payload": {
            "event": "STOPPED",
            "host_status": "UNKNOWN",
            "cluster_status": "OFFLINE",
            "detector": "nova-services",
        },
    }
    row, _ = intake.record(dep.db, detected, Rules.from_conf(dep.conf), hold=reason)
    nid = row.notification_uuid
    assert shown(dep, nid)["hold_reason"] == reason
    assert monitor_reports(dep, "compute-1", "NORMAL") == 409
    after = shown(dep, nid)
    if reason == VERDICT_HOLD:  # no engine runs: new, for the next one to judge
        assert (after["status"], after["hold_reason"]) == ("new", None)
    else:  # a guard's or host fencing's: an operator's to release or cancel
        assert (after["status"], after["hold_reason"]) == ("held", reason)
    assert [(e["kind"], e["source"]) for e in after["evidence"]] == [
        ("report", "detector nova-services"),
        ("report", "monitor"),
    ]

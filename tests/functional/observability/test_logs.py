"""Logs an operator can follow: the lines of a recovery name it and its engine; and no
password or token reaches any log line, DEBUG included."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from masakari.engine import logtag
from tests.fakes import nova as fake_nova
from tests.support.deployment import Deployment, host_down, report, segment_with_host, settle

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "3",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}
PASSWORD = "pw-Zq8xLk2"


def status(dep: Deployment, nid: str) -> str:
    return str(dep.request("GET", f"/v1/notifications/{nid}").json["notification"]["status"])


@pytest.fixture
def tagged_records() -> Iterator[None]:
    """What masakari-engine installs, for one test: the record factory restored after it."""
    before = logging.getLogRecordFactory()
    logtag.install()
    yield
    logging.setLogRecordFactory(before)


@pytest.mark.usefixtures("tagged_records")
def test_recovery_lines_are_tagged_and_no_secret_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    extra = {
        "DEFAULT": {**FAST, "os_privileged_user_password": PASSWORD, "debug": "true"},
        "keystone_authtoken": {"password": PASSWORD},
    }
    with Deployment(extra) as dep:
        host_down(dep)
        dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        segment_with_host(dep)
        nid = report(dep)
        engine = settle(dep, nid)
        issued = list(dep.sim.tokens)

    tag = f"[notification {nid} engine {engine.owner}] "
    recovery = [r for r in caplog.records if r.threadName.startswith("recovery")]
    assert recovery, "the recovery logged nothing"
    untagged = [r.getMessage() for r in recovery if not r.getMessage().startswith(tag)]
    assert untagged == []
    # Lines of the flows and of the Nova client alike.
    names = {r.name for r in recovery}
    assert "masakari.compute.nova" in names
    assert any(name.startswith("masakari.engine") for name in names)
    # Other threads' lines are left alone.
    assert not [r for r in caplog.records if r not in recovery and tag in r.getMessage()]

    secrets = [PASSWORD, fake_nova.ADMIN_TOKEN, *issued]
    assert len(secrets) > 2, "the simulator issued no token to masakari"
    leaked = [
        (secret, text)
        for record in caplog.records
        for text in (record.getMessage(), str(record.exc_text or ""))
        for secret in secrets
        if secret in text
    ]
    assert leaked == []

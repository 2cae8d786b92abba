"""Notifications whose payloads cannot be acted on end ignored, and change nothing in Nova or
in the database (how payloads are read: tests/unit/engine/test_payloads.py)."""

from __future__ import annotations

import pytest

from masakari import conf as masakari_conf
from masakari.db import statuses
from masakari.engine.recovery import host, instance, process
from masakari.engine.tasks import load_flows
from tests.support import rows
from tests.support.payloads import UNREADABLE
from tests.support.runs import make_run


@pytest.fixture
def flows():
    return load_flows(masakari_conf.for_tests())


def _host_row(db, host_uuid):
    row = rows.host_row(db, host_uuid)
    return (bool(row.on_maintenance), bool(row.reserved))


@pytest.mark.parametrize(
    "text",
    [
        *UNREADABLE,
        '{"event": "STOPPED"}',
        '{"event": "STOPPED", "host_status": "UNKNOWN"}',
        '{"event": "STOPPED", "host_status": 1}',
        '{"event": 1, "host_status": "NORMAL"}',
        '{"host_status": "NORMAL"}',
    ],
)
def test_host_notification_that_cannot_be_acted_on_is_ignored(db, sim, nova, clock, flows, text):
    _, hosts = rows.segment_with_hosts(db, "compute-1", reserved=("compute-1",))
    run = make_run(db, nova, clock)
    status = host.handle(run, flows, "COMPUTE_HOST", hosts["compute-1"], text)
    assert status == statuses.IGNORED
    assert sim.nova_calls() == []
    assert _host_row(db, hosts["compute-1"]) == (False, True)


def test_host_started_is_finished_whatever_the_case(db, sim, nova, clock, flows):
    _, hosts = rows.segment_with_hosts(db, "compute-1")
    run = make_run(db, nova, clock)
    text = '{"event": "started", "host_status": "normal"}'
    assert host.handle(run, flows, "COMPUTE_HOST", hosts["compute-1"], text) == (statuses.FINISHED)
    assert sim.nova_calls() == []


@pytest.mark.parametrize("text", [*UNREADABLE, '{"event": 1}', '{"process_name": "nova-compute"}'])
def test_process_notification_that_cannot_be_acted_on_is_ignored(db, sim, nova, clock, flows, text):
    _, hosts = rows.segment_with_hosts(db, "compute-1")
    run = make_run(db, nova, clock)
    assert process.handle(run, flows, "PROCESS", hosts["compute-1"], text) == statuses.IGNORED
    assert sim.nova_calls() == []
    assert _host_row(db, hosts["compute-1"]) == (False, False)


@pytest.mark.parametrize(
    "text",
    [
        *UNREADABLE,
        '{"event": "LIFECYCLE", "instance_uuid": "vm"}',
        '{"event": "LIFECYCLE", "vir_domain_event": ["STOPPED_FAILED"], "instance_uuid": "vm"}',
    ],
)
def test_instance_notification_that_cannot_be_acted_on_is_ignored(
    db, sim, nova, clock, flows, text
):
    run = make_run(db, nova, clock)
    assert instance.handle(run, flows, text) == statuses.IGNORED
    assert sim.nova_calls() == []

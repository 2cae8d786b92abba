"""Payloads are read leniently: what cannot be read is absent, and absent ends ignored."""

from __future__ import annotations

import json

import pytest

from masakari.db import statuses
from masakari.db.models import Host
from masakari.engine.recovery import host, instance, process
from masakari.engine.recovery.instance import is_handled_event
from masakari.engine.recovery.payloads import HostPayload, InstancePayload, ProcessPayload
from masakari.engine.tasks import load_flows
from tests.unit.engine.conftest import add_rows, make_conf, make_run

UNREADABLE = [
    None,
    "",
    "{",
    "not json",
    "[1, 2]",
    '["event", "STOPPED"]',
    "42",
    '"STOPPED"',
    "null",
    "true",
]


def test_host_payload():
    assert HostPayload.parse('{"event": "STOPPED", "host_status": "NORMAL", "x": 1}') == (
        HostPayload("STOPPED", "NORMAL")
    )


def test_process_payload():
    assert ProcessPayload.parse('{"event": "STOPPED", "process_name": "nova-compute"}') == (
        ProcessPayload("STOPPED", "nova-compute")
    )


def test_instance_payload_keeps_what_it_was_given():
    raw = {
        "event": "LIFECYCLE",
        "vir_domain_event": "STOPPED_FAILED",
        "instance_uuid": "vm",
        "extra": [1],
    }
    parsed = InstancePayload.parse(json.dumps(raw))
    assert (parsed.event, parsed.vir_domain_event, parsed.instance_uuid) == (
        "LIFECYCLE",
        "STOPPED_FAILED",
        "vm",
    )
    assert parsed.raw == raw


@pytest.mark.parametrize("text", UNREADABLE)
def test_unreadable_payloads_are_empty(text):
    assert HostPayload.parse(text) == HostPayload(None, None)
    assert ProcessPayload.parse(text) == ProcessPayload(None, None)
    assert InstancePayload.parse(text) == InstancePayload(None, None, None, {})


def test_missing_keys_are_none():
    assert HostPayload.parse('{"event": "STOPPED"}') == HostPayload("STOPPED", None)
    assert ProcessPayload.parse('{"process_name": "nova-compute"}') == ProcessPayload(
        None, "nova-compute"
    )
    assert InstancePayload.parse('{"instance_uuid": "vm"}') == InstancePayload(
        None, None, "vm", {"instance_uuid": "vm"}
    )


def test_null_values_are_none():
    assert HostPayload.parse('{"event": null, "host_status": null}') == HostPayload(None, None)


def test_non_string_values_are_read_as_text():
    assert HostPayload.parse('{"event": 1, "host_status": true}') == HostPayload("1", "True")
    assert ProcessPayload.parse('{"event": ["STOPPED"], "process_name": 2.5}') == (
        ProcessPayload("['STOPPED']", "2.5")
    )
    parsed = InstancePayload.parse('{"event": {"a": 1}, "vir_domain_event": 0}')
    assert (parsed.event, parsed.vir_domain_event) == ("{'a': 1}", "0")
    assert not is_handled_event(parsed)


# --- what the handlers make of them ---------------------------------------------------------


@pytest.fixture
def flows():
    return load_flows(make_conf())


def _host_row(db, host_uuid):
    with db.reader() as s:
        row = s.query(Host).filter_by(uuid=host_uuid).one()
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
def test_host_notification_that_cannot_be_acted_on_is_ignored(db, nova, clock, flows, text):
    hosts = add_rows(db, hosts=(("compute-1", True),))
    run = make_run(db, nova, clock)
    status = host.handle(run, flows, "COMPUTE_HOST", hosts["compute-1"], text)
    assert status == statuses.IGNORED
    assert nova.calls == []
    assert _host_row(db, hosts["compute-1"]) == (False, True)


def test_host_started_is_finished_whatever_the_case(db, nova, clock, flows):
    hosts = add_rows(db, hosts=(("compute-1", False),))
    run = make_run(db, nova, clock)
    text = '{"event": "started", "host_status": "normal"}'
    assert host.handle(run, flows, "COMPUTE_HOST", hosts["compute-1"], text) == (statuses.FINISHED)
    assert nova.calls == []


@pytest.mark.parametrize("text", [*UNREADABLE, '{"event": 1}', '{"process_name": "nova-compute"}'])
def test_process_notification_that_cannot_be_acted_on_is_ignored(db, nova, clock, flows, text):
    hosts = add_rows(db, hosts=(("compute-1", False),))
    run = make_run(db, nova, clock)
    assert process.handle(run, flows, "PROCESS", hosts["compute-1"], text) == statuses.IGNORED
    assert nova.calls == []
    assert _host_row(db, hosts["compute-1"]) == (False, False)


@pytest.mark.parametrize(
    "text",
    [
        *UNREADABLE,
        '{"event": "LIFECYCLE", "instance_uuid": "vm"}',
        '{"event": "LIFECYCLE", "vir_domain_event": ["STOPPED_FAILED"], "instance_uuid": "vm"}',
    ],
)
def test_instance_notification_that_cannot_be_acted_on_is_ignored(db, nova, clock, flows, text):
    run = make_run(db, nova, clock)
    assert instance.handle(run, flows, text) == statuses.IGNORED
    assert nova.calls == []

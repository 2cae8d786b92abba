"""Payloads are read leniently: what cannot be read is absent (what the handlers then make of
it: tests/functional/engine/runs/test_payload_handlers.py)."""

from __future__ import annotations

import json

import pytest

from masakari.engine.payloads import HostPayload, InstancePayload, ProcessPayload
from masakari.engine.recovery.instance import is_handled_event
from tests.support.payloads import UNREADABLE


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

"""Waiting the reference's way, and the texts a failure leaves."""

from __future__ import annotations

import json

import pytest

from masakari import exception
from masakari.engine.context import Cancelled, PollTimeout, nova_message
from masakari.engine.payloads import InstancePayload
from masakari.engine.recovery.instance import is_handled_event
from tests.support.runs import idle_run


def test_poll_probes_first_then_checks_the_timeout(clock):
    run = idle_run(clock)
    probes = []
    with pytest.raises(PollTimeout):
        run.poll(lambda: probes.append(clock.offset), interval=1, timeout=3)
    assert probes == [0, 1, 2, 3, 4]


def test_poll_without_timeout(clock):
    run = idle_run(clock)
    answers = iter([None] * 1000 + ["done"])
    assert run.poll(lambda: next(answers), interval=1, timeout=0) == "done"


def test_poll_stops_when_cancelled(clock):
    run = idle_run(clock)
    run.cancel.set()
    with pytest.raises(Cancelled):
        run.poll(lambda: None, interval=1, timeout=0)


def test_nova_message():
    assert nova_message(exception.NovaError("Conflict", status=409)) == "Conflict"
    assert nova_message(exception.InstanceEvacuateFailed(instance_uuid="x")) == (
        "Failed to evacuate instance x"
    )
    assert nova_message(ValueError("boom")) == "boom"


@pytest.mark.parametrize(
    ("payload", "handled"),
    [
        ({"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED"}, True),
        ({"event": "QEMU_GUEST_AGENT_ERROR", "vir_domain_event": "STOPPED_FAILED"}, True),
        ({"event": "IO_ERROR", "vir_domain_event": "IO_ERROR_REPORT"}, True),
        ({"event": "IO_ERROR", "vir_domain_event": "STOPPED_FAILED"}, False),
        ({"event": "LIFECYCLE", "vir_domain_event": "STOPPED_DESTROYED"}, False),
        ({"event": "lifecycle", "vir_domain_event": "STOPPED_FAILED"}, False),
        ({}, False),
    ],
)
def test_handled_event_pairs(payload, handled):
    assert is_handled_event(InstancePayload.parse(json.dumps(payload))) is handled

# ruff: noqa: E501  (the reference's messages, quoted whole)
"""Request validation: schemas per version and type, and the reference's 400 wording."""

from __future__ import annotations

from typing import Any

import pytest

from masakari import exception
from masakari.api import validation
from masakari.api.schemas import hosts, notifications, segments, types


def message(schema: validation.Schema, body: Any) -> str:
    with pytest.raises(exception.ValidationError) as raised:
        validation.validate(schema, body)
    return raised.value.format_message()


def segment(**fields: Any) -> dict[str, Any]:
    return {
        "segment": {"name": "s", "recovery_method": "auto", "service_type": "compute", **fields}
    }


def test_enabled_only_from_1_2() -> None:
    assert message(segments.create, segment(enabled=False)) == (
        "Invalid input for field/attribute segment. Value: {'name': 's', 'recovery_method': "
        "'auto', 'service_type': 'compute', 'enabled': False}. Additional properties are not "
        "allowed ('enabled' was unexpected)"
    )
    assert validation.validate(segments.create_v1_2, segment(enabled="No"))


@pytest.mark.parametrize("value", types.BOOLEAN_VALUES)
def test_the_22_boolean_spellings(value: Any) -> None:
    validation.validate(hosts.update, {"host": {"reserved": value}})


@pytest.mark.parametrize("value", ["t", "f", "y", "n", "yES", "", " true", 1, 0, None])
def test_other_booleans_are_refused(value: Any) -> None:
    text = message(hosts.update, {"host": {"reserved": value}})
    assert text.startswith("Invalid input for field/attribute reserved.")


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("seg", True),
        ("segment été ok", True),
        (" seg", False),
        ("seg ", False),
        ("seg\x01x", False),
        ("s" * 255, True),
        ("a\n", True),  # the reference's regex lets one trailing newline through
    ],
)
def test_names(name: str, valid: bool) -> None:
    body = segment(name=name)
    if valid:
        validation.validate(segments.create, body)
    else:
        assert message(segments.create, body) == (
            "An invalid 'name' value was provided. The name must be: printable characters. "
            "Can not start or end with whitespace."
        )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, "None is not of type 'object'"),
        ([1, 2], "[1, 2] is not of type 'object'"),
        ({}, "'segment' is a required property"),
        ({"segment": {}}, "Invalid input for field/attribute segment. Value: {}. 'name' is a required property"),
        (segment(name=""), "Invalid input for field/attribute name. Value: . '' should be non-empty"),
        (segment(description=42), "Invalid input for field/attribute description. Value: 42. 42 is not of type 'string', 'null'"),
        (segment(recovery_method="AUTO"), "Invalid input for field/attribute recovery_method. Value: AUTO. 'AUTO' is not one of ['auto', 'reserved_host', 'auto_priority', 'rh_priority']"),
        ({**segment(), "extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
    ],
)  # fmt: skip
def test_segment_create_messages(body: Any, expected: str) -> None:
    assert message(segments.create, body) == expected


def test_update_needs_one_field() -> None:
    assert message(segments.update, {"segment": {}}) == (
        "Invalid input for field/attribute segment. Value: {}. {} is not valid under any of "
        "the given schemas"
    )


def notification(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "PROCESS",
        "hostname": "compute-1",
        "generated_time": "2026-01-01T00:00:00",
        "payload": {"event": "STOPPED", "process_name": "p"},
    }
    return {"notification": {**base, **fields}}


@pytest.mark.parametrize(
    "when", ["2026-02-01T08:00:00", "2026-02-01T08:00:00.123456", "2026-02-01T08:00:00Z",
             "2026-02-01T10:00:00+02:00", "2026-02-01", "2026-02-01 08:00:00"],
)  # fmt: skip
def test_generated_time_accepts_iso_forms(when: str) -> None:
    validation.validate(notifications.create, notification(generated_time=when))


@pytest.mark.parametrize("when", ["now", "2026-13-01T00:00:00", ""])
def test_generated_time_refuses_other_strings(when: str) -> None:
    assert message(notifications.create, notification(generated_time=when)).endswith(
        f"'{when}' is not a 'date-time'"
    )


def test_type_enum_shows_as_a_tuple() -> None:
    assert message(notifications.create, notification(type="process")).endswith(
        "'process' is not one of ('COMPUTE_HOST', 'VM', 'PROCESS')"
    )


def test_payload_keys_and_values() -> None:
    assert message(notifications.create, notification(payload={"a/b": "c"})) == (
        "Invalid input for field/attribute payload. Value: {'a/b': 'c'}. 'a/b' does not match "
        "any of the regexes: '^[a-zA-Z0-9-_:. ]{1,255}$'"
    )
    assert message(notifications.create, notification(payload={"k": "v" * 256})).startswith(
        "Invalid input for field/attribute k."
    )


@pytest.mark.parametrize(
    ("kind", "payload", "expected"),
    [
        ("PROCESS", {"event": "STOPPED"}, "'process_name' is a required property"),
        ("PROCESS", {"event": "RESTARTED", "process_name": "p"},
         "Invalid input for field/attribute event. Value: RESTARTED. 'RESTARTED' is not one of ('STARTED', 'STOPPED')"),
        ("VM", {"event": "E", "vir_domain_event": "V", "instance_uuid": "vm-1"},
         "Invalid input for field/attribute instance_uuid. Value: vm-1. 'vm-1' is not a 'uuid'"),
        ("COMPUTE_HOST", {}, "'event' is a required property"),
        ("COMPUTE_HOST", {"event": "STOPPED", "x": "y"}, "Additional properties are not allowed ('x' was unexpected)"),
    ],
)  # fmt: skip
def test_payload_per_type(kind: str, payload: dict[str, str], expected: str) -> None:
    assert message(notifications.PAYLOADS[kind], payload) == expected


def test_description_pattern_is_the_reference_text() -> None:
    pattern = types.description_pattern()
    assert pattern.startswith("^[\n\\ -\\~\xa0-¬®-ͷ") and pattern.endswith("]*$")


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_generated_time_must_exist_in_utc(when: str) -> None:
    assert message(notifications.create, notification(generated_time=when)).endswith(
        f"'{when}' is not a 'date-time'"
    )

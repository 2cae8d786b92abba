"""Request body validation: JSON Schema draft 4 with the reference's formats and 400 messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
from oslo_utils import timeutils, uuidutils

from masakari import exception
from masakari.api.schemas import types


class InvalidName(exception.Invalid):
    msg_fmt = "An invalid 'name' value was provided. The name must be: %(reason)s"


_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time")
def _is_date_time(instance: object) -> bool:
    """ISO 8601, and representable in UTC (the reference accepts year-1 times with a
    positive offset, then fails with a 500 converting them)."""
    if not isinstance(instance, str):
        return True
    try:
        timeutils.normalize_time(timeutils.parse_isotime(instance))
    except (ValueError, OverflowError):
        return False
    return True


@_FORMATS.checks("uuid")
def _is_uuid(instance: object) -> bool:
    return not isinstance(instance, str) or uuidutils.is_uuid_like(instance)


@_FORMATS.checks("name", raises=InvalidName)
def _is_name(instance: object) -> bool:
    if isinstance(instance, str) and types.is_valid_name(instance):
        return True
    raise InvalidName(reason=types.NAME_REASON)


Schema = Callable[[], dict[str, Any]]

# One compiled validator per schema factory (the factories are cached, so are these).
_VALIDATORS: dict[Schema, jsonschema.Draft4Validator] = {}


def validate(schema: Schema, body: Any) -> Any:
    """Return ``body`` if it matches ``schema()``, else raise ValidationError (400).

    The first error found is reported, worded as the reference does: the offending
    field (last path element), its value and jsonschema's message.
    """
    validator = _VALIDATORS.get(schema)
    if validator is None:
        validator = jsonschema.Draft4Validator(schema(), format_checker=_FORMATS)
        _VALIDATORS[schema] = validator
    for error in validator.iter_errors(body):
        raise exception.ValidationError(detail=_detail(error))
    return body


def _detail(error: jsonschema.ValidationError) -> str:
    if isinstance(error.cause, InvalidName):
        return error.cause.format_message()
    if error.path:
        field, value = error.path[-1], error.instance
        return f"Invalid input for field/attribute {field}. Value: {value}. {error.message}"
    return error.message

"""Building blocks shared by the request schemas (the reference's parameter_types)."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

# The 22 spellings a boolean field accepts, in the order the 400 message lists them.
BOOLEAN_VALUES: list[Any] = [
    True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes",
    False, "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no",
]  # fmt: skip

NAME_REASON = "printable characters. Can not start or end with whitespace."

# Code points the reference's character classes cover: the Basic Multilingual Plane but U+FFFF.
_LAST_CODE_POINT = 0xFFFE


def is_printable(char: str) -> bool:
    """Letters, marks, numbers, punctuation, symbols and horizontal spaces (Zs)."""
    category = unicodedata.category(char)
    return not category.startswith("C") and (not category.startswith("Z") or category == "Zs")


def _is_edge_char(char: str) -> bool:
    """What a name may start or end with: printable, and not a space."""
    return is_printable(char) and unicodedata.category(char) != "Zs"


def _char_class(accept: Any) -> str:
    """A regex character-class body listing the BMP code points ``accept`` keeps, as ranges."""
    parts: list[str] = []
    start: int | None = None
    for code in range(_LAST_CODE_POINT + 1):
        if accept(chr(code)):
            if start is None:
                start = code
            continue
        if start is not None:
            parts.append(_range(start, code - 1))
            start = None
    if start is not None:
        parts.append(_range(start, _LAST_CODE_POINT))
    return "".join(parts)


def _range(first: int, last: int) -> str:
    if first == last:
        return re.escape(chr(first))
    return re.escape(chr(first)) + "-" + re.escape(chr(last))


@functools.cache
def description_pattern() -> str:
    """Printable characters and newlines; the text shows in 400 messages, as in the reference."""
    return f"^[\n{_char_class(is_printable)}]*$"


@functools.cache
def _name_regex() -> re.Pattern[str]:
    edge = _char_class(lambda c: not _is_edge_char(c))
    return re.compile(f"^(?![{edge}])[{_char_class(is_printable)}]*(?<![{edge}])$")


def is_valid_name(value: str) -> bool:
    """Printable, not starting or ending with whitespace (the empty string passes)."""
    return _name_regex().search(value) is not None


def name() -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": 255, "format": "name"}


def description() -> dict[str, Any]:
    return {"type": ["string", "null"], "minLength": 0, "pattern": description_pattern()}


def host_type() -> dict[str, Any]:
    return {
        "type": ["string", "null"],
        "minLength": 0,
        "maxLength": 255,
        "pattern": "^[a-zA-Z0-9]*$",
    }


def boolean() -> dict[str, Any]:
    return {"type": ["boolean", "string"], "enum": list(BOOLEAN_VALUES)}


def hostname() -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[a-zA-Z0-9-._]*$"}


def payload() -> dict[str, Any]:
    return {
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
        "additionalProperties": False,
    }

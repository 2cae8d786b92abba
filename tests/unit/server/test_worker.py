"""masakari-api's worker under gunicorn before 27.0.1: which answer a parse error gets (the
served behaviour: tests/functional/server/test_framing.py)."""

from __future__ import annotations

import gunicorn_h1c
import pytest

from masakari.server import worker


def test_every_parse_error_of_the_parser_is_caught() -> None:
    assert gunicorn_h1c.ParseError in worker.PARSE_ERRORS
    for name in ("InvalidHeader", "InvalidHeaderName", "InvalidRequestMethod", "LimitRequestLine"):
        assert issubclass(getattr(gunicorn_h1c, name), worker.PARSE_ERRORS)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (gunicorn_h1c.InvalidHeader("x"), 400),
        (gunicorn_h1c.InvalidRequestMethod("x"), 400),
        (gunicorn_h1c.LimitRequestLine("x"), 414),
        (gunicorn_h1c.LimitRequestHeaders("x"), 431),
    ],
)
def test_status_of_a_parse_error(error: Exception, status: int) -> None:
    assert worker.status_of(error) == status


def test_the_status_line_never_carries_a_break_or_a_non_latin1_character() -> None:
    assert worker.reason_of(ValueError("Invalid header name"), 400) == "Invalid header name"
    for text in ("a\r\nSet-Cookie: x", "bad \x00", "caf\u00e9 \u2603"):
        assert worker.reason_of(ValueError(text), 400) == "Bad Request"
    assert worker.reason_of(ValueError("\n"), 431) == "Request Header Fields Too Large"

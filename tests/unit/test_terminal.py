"""masakari.terminal: every control character becomes a visible escape; text stays."""

from __future__ import annotations

import pytest

from masakari import terminal


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("web-1", "web-1"),
        ("caf\u00e9 \u6771\u4eac", "caf\u00e9 \u6771\u4eac"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),
        ("\x9b0m\x7f", "\\x9b0m\\x7f"),
        ("one\ntwo\tthree\r", "one\\x0atwo\\x09three\\x0d"),
        ("abc\u202edef\u2066", "abc\\u202edef\\u2066"),
    ],
)
def test_clean_makes_controls_visible(raw: str, shown: str) -> None:
    assert terminal.clean(raw) == shown


def test_clean_lines_keeps_the_layout() -> None:
    assert terminal.clean_lines("a\tb\nc\x1b[H\r\n") == "a\tb\nc\\x1b[H\\x0d\n"

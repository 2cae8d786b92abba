"""Text for a terminal: what tenants or monitors named reaches the operator's screen inert.

Instance names, host names, Nova's messages and notification payloads are written by
people other than the operator; a control character in them (ESC starting a CSI or OSC
sequence that clears the screen, retitles the window or writes the clipboard with OSC 52,
BEL, a carriage return that overwrites the line, a newline that forges a row) would act on
the operator's terminal. ``clean`` writes each one as a visible escape (``\\x1b``) instead,
together with the Unicode controls that reorder what is displayed (bidirectional overrides).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional embedding,
# override and isolate characters plus the line and paragraph separators.
_OTHERS = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x1f{_OTHERS}]")
# Tab (0x09) and newline (0x0a) kept: multi-line text laid out by the command itself.
_ANY_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object) -> str:
    """``value`` as one line of inert text: every control character, newlines and tabs
    included, written as an escape."""
    return _ANY.sub(_visible, str(value))


def clean_lines(text: str) -> str:
    """Multi-line text made inert, its newlines and tabs kept."""
    return _ANY_BUT_LINES.sub(_visible, text)


class _CleanStream:
    """A text stream that makes what is written to it inert (see ``clean_lines``)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(clean_lines(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """stdout and stderr made inert for the duration (a command's whole output)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _CleanStream(out), _CleanStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err

"""Microversions of the instance-ha API: the supported range, header parsing, per-version data."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from masakari import exception

SERVICE_TYPE = "instance-ha"
HEADER = "OpenStack-API-Version"
# The same header as a WSGI environ key.
ENVIRON_KEY = "HTTP_" + HEADER.upper().replace("-", "_")

# Every version this API serves, oldest first, with what it changed.
VERSIONS: tuple[tuple[str, str], ...] = (
    ("1.0", "the initial API"),
    ("1.1", "notification show adds recovery_workflow_details"),
    ("1.2", "segment create and update accept enabled"),
    ("1.3", "vmoves (served at every version: clients send 1.3, older ones do not)"),
    ("1.4", "held notifications, their release/cancel action, failure_reason"),
    ("1.5", "GET .../hosts/{host_id}/recovery_plan and /v1/segments/{id}/readiness"),
    ("1.6", "notification show adds fencing: the host fencing attempts"),
    ("1.7", "notification show adds evidence: the signals a host failure was judged on"),
    ("1.8", "segment readiness adds failures_tolerated: the host failures it absorbs at once"),
    ("1.9", "fire drills; failures_tolerated adds held: the failover room kept in Placement"),
    ("1.10", "quarantine: a degraded host disabled and emptied by live migration"),
)

# The newest version served unless [DEFAULT]/api_max_microversion raises it: what the
# reference serves, so that clients see no difference until the operator opts in.
REFERENCE_MAX = "1.3"

Version = tuple[int, int]

# No major 0, no leading zeros: what the reference's APIVersionRequest accepts.
_VERSION_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")

T = TypeVar("T")


def parse_string(text: str) -> Version:
    """``"1.2"`` -> ``(1, 2)``; anything else is InvalidAPIVersionString."""
    match = _VERSION_RE.match(text)
    if match is None:
        raise exception.InvalidAPIVersionString(version=text)
    return int(match.group(1)), int(match.group(2))


MIN_VERSION: Version = parse_string(VERSIONS[0][0])
# The newest version this code knows; what a deployment serves is enabled_max(conf).
MAX_VERSION: Version = parse_string(VERSIONS[-1][0])
DEFAULT_VERSION = MIN_VERSION


def enabled_max(conf: Any) -> Version:
    """The newest version served: [DEFAULT]/api_max_microversion (1.3 by default)."""
    return parse_string(conf.api_max_microversion)


def to_string(version: Version) -> str:
    major, minor = version
    return f"{major}.{minor}"


def header_text(version: Version) -> str:
    """The response header's value. masakari 22.0.0 names the service type on successes and
    faults alike (the reference's source tree still says ``masakari X.Y`` on successes)."""
    return f"{SERVICE_TYPE} {to_string(version)}"


def header_value(headers: Mapping[str, str]) -> str | None:
    """The instance-ha entry of the OpenStack-API-Version header, or None.

    Entries for other services and entries without a version are skipped; the
    last instance-ha entry of a comma-separated list wins (microversion-parse).
    """
    raw = None
    for name, value in headers.items():
        if name.lower() == HEADER.lower():
            raw = value if raw is None else raw + "," + value
    if raw is None:
        return None
    for entry in reversed(raw.split(",")):
        parts = entry.strip().split(None, 1)
        if len(parts) == 2 and parts[0].lower() == SERVICE_TYPE:
            return parts[1].strip()
    return None


def from_headers(headers: Mapping[str, str], max_version: Version | None = None) -> Version:
    """The requested version: default without header, ``max_version`` for ``latest``.

    ``max_version`` is the served maximum (:func:`enabled_max`), the reference's by default.

    Raises InvalidAPIVersionString (400) or, carrying the parsed version,
    UnsupportedVersion (406).
    """
    if max_version is None:
        max_version = parse_string(REFERENCE_MAX)
    text = header_value(headers)
    if text is None:
        return DEFAULT_VERSION
    if text == "latest":
        return max_version
    version = parse_string(text)
    if not MIN_VERSION <= version <= max_version:
        raise UnsupportedVersion(
            version,
            req_ver=to_string(version),
            min_ver=to_string(MIN_VERSION),
            max_ver=to_string(max_version),
        )
    return version


def from_environ(environ: Mapping[str, Any], max_version: Version | None = None) -> Version:
    """:func:`from_headers` of a WSGI environ, where the server has already joined repeated
    headers with commas: one lookup instead of a walk over every header."""
    value = environ.get(ENVIRON_KEY)
    return from_headers({} if value is None else {HEADER: value}, max_version)


class UnsupportedVersion(exception.InvalidGlobalAPIVersion):
    """A well-formed version outside MIN_VERSION..MAX_VERSION (406)."""

    def __init__(self, version: Version, **kwargs: str) -> None:
        self.version = version
        super().__init__(**kwargs)


def select(version: Version, choices: Mapping[str, T]) -> T:
    """The value of the newest key (a starting version like ``"1.2"``) not above ``version``."""
    best: tuple[Version, T] | None = None
    for start, value in choices.items():
        since = parse_string(start)
        if since <= version and (best is None or since > best[0]):
            best = (since, value)
    if best is None:
        raise LookupError(f"no choice for version {to_string(version)}")
    return best[1]


F = TypeVar("F", bound=Callable[..., Any])


def since(version: str) -> Callable[[F], F]:
    """Marks a handler whose route exists from ``version`` on: the router answers 404, as for
    any unknown path, to requests of an older version."""
    parse_string(version)

    def mark(handler: F) -> F:
        handler.since = version  # type: ignore[attr-defined]
        return handler

    return mark

"""Handlers, one module per resource; this module parses the list query parameters they share."""

from __future__ import annotations

import dataclasses

from oslo_utils import strutils

from masakari import exception
from masakari.api.request import ApiRequest


@dataclasses.dataclass(frozen=True)
class Page:
    limit: int
    marker: str | None
    sort_keys: list[str]
    sort_dirs: list[str]


def page(req: ApiRequest) -> Page:
    """limit (capped by osapi_max_limit), page_size (checked, unused), marker, sort keys.

    A repeated parameter uses its last value, sort_key and sort_dir keep every value;
    keys and directions are stripped. Without sort_key the default is created_at desc.
    """
    max_limit = req.state.conf.osapi_max_limit
    params = req.GET
    limit = max_limit
    if "limit" in params:
        limit = min(_non_negative(params["limit"], "limit"), max_limit)
    if "page_size" in params:
        _non_negative(params["page_size"], "page_size")
    sort_keys = [key.strip() for key in req.params.getall("sort_key")] or ["created_at"]
    sort_dirs = [d.strip() for d in req.params.getall("sort_dir")] or ["desc"]
    return Page(limit, params.get("marker"), sort_keys, sort_dirs)


def _non_negative(value: str, name: str) -> int:
    try:
        # The stub says int, but strutils parses the query string and words its errors.
        return strutils.validate_integer(value, name, min_value=0)  # type: ignore[arg-type]
    except ValueError as exc:
        raise exception.InvalidInput(reason=str(exc)) from exc


def filters(req: ApiRequest, names: tuple[str, ...]) -> dict[str, str]:
    """The given query parameters that are present, each with its last value."""
    return {name: req.params[name] for name in names if name in req.params}


def boolean_filter(req: ApiRequest, name: str) -> bool:
    """A query-string flag: oslo's strict spellings (1/0, t/f, y/n, true, on, yes... any case)."""
    try:
        return strutils.bool_from_string(req.params[name], strict=True)
    except ValueError as exc:
        raise exception.InvalidInput(message=f"Invalid value for {name}: {exc}") from exc

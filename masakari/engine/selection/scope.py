"""Scope rules ([host_failure] scope_*): whether a failed host's instance is to be moved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from masakari.compute.servers import Aggregate, Server


def _metadata_matches(server: Server, entries: Sequence[str]) -> bool:
    metadata = server.metadata
    for entry in entries:
        key, sep, value = entry.partition("=")
        if key.strip() in metadata and (not sep or str(metadata[key.strip()]) == value.strip()):
            return True
    return False


def out_of_scope(options: Any, server: Server) -> str | None:
    """Which rule leaves the instance where it is, or None to move it."""
    values = {
        "projects": server.tenant_id,
        "flavors": server.flavor_name,
        "images": server.image_id,
    }
    for dimension, value in values.items():
        include = getattr(options, f"scope_include_{dimension}")
        if include and value not in include:
            return f"scope_include_{dimension}"
        if value in getattr(options, f"scope_exclude_{dimension}"):
            return f"scope_exclude_{dimension}"
    include = options.scope_include_metadata
    if include and not _metadata_matches(server, include):
        return "scope_include_metadata"
    if _metadata_matches(server, options.scope_exclude_metadata):
        return "scope_exclude_metadata"
    return None


def aggregates_set(options: Any) -> bool:
    """Whether the aggregate rules need the host's aggregates (a Nova request)."""
    return bool(options.scope_include_aggregates or options.scope_exclude_aggregates)


def host_out_of_scope(options: Any, host_name: str, aggregates: Sequence[Aggregate]) -> str | None:
    """Which aggregate rule leaves every instance of the failed host where it is, or None."""
    names: set[str] = set()
    for aggregate in aggregates:
        if host_name in aggregate.hosts:
            names.update({str(aggregate.name), str(aggregate.id)})
    include = options.scope_include_aggregates
    if include and not names.intersection(include):
        return "scope_include_aggregates"
    if names.intersection(options.scope_exclude_aggregates):
        return "scope_exclude_aggregates"
    return None

"""[osapi_v1]: deprecated options of the reference's extension loader."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup("osapi_v1", title="API v1 options")

# deprecated_group names the option's own group: kept because the reference
# declares it, so the option's deprecated names stay the same.
OPTS: list[cfg.Opt] = [
    cfg.ListOpt(
        "extensions_blacklist",
        default=[],
        deprecated_for_removal=True,
        deprecated_group="osapi_v1",
        help=paragraphs(
            """
Aliases of API extensions not to load.

Accepted and ignored by this project, whose API has no optional extensions.
"""
        ),
    ),
    cfg.ListOpt(
        "extensions_whitelist",
        default=[],
        deprecated_for_removal=True,
        deprecated_group="osapi_v1",
        help=paragraphs(
            """
Aliases of the only API extensions to load; empty loads them all.

Accepted and ignored by this project, whose API has no optional extensions.
"""
        ),
    ),
    cfg.StrOpt(
        "project_id_regex",
        default=None,
        deprecated_for_removal=True,
        deprecated_group="osapi_v1",
        help=paragraphs(
            """
Regular expression the project id segment of ``/v1/{project_id}/...`` URLs
must match. Unset, it is ``[0-9a-f\\-]+``: a Keystone project id, with or
without dashes.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

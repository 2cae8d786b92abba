"""[DEFAULT] options kept from the reference's process plumbing."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "DEFAULT"

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "tempdir",
        help="Directory for temporary files; empty means the system default.",
    ),
    cfg.BoolOpt(
        "monkey_patch",
        default=False,
        help=paragraphs(
            """
Wrap the functions of ``monkey_patch_modules`` with a decorator.

Accepted and ignored by this project, which has no monkey patching.
"""
        ),
    ),
    cfg.ListOpt(
        "monkey_patch_modules",
        default=["masakari.api:masakari.cmd"],
        help=paragraphs(
            """
``module:decorator`` pairs used when ``monkey_patch`` is true.

Accepted and ignored by this project.
"""
        ),
    ),
    cfg.BoolOpt(
        "fatal_exception_format_errors",
        default=False,
        help=paragraphs(
            """
Raise instead of logging when an error message cannot be formatted.

Accepted and ignored by this project: messages fall back to their template.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

"""[DEFAULT] paths: where masakari is installed and keeps its state."""

from __future__ import annotations

import os
import sys

from oslo_config import cfg

GROUP = "DEFAULT"


def package_parent() -> str:
    # The directory holding the ``masakari`` package, as the reference computes it.
    return os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def build_opts() -> list[cfg.Opt]:
    """The options; built on demand because two defaults depend on the installation."""
    return [
        cfg.StrOpt(
            "pybasedir",
            default=package_parent(),
            sample_default="<directory above the installed masakari package>",
            help="Directory where the masakari Python package is installed.",
        ),
        cfg.StrOpt(
            "bindir",
            default=os.path.join(sys.prefix, "local", "bin"),
            sample_default="<sys.prefix>/local/bin",
            help="Directory where the masakari commands are installed.",
        ),
        cfg.StrOpt(
            "state_path",
            default="$pybasedir",
            help="Top directory of masakari's state, such as the default SQLite database.",
        ),
    ]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, build_opts())]

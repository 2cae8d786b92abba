"""Configuration: every option masakari reads, registered on a ConfigOpts passed in."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from oslo_config import cfg
from oslo_log import log

from masakari import logvalues
from masakari.conf import database, libraries, opts

PROJECT = "masakari"
_FALLBACK_VERSION = "22.0.0"

__all__ = ["PROJECT", "for_tests", "load", "register_opts", "setup_logging", "version"]


def version() -> str:
    """The installed distribution's version, as ``--version`` prints it."""
    try:
        return importlib.metadata.version(PROJECT)
    except importlib.metadata.PackageNotFoundError:
        return _FALLBACK_VERSION


def _group_arg(group: str | cfg.OptGroup | None) -> str | cfg.OptGroup | None:
    return None if group in (None, "DEFAULT") else group


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register masakari's options and the library sections of masakari.conf on ``conf``.

    Safe to call more than once on the same object, also after parsing.
    """
    for group, group_opts in opts.list_opts() + opts.list_recovery_workflow_opts():
        if isinstance(group, cfg.OptGroup):
            # oslo.config keeps each option's overrides inside the OptGroup object: a module
            # level group registered on two ConfigOpts would share them, so each gets a copy.
            group = cfg.OptGroup(group.name, title=group.title, help=group.help)
            if group.name not in conf:
                conf.register_group(group)
        conf.register_opts(group_opts, group=_group_arg(group))
    database.register_database(conf)
    libraries.register(conf)


def load(
    argv: list[str] | None = None,
    *,
    default_config_files: list[str] | None = None,
    prog: str | None = None,
) -> cfg.ConfigOpts:
    """A new ConfigOpts with every option registered, parsed like an OpenStack service.

    ``argv`` holds the arguments without the program name (``sys.argv[1:]``
    when None). Without ``default_config_files``, oslo.config looks for
    masakari.conf in ~/.masakari, ~/, /etc/masakari and /etc, and for
    masakari.conf.d next to it.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(
        args=argv,
        project=PROJECT,
        prog=prog,
        version=version(),
        default_config_files=default_config_files,
    )
    return conf


def for_tests(**overrides: Any) -> cfg.ConfigOpts:
    """A parsed ConfigOpts that read no file, no argument and no environment variable.

    Keys are ``"group.option"``, or ``"option"`` for [DEFAULT]; each value is
    applied with ``set_override``: ``for_tests(**{"host_failure.evacuate_all_instances": False})``.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(
        args=[],
        project=PROJECT,
        default_config_files=[],
        default_config_dirs=[],
        use_env=False,
    )
    for key, value in overrides.items():
        group, _, name = key.rpartition(".")
        conf.set_override(name, value, group=_group_arg(group or None))
    return conf


def setup_logging(conf: cfg.ConfigOpts) -> None:
    """Configure Python logging from the oslo.log options of ``conf``."""
    log.setup(conf, PROJECT, version=version())
    logvalues.install()  # whatever handlers log.setup set up, or the log_config_append file

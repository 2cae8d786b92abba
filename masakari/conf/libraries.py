"""Options of the OpenStack libraries masakari.conf may configure, registered on one ConfigOpts."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from keystonemiddleware import auth_token
from oslo_concurrency import opts as concurrency_opts
from oslo_config import cfg
from oslo_log import log
from oslo_middleware import opts as middleware_opts
from oslo_policy import opts as policy_opts

# The reference's CORS defaults (masakari/common/config.py): headers a browser
# client may send and read.
CORS_DEFAULTS: dict[str, list[str]] = {
    "allow_headers": [
        "X-Auth-Token",
        "X-Openstack-Request-Id",
        "X-Identity-Status",
        "X-Roles",
        "X-Service-Catalog",
        "X-User-Id",
        "X-Tenant-Id",
    ],
    "expose_headers": [
        "X-Auth-Token",
        "X-Openstack-Request-Id",
        "X-Subject-Token",
        "X-Service-Token",
    ],
    "allow_methods": ["GET", "PUT", "POST", "DELETE", "PATCH"],
}

# The reference sets oslo.messaging's exchange to the project name.
CONTROL_EXCHANGE = "masakari"

OptList = Iterable[tuple[str | cfg.OptGroup | None, Sequence[cfg.Opt]]]


def library_opts() -> OptList:
    """(group, options) of every library section, as the libraries list them.

    The libraries hand out copies; registering a copy and later the library's
    own object is accepted by oslo.config because equal options compare equal.
    """
    # auth_token's public list includes its deprecated names, which a
    # deployer's file may still use.
    yield from auth_token.list_opts()
    yield from _messaging_opts()
    yield from policy_opts.list_opts()
    # Only the middlewares of masakari's pipeline: others (tracing) have
    # required options that would make every parse fail.
    yield from middleware_opts.list_opts_cors()
    yield from middleware_opts.list_opts_http_proxy_to_wsgi()
    yield from middleware_opts.list_opts_sizelimit()
    yield from concurrency_opts.list_opts()


def _messaging_opts() -> OptList:
    # oslo.messaging imports oslo.service, which imports eventlet and warns
    # that it is deprecated. masakari never uses eventlet: keep the warning
    # off every command's output. Imported here, not at the top, so that
    # importing masakari.conf stays cheap.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*eventlet(utils module)? is deprecated")
        from oslo_messaging import opts as messaging_opts
    return messaging_opts.list_opts()


def register(conf: cfg.ConfigOpts) -> None:
    """Register the library options on ``conf`` and apply masakari's defaults to it alone."""
    # oslo.log adds command-line options, which oslo.config refuses once the
    # command line is parsed: register them only the first time.
    if "debug" not in conf:
        log.register_options(conf)
    for group, opts in library_opts():
        conf.register_opts(list(opts), group=group)
    # ConfigOpts.set_default changes this object only; cfg.set_defaults (what
    # the reference calls) would change the libraries' module-level options for
    # every ConfigOpts of the process.
    for name, value in CORS_DEFAULTS.items():
        conf.set_default(name, value, group="cors")
    conf.set_default("control_exchange", CONTROL_EXCHANGE)

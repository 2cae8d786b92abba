"""[DEFAULT] options of the service processes: identity, listening address, periodic loops."""

from __future__ import annotations

import socket

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "DEFAULT"


def build_opts() -> list[cfg.Opt]:
    """The options; built on demand because ``host`` defaults to this machine's name."""
    return [
        cfg.HostAddressOpt(
            "host",
            default=socket.gethostname(),
            sample_default="<HOSTNAME>",
            help=paragraphs(
                """
Name of this node (hostname, FQDN or IP address), used to tell engines apart.
It must be usable in a message-queue routing key.
"""
            ),
        ),
        cfg.StrOpt(
            "engine_manager",
            default="masakari.engine.manager.MasakariManager",
            help=paragraphs(
                """
Class of the reference's engine manager. Accepted and ignored by this
project, whose engine has no pluggable manager.
"""
            ),
        ),
        cfg.IntOpt(
            "report_interval",
            default=10,
            help="Seconds between two reports of a service's liveness.",
        ),
        cfg.BoolOpt(
            "periodic_enable",
            default=True,
            help="Run the engine's periodic loops (retry and expiry of notifications).",
        ),
        cfg.IntOpt(
            "periodic_interval_max",
            default=300,
            help="Longest pause, in seconds, between two runs of the periodic loops.",
        ),
        cfg.IntOpt(
            "periodic_fuzzy_delay",
            default=60,
            help=paragraphs(
                """
Upper bound, in seconds, of a random delay before the first run of the
periodic loops, so that engines started together do not run them together.
0 disables it.
"""
            ),
        ),
        cfg.BoolOpt(
            "use_ssl",
            default=False,
            help="Serve the API over TLS, with the certificate of the [wsgi] section.",
        ),
        cfg.HostAddressOpt(
            "masakari_api_listen",
            default="0.0.0.0",
            help="Address masakari-api listens on.",
        ),
        cfg.IntOpt(
            "masakari_api_listen_port",
            default=15868,
            min=1,
            max=65535,
            help="TCP port masakari-api listens on.",
        ),
        cfg.IntOpt(
            "masakari_api_workers",
            help="Number of masakari-api worker processes; unset means one per CPU.",
        ),
        cfg.IntOpt(
            "service_down_time",
            default=60,
            help="Seconds without a liveness report after which a service is considered down.",
        ),
    ]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, build_opts())]

"""[metrics]: Prometheus metrics of masakari-api and masakari-engine (all off by default)."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup(
    "metrics",
    title="Metrics options",
    help="Prometheus metrics (docs/operations.md, Monitoring).",
)

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help=paragraphs(
            """
(masakari rewrite only) Serve the metrics at GET /metrics on the API, under
the API's authentication and the policy rule os_masakari_api:metrics (admin
by default). Off, /metrics is answered as the reference answers it.
"""
        ),
    ),
    cfg.HostAddressOpt(
        "listen",
        default="127.0.0.1",
        help=paragraphs(
            """
(masakari rewrite only) Address of the metrics listeners that api_port and
engine_port open.
"""
        ),
    ),
    cfg.PortOpt(
        "api_port",
        help=paragraphs(
            """
(masakari rewrite only) When set, masakari-api also serves its metrics on
this port, without authentication, for a Prometheus server that cannot
present a token. Unset: no such listener.
"""
        ),
    ),
    cfg.PortOpt(
        "engine_port",
        help=paragraphs(
            """
(masakari rewrite only) When set, masakari-engine serves its metrics at
/metrics on this port, without authentication. Unset: no listener.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

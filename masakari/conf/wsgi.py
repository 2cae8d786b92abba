"""[wsgi]: the API's paste pipeline and the reference's built-in HTTP server."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = cfg.OptGroup("wsgi", title="WSGI options")

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "api_paste_config",
        default="api-paste.ini",
        help=paragraphs(
            """
paste.deploy file describing the API pipeline. A relative name is looked
for next to the configuration files.
"""
        ),
    ),
    # Not renamed log_format: that name would clash with [DEFAULT] log_format.
    cfg.StrOpt(
        "wsgi_log_format",
        default=(
            '%(client_ip)s "%(request_line)s" status: %(status_code)s'
            " len: %(body_length)s time: %(wall_seconds).7f"
        ),
        help=paragraphs(
            """
Template of the access log line. Fields: client_ip, date_time, request_line,
status_code, body_length, wall_seconds.
"""
        ),
    ),
    cfg.StrOpt(
        "secure_proxy_ssl_header",
        deprecated_for_removal=True,
        deprecated_reason="oslo.middleware's http_proxy_to_wsgi middleware does the same job.",
        help=paragraphs(
            """
Header carrying the original scheme of requests that went through a
TLS-terminating proxy, such as ``HTTP_X_FORWARDED_PROTO``.
"""
        ),
    ),
    cfg.StrOpt("ssl_ca_file", help="CA bundle used to verify client certificates."),
    cfg.StrOpt("ssl_cert_file", help="Certificate of the API server."),
    cfg.StrOpt("ssl_key_file", help="Private key of the API server certificate."),
    cfg.IntOpt(
        "tcp_keepidle",
        default=600,
        help="TCP_KEEPIDLE, in seconds, of the server's sockets (not on macOS).",
    ),
    cfg.IntOpt(
        "default_pool_size",
        default=1000,
        help="Size of the reference server's green thread pool.",
    ),
    cfg.IntOpt(
        "max_header_line",
        default=16384,
        help=paragraphs(
            """
Longest HTTP header line accepted. Large Keystone tokens (big service
catalogs) may need more.
"""
        ),
    ),
    cfg.BoolOpt(
        "keep_alive",
        default=True,
        help="Keep client connections open between requests; False closes them after each.",
    ),
    cfg.IntOpt(
        "client_socket_timeout",
        default=900,
        help="Seconds an idle client connection is kept open; 0 waits forever.",
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

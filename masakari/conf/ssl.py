"""[ssl]: the TLS options the reference takes from oslo.service, declared here."""

from __future__ import annotations

from oslo_config import cfg

GROUP = cfg.OptGroup("ssl", title="SSL options")

_REASON = "oslo.service deprecated its TLS options; use a TLS-terminating proxy."

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "ca_file",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        help="CA bundle used to verify client certificates.",
    ),
    cfg.StrOpt(
        "cert_file",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        help="Certificate the server presents when TLS is on.",
    ),
    cfg.StrOpt(
        "key_file",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        help="Private key of the server certificate.",
    ),
    cfg.StrOpt(
        "version",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        help="TLS protocol version to use, by its Python ssl module name (e.g. TLSv1_2).",
    ),
    cfg.StrOpt(
        "ciphers",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        help="Allowed ciphers, in OpenSSL cipher list syntax.",
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

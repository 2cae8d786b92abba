"""[DEFAULT] options of the HTTP API: authentication, paging, notification intake."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "DEFAULT"

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=("keystone", "noauth2"),
        help=paragraphs(
            """
How masakari-api authenticates requests.

``keystone`` validates the X-Auth-Token header with keystonemiddleware.
``noauth2`` checks no credential at all and treats every caller as an
administrator: use it only in tests.
"""
        ),
    ),
    cfg.BoolOpt(
        "use_forwarded_for",
        default=False,
        deprecated_for_removal=True,
        deprecated_reason="oslo.middleware's HTTPProxyToWSGI middleware does the same job.",
        help=paragraphs(
            """
Take the client address from the X-Forwarded-For header instead of the
socket's peer address. Enable only behind a proxy that sets the header.
"""
        ),
    ),
    cfg.IntOpt(
        "osapi_max_limit",
        default=1000,
        help=paragraphs(
            """
Largest number of items one list request returns, whatever ``limit`` the
client asks for.
"""
        ),
    ),
    cfg.StrOpt(
        "osapi_masakari_link_prefix",
        help=paragraphs(
            """
Base URL to put in front of the links the API returns, for deployments
behind a proxy that rewrites the public URL. Empty keeps the URL of the
request.
"""
        ),
    ),
    cfg.StrOpt(
        "api_max_microversion",
        default="1.3",
        choices=("1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10"),
        help=paragraphs(
            """
(masakari rewrite only) Newest API microversion masakari-api serves, and
announces in its version documents. ``1.3`` is what masakari 22.0.0 serves:
clients see no difference. ``1.4`` adds held notifications (and their
release/cancel action) and ``failure_reason`` in notification bodies; clients
that send no microversion, or 1.3 or older, still see exactly the 1.3 bodies.
``1.5`` adds GET /v1/segments/{segment_id}/hosts/{host_id}/recovery_plan and
GET /v1/segments/{segment_id}/readiness (a dry-run recovery plan and the
readiness doctor). ``1.6`` adds ``fencing`` to GET /v1/notifications/{id}: the
host fencing attempts of the recovery (docs/operations.md, Host fencing).
``1.7`` adds ``evidence`` to a notification's show: the signals its host
failure was judged on ([detection], [verdict]). ``1.8`` adds
``failures_tolerated`` to a segment's readiness: how many of its hosts can fail
at once with every evacuated instance still placed ([capacity]). ``1.9`` adds
fire drills (POST/GET /v1/segments/{segment_id}/drills) and ``held`` to
``failures_tolerated``: the failover room kept out of reach of new boots in
Placement ([capacity] hold_room). ``1.10`` adds quarantine (POST
.../hosts/{host_id}/quarantine, GET /v1/quarantines and their action;
[quarantine]).
"""
        ),
    ),
    cfg.IntOpt(
        "notification_delay_max",
        default=5,
        min=0,
        help=paragraphs(
            """
Upper bound, in seconds, of the random pause the reference takes before
recording a notification when no coordination backend is configured, to make
concurrent duplicate notifications less likely. 0 disables the pause.

This project accepts the option and ignores it: duplicates are refused by a
check made inside the database transaction that inserts the notification, so
no pause is needed.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

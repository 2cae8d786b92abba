"""[DEFAULT] options for reaching Nova (and Keystone) as the privileged user."""

from __future__ import annotations

from oslo_config import cfg

from masakari.conf._text import paragraphs

GROUP = "DEFAULT"

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "nova_catalog_admin_info",
        default="compute:nova:publicURL",
        help=paragraphs(
            """
How to find Nova in the service catalog, as
``<service_type>:<service_name>:<endpoint_type>``.
"""
        ),
    ),
    cfg.StrOpt("os_region_name", help="Region whose Nova endpoint is used."),
    cfg.StrOpt(
        "nova_ca_certificates_file",
        help="CA bundle used to verify the TLS certificates of Nova and Keystone.",
    ),
    cfg.BoolOpt(
        "nova_api_insecure",
        default=False,
        help="Do not verify the TLS certificates of Nova and Keystone.",
    ),
    cfg.StrOpt(
        "os_privileged_user_name",
        help=paragraphs(
            """
User masakari authenticates as to call Nova. It needs the rights to list
servers of all projects, disable services and evacuate.
"""
        ),
    ),
    cfg.StrOpt(
        "os_privileged_user_password",
        secret=True,
        help="Password of ``os_privileged_user_name``.",
    ),
    cfg.StrOpt(
        "os_privileged_user_tenant",
        help="Project the privileged user's token is scoped to.",
    ),
    cfg.URIOpt(
        "os_privileged_user_auth_url",
        help="Keystone URL where the privileged user authenticates.",
    ),
    cfg.StrOpt(
        "os_user_domain_name",
        default="default",
        help="Domain of the privileged user.",
    ),
    cfg.StrOpt(
        "os_project_domain_name",
        default="default",
        help="Domain of the privileged user's project.",
    ),
    cfg.StrOpt(
        "os_system_scope",
        help="System scope (for example ``all``) to request instead of a project scope.",
    ),
    # Option of this project only: the reference sets no timeout on Nova calls.
    cfg.FloatOpt(
        "nova_api_timeout",
        default=60,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Timeout in seconds of every HTTP request to Nova and
Keystone.
"""
        ),
    ),
    # Option of this project only: the reference sets no timeout on Nova calls.
    cfg.FloatOpt(
        "nova_service_update_timeout",
        default=120,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Timeout in seconds of a request that disables, enables or
forces down a nova-compute service (PUT /os-services/{id}); the longer of this and
nova_api_timeout is used. Nova saves the change, then, for a compute it still counts
up, calls it over RPC and waits up to its own [DEFAULT] rpc_response_timeout (60 s
by default) before answering: a failed host's compute does not answer. Keep this
above Nova's rpc_response_timeout.
"""
        ),
    ),
    # Option of this project only: the reference opened a connection (and a session) per call.
    cfg.IntOpt(
        "nova_api_max_connections",
        default=16,
        min=1,
        help=paragraphs(
            """
(masakari rewrite only) Connections one masakari process opens to Nova at most (to
each endpoint: Nova, Placement, Keystone). A request that finds none free waits in
line for one in the process, so that a Nova API smaller than masakari's demand (a
rack of recoveries) gets requests no faster than it serves them, rather than a burst
that overflows its listen backlog.
"""
        ),
    ),
]


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    return [(GROUP, OPTS)]

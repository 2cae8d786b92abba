"""Nova as masakari reaches it: one keystoneauth session per process, microversion 2.53.

Errors (all raised with the keystoneauth exception chained)::

    masakari.exception.NovaError      status=None: connection failure
    ├── NovaTimeout                   status=None: no answer within nova_api_timeout
    └── NovaRequestError              Nova, or Keystone while getting the token, answered an
                                      error (status = its HTTP status), or keystoneauth could not
                                      find the endpoint (status=None)

``str()`` of a NovaRequestError is what the reference's ``translate_nova_exception`` printed
(see :func:`_nova_error`), because the engine stores ``str(exc)`` in vmove messages and the API
shows it in faults.

Reads answer typed servers and services (masakari.compute.servers).
What is retried, and how often, is :mod:`masakari.compute.retry`'s (docs/nova.md, "Retries").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import plugin as ks_plugin
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from masakari import exception, metrics
from masakari.compute import retry, transport
from masakari.compute.servers import (
    Aggregate,
    InstanceAction,
    Server,
    ServerGroup,
    Service,
    compute_service,
)

LOG = logging.getLogger(__name__)

# 2.53: services are addressed by UUID (PUT /os-services/{uuid}); the reference pins it too.
NOVA_API_VERSION = "2.53"

Query = Sequence[tuple[str, str]]

# novaclient's class and default message per status (novaclient/exceptions.py); any other
# status is a plain ClientException with "Unknown Error".
_NOVACLIENT = {
    400: ("BadRequest", "Bad request"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "Forbidden"),
    404: ("NotFound", "Not found"),
    405: ("MethodNotAllowed", "Method Not Allowed"),
    406: ("NotAcceptable", "Not Acceptable"),
    409: ("Conflict", "Conflict"),
    413: ("OverLimit", "Over limit"),
    429: ("RateLimit", "Rate limit"),
    501: ("HTTPNotImplemented", "Not Implemented"),
}
_TRANSPORT_CLASS = "masakari.exception.MasakariException"


class NovaRequestError(exception.NovaError):
    """Nova or Keystone refused a request.

    ``detail`` is novaclient's full text, for logs; ``reference_class`` is the dotted name of the
    exception the reference raised in the same case (its API prints it in a 500 fault).
    """

    def __init__(
        self, message: str, *, status: int | None, detail: str, reference_class: str
    ) -> None:
        super().__init__(message, status=status)
        self.detail = detail
        self.reference_class = reference_class


# The options without which no Nova call can be made (the password plugin's required ones).
CREDENTIAL_OPTIONS = (
    "os_privileged_user_auth_url",
    "os_privileged_user_name",
    "os_privileged_user_password",
)


class NovaNotConfigured(exception.NovaError):
    """masakari.conf lacks the privileged user's credentials: no Nova call can be made."""

    def __init__(self, missing: Sequence[str]) -> None:
        super().__init__(
            "Nova is not configured: hosts and recoveries need the Nova credentials in "
            f"masakari.conf ([DEFAULT] {', '.join(missing)} are not set)."
        )
        self.missing = tuple(missing)


UNREACHABLE = (
    "Nova is not reachable: the connection to Keystone or to Nova failed (see the "
    "masakari-api log)."
)
NO_ENDPOINT = (
    "Nova is not reachable: Keystone's catalog has no endpoint matching [DEFAULT] "
    "nova_catalog_admin_info."
)


def unavailable_message(exc: exception.NovaError) -> str | None:
    """What to tell an API client when Nova could not be asked at all, else None.

    The reference answers these cases with its "Unexpected API Error" text and a keystoneauth
    class name; the status stays 500, but the text now says what is wrong. Errors that Nova
    itself answered keep the reference's text (api-hosts-nova-errors records them).
    """
    if isinstance(exc, NovaNotConfigured):
        return str(exc)
    if isinstance(exc, NovaRequestError):
        return NO_ENDPOINT if exc.reference_class.endswith("EndpointNotFound") else None
    if exc.status is None:  # a connection failure or a timeout, to Keystone or Nova
        return UNREACHABLE
    return None


def missing_credentials(conf: cfg.ConfigOpts) -> list[str]:
    """The credential options that are unset, for the password plugin; [] otherwise."""
    if _auth_type(conf) != "password":
        return []
    return [name for name in CREDENTIAL_OPTIONS if not conf[name]]


def reference_class_name(exc: BaseException) -> str:
    """The dotted class name the reference would show for this error."""
    if isinstance(exc, NovaRequestError):
        return exc.reference_class
    if isinstance(exc, exception.NovaError):
        return _TRANSPORT_CLASS
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _translated(text: str, status: int | None, fallback_class: str) -> NovaRequestError:
    """What the reference's translate_nova_exception turns a client error into."""
    if status == 400:
        return NovaRequestError(
            "Invalid input received: " + text,
            status=status,
            detail=text,
            reference_class="masakari.exception.InvalidInput",
        )
    if status == 403:
        return NovaRequestError(
            text, status=status, detail=text, reference_class="masakari.exception.Forbidden"
        )
    return NovaRequestError(text, status=status, detail=text, reference_class=fallback_class)


def _nova_error(resp: requests.Response) -> NovaRequestError:
    """Builds novaclient's text, "<message> (HTTP <status>) (Request-ID: <id>)", from Nova's
    fault body {"<faultName>": {"code", "message"}}, then translates it as the reference did:
    400 gets "Invalid input received: " in front, 403 is kept, and 404 and 409 lose Nova's
    text ("Resource could not be found.", "Conflict") because the reference formats those
    exceptions without it."""
    status = resp.status_code
    name, message = _NOVACLIENT.get(status, ("ClientException", "Unknown Error"))
    try:
        body = resp.json()
    except ValueError:
        body = None
    if body:
        found: Any = "n/a"
        if isinstance(body, dict):
            first = body if "message" in body else body[next(iter(body))]
            found = first.get("message") if isinstance(first, dict) else None
        message = found or message
    request_id = resp.headers.get("x-compute-request-id") or resp.headers.get(
        "x-openstack-request-id"
    )
    text = f"{message} (HTTP {status})"
    if request_id:
        text += f" (Request-ID: {request_id})"
    if status == 404:
        return NovaRequestError(
            "Resource could not be found.",
            status=status,
            detail=text,
            reference_class="masakari.exception.NotFound",
        )
    if status == 409:
        return NovaRequestError(
            "Conflict", status=status, detail=text, reference_class="masakari.exception.Conflict"
        )
    return _translated(text, status, "novaclient.exceptions." + name)


def keystoneauth_error(exc: ks_exc.ClientException, service: str) -> exception.NovaError:
    """What a keystoneauth failure before ``service`` (Nova, Placement) answered means to
    masakari: a connect that timed out, a connection that failed, or an error from Keystone
    while the token was fetched or the catalog read (no matching endpoint, say); the one
    translation of both clients."""
    if isinstance(exc, ks_exc.ConnectTimeout):
        return exception.NovaTimeout(service=service)
    if isinstance(exc, ks_exc.ConnectionError):
        return exception.NovaError(service=service)
    status = exc.http_status if isinstance(exc, ks_exc.HttpError) else None
    # Nova's keeps the reference's text (its API shows it); another service is named.
    text = str(exc) if service == "Nova" else f"{service}: {exc}"
    return _translated(text, status, f"{type(exc).__module__}.{type(exc).__qualname__}")


class NovaClient:
    """One method per Nova operation masakari uses; each is one request (pagination aside)."""

    def __init__(
        self,
        session: ks_session.Session | ks_adapter.Adapter,
        *,
        service_type: str = "compute",
        service_name: str | None = None,
        interface: str = "public",
        region_name: str | None = None,
        timeout: float | None = 60.0,
        policy: retry.Policy = retry.INTERACTIVE,
        max_connections: int = transport.MAX_CONNECTIONS,
        service_update_timeout: float | None = None,
    ) -> None:
        """``session`` carries the auth plugin, which caches the token; an Adapter is used as
        given (the endpoint filters are then its own). ``policy``: masakari.compute.retry;
        ``max_connections``: requests on their way at once, with every client of the session
        (Placement's, Keystone's): masakari.compute.transport. ``service_update_timeout``:
        that of ``PUT /os-services/{id}``, never shorter than ``timeout`` (see
        :func:`service_update_timeout`)."""
        transport.mount(
            session.session if isinstance(session, ks_adapter.Adapter) else session,
            policy,
            max_connections,
        )
        if isinstance(session, ks_adapter.Adapter):
            self._adapter = session
        else:
            self._adapter = ks_adapter.Adapter(
                session,
                service_type=service_type,
                service_name=service_name,
                interface=interface,
                region_name=region_name,
                default_microversion=NOVA_API_VERSION,
            )
        self._timeout = timeout
        self._service_update_timeout = service_update_timeout_of(timeout, service_update_timeout)
        self.policy = policy

    @classmethod
    def from_conf(
        cls, conf: cfg.ConfigOpts, policy: retry.Policy = retry.INTERACTIVE
    ) -> NovaClient:
        """A client with the privileged user's credentials, as the reference's novaclient()
        builds them, but one session for all calls."""
        service_type, service_name, interface = conf.nova_catalog_admin_info.split(":")
        missing = missing_credentials(conf)
        if missing:
            raise NovaNotConfigured(missing)
        try:
            auth: ks_plugin.BaseAuthPlugin = ks_loading.get_plugin_loader(
                _auth_type(conf)
            ).load_from_options(
                auth_url=conf.os_privileged_user_auth_url,
                username=conf.os_privileged_user_name,
                password=conf.os_privileged_user_password,
                project_name=conf.os_privileged_user_tenant,
                user_domain_name=conf.os_user_domain_name,
                project_domain_name=conf.os_project_domain_name,
                system_scope=conf.os_system_scope,
            )
        except ks_exc.MissingRequiredOptions as exc:
            raise NovaNotConfigured([opt.dest for opt in exc.options]) from exc
        except ks_exc.ClientException as exc:
            raise keystoneauth_error(exc, "Nova") from exc
        # The same rule as keystoneauth's session loader, which the reference used.
        verify: bool | str = (
            False if conf.nova_api_insecure else (conf.nova_ca_certificates_file or True)
        )
        # The session timeout covers the token requests; Nova calls pass their own.
        session = ks_session.Session(
            auth=auth, verify=verify, timeout=conf.nova_api_timeout, app_name="masakari"
        )
        return cls(
            session,
            service_type=service_type,
            service_name=service_name or None,
            interface=interface,
            region_name=conf.os_region_name,
            timeout=conf.nova_api_timeout,
            policy=policy,
            max_connections=conf.nova_api_max_connections,
            service_update_timeout=conf.nova_service_update_timeout,
        )

    @property
    def session(self) -> ks_session.Session:
        """The keystone session (auth and token cache), for clients of other services."""
        return self._adapter.session

    # --- compute services -------------------------------------------------------------------

    def find_compute_services(self, host: str) -> list[Service]:
        """GET /os-services?host=H&binary=nova-compute (the reference's query)."""
        body = self._call("GET", "/os-services", query=[("host", host), ("binary", "nova-compute")])
        return [Service.of(s) for s in body["services"]]

    def list_compute_services(self) -> list[Service]:
        """GET /os-services?binary=nova-compute: every compute host's service, one request
        (the failure detector's poll)."""
        body = self._call("GET", "/os-services", query=[("binary", "nova-compute")])
        return [Service.of(s) for s in body["services"]]

    def get_compute_service(self, host: str) -> Service:
        """The nova-compute service of ``host``; the first one, as the reference takes."""
        return compute_service(self.find_compute_services(host), host)

    def disable_service(self, service_id: str, reason: str | None = None) -> None:
        """PUT /os-services/{uuid}; without a reason the body has none, as in the reference."""
        LOG.info("Disable nova-compute service %s", service_id)
        body: dict[str, Any] = {"status": "disabled"}
        if reason:
            body["disabled_reason"] = reason
        self._update_service(service_id, body)

    def enable_service(self, service_id: str) -> None:
        LOG.info("Enable nova-compute service %s", service_id)
        self._update_service(service_id, {"status": "enabled"})

    def force_down_service(self, service_id: str, forced_down: bool = True) -> None:
        LOG.info("Set forced_down=%s on nova-compute service %s", forced_down, service_id)
        self._update_service(service_id, {"forced_down": forced_down})

    def _update_service(self, service_id: str, body: dict[str, Any]) -> None:
        # Nova answers a status change of a compute it counts up only once that compute has
        # answered its RPC, or after its rpc_response_timeout (60 s) for a dead one.
        self._call(
            "PUT", f"/os-services/{service_id}", body=body, timeout=self._service_update_timeout
        )

    # --- servers ----------------------------------------------------------------------------

    def list_servers_on_host(self, host: str) -> list[Server]:
        """Every server on ``host``, newest first.

        The first request is the reference's (all_tenants=True&host=H); it stopped there, this
        one follows the servers_links "next" link that Nova adds to a full page (more than
        [api]/max_limit servers, 1000 by default). Only the link's query is used: the path is
        the adapter's endpoint, whatever host name Nova put in the link.
        """
        query: Query = [("all_tenants", "True"), ("host", host)]
        servers: list[dict[str, Any]] = []
        markers: set[str] = set()
        while True:
            body = self._call("GET", "/servers/detail", query=query)
            page = body.get("servers") or []
            servers.extend(page)
            link = next(
                (x.get("href") for x in body.get("servers_links") or [] if x.get("rel") == "next"),
                None,
            )
            if not page or not link:
                return [Server.of(s) for s in servers]
            query = parse_qsl(urlsplit(link).query, keep_blank_values=True)
            marker = dict(query).get("marker", "")
            if marker in markers:  # a Nova that repeats itself must not loop us forever
                return [Server.of(s) for s in servers]
            markers.add(marker)

    def get_server(self, server_id: str) -> Server:
        return Server.of(self._call("GET", f"/servers/{server_id}")["server"])

    def list_instance_actions(self, server_id: str) -> list[InstanceAction]:
        """GET /servers/{id}/os-instance-actions: what Nova accepted for the server, newest
        first (at 2.53 Nova answers them all, unpaged)."""
        body = self._call("GET", f"/servers/{server_id}/os-instance-actions")
        return [InstanceAction.of(a) for a in body.get("instanceActions") or []]

    def lock_server(self, server_id: str) -> None:
        LOG.info("Lock instance %s", server_id)
        self._action(server_id, {"lock": None})

    def unlock_server(self, server_id: str) -> None:
        LOG.info("Unlock instance %s", server_id)
        self._action(server_id, {"unlock": None})

    def reset_state(self, server_id: str, state: str = "error") -> None:
        """os-resetState: Nova accepts "active" and "error"."""
        LOG.info("Reset the state of instance %s to %s", server_id, state)
        self._action(server_id, {"os-resetState": {"state": state}})

    def stop_server(self, server_id: str) -> None:
        LOG.info("Stop instance %s", server_id)
        self._action(server_id, {"os-stop": None})

    def start_server(self, server_id: str) -> None:
        LOG.info("Start instance %s", server_id)
        self._action(server_id, {"os-start": None})

    def evacuate(self, server_id: str, host: str | None = None) -> None:
        """Without ``host`` Nova's scheduler picks the destination."""
        LOG.info("Evacuate instance %s to %s", server_id, host or "a host Nova chooses")
        self._action(server_id, {"evacuate": {"host": host} if host else {}})

    def live_migrate(self, server_id: str, host: str) -> None:
        """os-migrateLive to ``host``, checked by Nova's scheduler (2.53: ``block_migration``
        auto, no ``force``): a fire drill moving its canaries back to their host."""
        LOG.info("Live-migrate instance %s to %s", server_id, host)
        self._action(server_id, {"os-migrateLive": {"host": host, "block_migration": "auto"}})

    # --- aggregates -------------------------------------------------------------------------

    def list_aggregates(self) -> list[Aggregate]:
        return [Aggregate.of(a) for a in self._call("GET", "/os-aggregates")["aggregates"]]

    # --- server groups ----------------------------------------------------------------------

    def list_server_groups(self) -> list[ServerGroup]:
        """Every project's server groups (GET /os-server-groups?all_projects=True), paged
        with limit and offset as Nova pages them."""
        groups: list[ServerGroup] = []
        while True:
            query: Query = [("all_projects", "True"), ("offset", str(len(groups)))]
            page = self._call("GET", "/os-server-groups", query=query).get("server_groups") or []
            if not page:
                return groups
            groups.extend(ServerGroup.of(g) for g in page)

    def add_host_to_aggregate(self, aggregate_id: int | str, host: str) -> None:
        LOG.info("Add host %s to aggregate %s", host, aggregate_id)
        self._call(
            "POST", f"/os-aggregates/{aggregate_id}/action", body={"add_host": {"host": host}}
        )

    # --- transport --------------------------------------------------------------------------

    def _action(self, server_id: str, body: dict[str, Any]) -> None:
        self._call("POST", f"/servers/{server_id}/action", body=body)

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """One request at NOVA_API_VERSION; an error answer or a transport failure raises.
        ``timeout``: this request's instead of the client's."""
        kwargs: dict[str, Any] = {"timeout": self._timeout if timeout is None else timeout}
        if body is not None:
            kwargs["json"] = body
        if query:
            kwargs["params"] = list(query)
        action = next(iter(body)) if path.endswith("/action") and len(body or ()) == 1 else None
        operation = operation_name(method, path, body)
        with (
            metrics.nova_request(operation),
            retry.counted(operation, repeatable=retry.repeatable(method, action)),
        ):
            return self._send(method, path, kwargs)

    def _send(self, method: str, path: str, kwargs: dict[str, Any]) -> Any:
        try:
            resp = self._adapter.request(
                path,
                method,
                raise_exc=False,
                microversion=NOVA_API_VERSION,
                **kwargs,
            )
        except ks_exc.ClientException as exc:
            raise keystoneauth_error(exc, "Nova") from exc
        if resp.status_code >= 400:
            err = _nova_error(resp)
            LOG.warning("Nova answered %s %s: %s", method, path, err.detail)
            raise err
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError as exc:  # a proxy's page, say: still a failed call
            raise exception.NovaError(
                f"Nova answered {method} {path} with a body that is not JSON.",
                status=resp.status_code,
            ) from exc


def service_update_timeout_of(timeout: float | None, service_update: float | None) -> float | None:
    """The timeout of a service update: ``service_update``, but never shorter than the
    client's ``timeout`` (None: no timeout)."""
    if service_update is None:
        return timeout
    if timeout is None:
        return None
    return max(timeout, service_update)


_ID_SEGMENT = re.compile(r"/(servers|os-services|os-aggregates)/[^/]+")


def operation_name(method: str, path: str, body: Any = None) -> str:
    """A metric label of bounded cardinality: ``GET /servers/{id}``, or the action's name
    (``evacuate``, ``os-start``) for a server or aggregate action."""
    if path.endswith("/action") and isinstance(body, dict) and len(body) == 1:
        return str(next(iter(body)))
    template = _ID_SEGMENT.sub(r"/\1/{id}", path.split("?", 1)[0])
    return f"{method} {template}"


def _auth_type(conf: cfg.ConfigOpts) -> str:
    """[keystone_authtoken]/auth_type names the plugin, as in the reference; keystonemiddleware
    registers that group, so a conf without it falls back to the password plugin."""
    try:
        name = conf.keystone_authtoken.auth_type
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        name = None
    return str(name or "password")

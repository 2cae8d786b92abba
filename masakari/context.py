"""The request context: who is calling, on oslo.context, with a policy check bound to it."""

from __future__ import annotations

from typing import Any

from oslo_context import context

from masakari import exception, policy


class RequestContext(context.RequestContext):  # type: ignore[misc]
    """oslo.context's context plus the reference's extras and ``can()``.

    ``is_admin`` is computed from the ``context_is_admin`` rule when not given. The
    enforcer the context checks against is passed in: nothing global is consulted.
    """

    def __init__(
        self,
        *,
        enforcer: policy.Enforcer | None = None,
        is_admin: bool | None = None,
        read_deleted: str = "no",
        remote_address: str | None = None,
        service_catalog: list[dict[str, Any]] | None = None,
        user_auth_plugin: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(is_admin=is_admin, **kwargs)
        self.enforcer = enforcer
        self.read_deleted = read_deleted
        self.remote_address = remote_address
        # Only the parts the reference keeps (Nova and Keystone endpoints).
        self.service_catalog = [
            entry for entry in service_catalog or [] if entry.get("type") in ("compute", "identity")
        ]
        self.user_auth_plugin = user_auth_plugin
        if self.is_admin is None:
            self.is_admin = enforcer is not None and policy.check_is_admin(
                enforcer, {**super().to_policy_values(), "is_admin": False}
            )

    def to_policy_values(self) -> Any:
        # A plain dict: oslo.context's own mapping warns (DeprecationWarning) whenever a key
        # added to it is read, and the reference's rules read is_admin (``is_admin:True``).
        return {**super().to_policy_values(), "is_admin": self.is_admin}

    def can(self, action: str, target: dict[str, Any] | None = None, fatal: bool = True) -> bool:
        """Whether the policy allows ``action``; PolicyNotAuthorized (403) when ``fatal``."""
        if self.enforcer is None:
            raise RuntimeError("this context has no policy enforcer")
        try:
            policy.authorize(self.enforcer, dict(self.to_policy_values()), action, target)
        except exception.Forbidden:
            if fatal:
                raise
            return False
        return True

    def to_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = super().to_dict()
        values.update(
            {
                "read_deleted": self.read_deleted,
                "remote_address": self.remote_address,
                "service_catalog": self.service_catalog,
            }
        )
        return values


REQUEST_ID_KEY = "openstack.request_id"


def start_request(environ: dict[str, Any]) -> None:
    """Make this request's own, anonymous context the thread's current one.

    oslo.context keeps the last context built in a thread-local store, and oslo.log prints
    the current one's request id and user on every line that names no context. API worker
    threads serve one request after another: without this, what the layers before the
    context middleware log (a token refused by auth_token, a body too large) would be
    logged under the previous request's user and request id.
    """
    context.RequestContext(request_id=environ.get(REQUEST_ID_KEY), overwrite=True)

"""The ``redfish`` driver: a BMC's Redfish service, with sushy.

Power off is the ComputerSystem ``Reset`` action with ``ForceOff`` (a hard off), status the
system's ``PowerState``, power on ``Reset`` with ``On``. A BMC that answers a ForceOff with
400 or 409 because the system is already off (iDRAC and others do) is not a failure once a
status read says off. :meth:`RedfishDriver.health` reads the system's ``Status.Health`` and
``Status.HealthRollup`` (quarantine's Redfish signal).

``spec.address`` is the service's base URL (``https://bmc.example``; a bare host name means
https, ``spec.port`` replaces the URL's port), ``options["system"]`` the system's id or path
(unset: the service's only system), ``options["verify"]`` TLS: ``1`` (the system's CAs,
the default), ``0`` (no check) or a CA bundle's path. Authentication is HTTP basic on every
request (no Redfish session is left behind on the BMC).

Every call returns within ``spec.timeout``: sushy's own request timeouts are set to it and
its retries bounded, and the call runs on a thread of its own that is abandoned at the
deadline (sushy retries a 5xx answer 10 times, 3 s apart, by default).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from masakari.fencing import _deadline, base

SYSTEMS = "/redfish/v1/Systems/"
_OFF_REFUSALS = (400, 409)
_STATES = {"on": base.PowerState.ON, "off": base.PowerState.OFF}
# Neither is "off": a host powering off still runs, one powering on or paused may run again.
_NOT_OFF = ("poweringon", "poweringoff", "paused")
# DMTF's spelling, then the one some firmware (and sushy-tools' emulator) serves.
_ROLLUP_KEYS = ("HealthRollup", "HealthRollUp")


@dataclasses.dataclass(frozen=True)
class Health:
    """A ComputerSystem's ``Status``: ``health`` of the system itself, ``rollup`` with its
    parts (DIMMs, fans, power supplies, drives); each ``OK``, ``Warning``, ``Critical`` as
    the BMC wrote it, or None when it did not say."""

    health: str | None
    rollup: str | None

    def values(self) -> tuple[str, ...]:
        return tuple(v for v in (self.health, self.rollup) if v is not None)


class RedfishDriver:
    """:class:`~masakari.fencing.base.PowerDriver` for one Redfish ComputerSystem."""

    def __init__(self, spec: base.DriverSpec) -> None:
        if not spec.address:
            raise base.FenceError("no address", spec.describe())
        self.spec = spec
        self.base_url = base_url(spec.address, spec.port)
        self.verify = _verify(spec.options.get("verify", "1"))
        system = spec.options.get("system")
        self.system_path = None if not system else (system if "/" in system else SYSTEMS + system)

    def power_off(self) -> None:
        self._within("power off", self._power_off)

    def power_status(self) -> base.PowerState:
        return self._within("power status", lambda: _state(self._system()))

    def power_on(self) -> None:
        self._within("power on", lambda: self._reset("ON"))

    def health(self) -> Health:
        """The system's health, read-only; the power status's timeouts and errors."""
        result: Health = self._within("health", lambda: _health(self._system()))
        return result

    # -- internals ------------------------------------------------------------------------

    def _within(self, what: str, call: Any) -> Any:
        spec = self.spec
        try:
            return _deadline.within(spec.timeout, lambda: self._translated(what, call))
        except _deadline.Expired:
            raise base.Unreachable(
                f"no answer to Redfish {what} within {spec.timeout:g} s", spec.describe()
            ) from None

    def _translated(self, what: str, call: Any) -> Any:
        from sushy import exceptions as sushy_exceptions

        prefix = f"Redfish {what}"
        driver = self.spec.describe()
        try:
            return call()
        except sushy_exceptions.ConnectionError as exc:
            raise base.Unreachable(f"{prefix}: {_connection_reason(exc)}", driver) from None
        except sushy_exceptions.AccessError as exc:
            raise base.Refused(f"{prefix}: access denied ({_status(exc)})", driver) from None
        except sushy_exceptions.ResourceNotFoundError:
            raise base.Refused(f"{prefix}: no system {self.system_path}", driver) from None
        except sushy_exceptions.UnknownDefaultError:
            raise base.Refused(
                f"{prefix}: the service has not exactly one system: set 'system'",
                driver,
            ) from None
        except sushy_exceptions.InvalidParameterValueError:
            raise base.Refused(
                f"{prefix}: the system does not offer this reset type", driver
            ) from None
        except sushy_exceptions.ServerSideError as exc:
            raise base.FenceError(f"{prefix}: the BMC failed ({_status(exc)})", driver) from None
        except sushy_exceptions.HTTPError as exc:
            raise base.Refused(f"{prefix}: refused ({_status(exc)})", driver) from None
        except sushy_exceptions.SushyError as exc:
            raise base.FenceError(f"{prefix}: {type(exc).__name__}", driver) from None

    def _power_off(self) -> None:
        from sushy import exceptions as sushy_exceptions

        system = self._system()
        try:
            self._reset("FORCE_OFF", system)
        except sushy_exceptions.HTTPError as exc:
            # An off system refused: off is what was asked. Anything else stands.
            if exc.status_code in _OFF_REFUSALS:
                system.refresh()
                if _state(system) is base.PowerState.OFF:
                    return
            raise

    def _reset(self, reset_type: str, system: Any = None) -> None:
        import sushy

        (system or self._system()).reset_system(getattr(sushy.ResetType, reset_type))

    def _system(self) -> Any:
        import sushy
        from sushy import auth

        timeout = self.spec.timeout
        service = sushy.Sushy(
            self.base_url,
            verify=self.verify,
            auth=auth.BasicAuth(self.spec.username, self.spec.password),
            # One try per request (sushy makes at least one), one retry of a failed read.
            server_side_retries=1,
            server_side_retries_delay=min(1.0, timeout / 4),
            read_timeout=timeout,
            connect_timeout=timeout,
        )
        return service.get_system(self.system_path)


def base_url(address: str, port: int | None = None) -> str:
    """The service's URL: ``address`` with https:// when it has no scheme, ``port`` in it."""
    parts = urlsplit(address if "://" in address else f"https://{address}")
    netloc = parts.netloc
    if port is not None:
        host = parts.hostname or ""
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _verify(value: str) -> bool | str:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    return value


def _state(system: Any) -> base.PowerState:
    value = system.power_state
    text = str(getattr(value, "value", value) or "").replace(" ", "").lower()
    if text in _STATES:
        return _STATES[text]
    if text in _NOT_OFF:
        return base.PowerState.ON
    return base.PowerState.UNKNOWN


def _health(system: Any) -> Health:
    # The raw document: sushy maps only DMTF's spelling, and an unknown value to None.
    status = getattr(system, "json", {}).get("Status")
    if not isinstance(status, Mapping):
        return Health(None, None)
    rollup = next((status[k] for k in _ROLLUP_KEYS if status.get(k) is not None), None)
    return Health(_text(status.get("Health")), _text(rollup))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _status(exc: Any) -> str:
    code = getattr(exc, "status_code", None)
    return f"HTTP {code}" if code else type(exc).__name__


def _connection_reason(exc: Any) -> str:
    # sushy's message carries the URL and the requests exception: the URL holds no secret
    # (basic authentication travels in a header), but keep it short.
    text = str(exc)
    for marker in ("timed out", "Connection refused", "Name or service not known", "SSL"):
        if marker in text:
            return f"cannot connect ({marker.lower()})"
    return "cannot connect"

"""The power drivers by type, and the readiness doctor's read-only check of one entry.

``power_driver(spec)`` builds the driver of a fencing-file entry (``ipmi``, ``redfish``,
``agent``); ``kdump`` entries are no power driver (the engine asks its crash proof instead),
nor are ``ceph`` entries (storage fencing: :mod:`masakari.fencing.ceph`, which checks its own).
``check(spec)`` reads the power state once, changing nothing, and says whether the driver is
reachable, whether its credentials work, and the state, or why not.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from collections.abc import Callable, Iterable

from masakari.fencing import base

__all__ = ["Check", "Unbuildable", "check", "power_driver", "unbuildable"]


def _ipmi(spec: base.DriverSpec) -> base.PowerDriver:
    _need("pyghmi", spec)
    from masakari.fencing.ipmi import IPMIDriver

    return IPMIDriver(spec)


def _redfish(spec: base.DriverSpec) -> base.PowerDriver:
    _need("sushy", spec)
    from masakari.fencing.redfish import RedfishDriver

    return RedfishDriver(spec)


def _agent(spec: base.DriverSpec) -> base.PowerDriver:
    from masakari.fencing.agent import AgentDriver

    return AgentDriver(spec)


_FACTORIES: dict[str, Callable[[base.DriverSpec], base.PowerDriver]] = {
    base.IPMI: _ipmi,
    base.REDFISH: _redfish,
    base.AGENT: _agent,
}


def power_driver(spec: base.DriverSpec) -> base.PowerDriver:
    """The driver for ``spec``; :class:`~masakari.fencing.base.FenceError` when it cannot
    be built (its library is missing, a required key is unset)."""
    try:
        factory = _FACTORIES[spec.type]
    except KeyError:
        if spec.type in (base.KDUMP, base.LEASE):
            raise ValueError(f"a {spec.type} entry is a proof, not a power driver") from None
        if spec.type == base.CEPH:
            raise ValueError("a ceph entry is a storage fence, not a power driver") from None
        raise ValueError(f"unknown driver type {spec.type!r}") from None
    return factory(spec)


@dataclasses.dataclass(frozen=True)
class Unbuildable:
    """A fencing-file entry whose driver cannot be built: ``where`` in the file
    (``hosts['rack2-*'][1]``), the driver as evidence shows it, and why."""

    where: str
    driver: str
    why: str

    def __str__(self) -> str:
        return f"{self.where} ({self.driver}): its driver cannot be built: {self.why}"


def unbuildable(
    entries: Iterable[tuple[str, base.DriverSpec]],
    build: Callable[[base.DriverSpec], base.PowerDriver] = power_driver,
) -> list[Unbuildable]:
    """The entries whose power driver cannot be built (its library or agent is missing, an
    option it needs is unusable), found without calling any BMC: a fence through them would
    fail whatever the host, which is worth saying before the first one does."""
    found = []
    for where, spec in entries:
        if spec.type in (base.KDUMP, base.LEASE):
            continue  # a proof, not a power driver: nothing to build
        try:
            if spec.type == base.CEPH:
                from masakari.fencing.ceph import CephBlocklist

                CephBlocklist(spec)
            else:
                build(spec)
        except (base.FenceError, ValueError) as exc:
            found.append(Unbuildable(where, spec.describe(), base.why_of(exc)))
    return found


def _need(module: str, spec: base.DriverSpec) -> None:
    if importlib.util.find_spec(module) is None:
        raise base.FenceError(
            f"the {spec.type} driver needs {module}: pip install 'masakari[fencing]'",
            spec.describe(),
        )


@dataclasses.dataclass(frozen=True)
class Check:
    """What one read-only check of a fencing-file entry found.

    ``reachable``/``credentials_valid``: True or False when the answer says so, None when it
    cannot tell (an agent's failure does not say why; kdump has neither). ``state``: the
    power state read, when one was. ``error``: why the entry would not fence, or None.
    """

    driver: str
    reachable: bool | None
    credentials_valid: bool | None
    state: base.PowerState | None
    error: str | None
    duration: float

    @property
    def ok(self) -> bool:
        return self.error is None


# The states a fence can be confirmed by: a host must read Off after its power off, and a
# driver that reads On now can tell Off from On then.
_READABLE = (base.PowerState.ON, base.PowerState.OFF)


def check(
    spec: base.DriverSpec,
    build: Callable[[base.DriverSpec], base.PowerDriver] = power_driver,
) -> Check:
    """One power-status read through ``spec``'s driver (nothing is switched); for a kdump
    entry, that its address resolves and its ``wait`` leaves time for its messages; for a
    lease, one read of the host's slot; for a ceph entry, one read of the OSD map's
    blocklist as its user. Returns within about ``spec.timeout``.

    A read that answers neither on nor off (unknown, or no state at all) fails the check:
    the same read could never confirm the host off after a fence."""
    started = time.monotonic()

    def done(
        reachable: bool | None,
        credentials: bool | None,
        state: base.PowerState | None = None,
        error: str | None = None,
    ) -> Check:
        return Check(
            spec.describe(), reachable, credentials, state, error, time.monotonic() - started
        )

    if spec.type == base.KDUMP:
        from masakari.fencing import kdump

        try:
            kdump.resolve(spec.address or "")
        except (OSError, UnicodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            return done(None, None, error=f"address does not resolve: {reason}")
        short = kdump.KdumpRule.of(spec).short_wait(float(spec.options.get("wait", 0)))
        return done(None, None, error=short)
    if spec.type == base.LEASE:
        from masakari.fencing import lease

        error = lease.check(spec)
        return done(None, None, error=error)
    if spec.type == base.CEPH:
        from masakari.fencing import ceph

        try:
            ceph.probe(spec)
        except base.Unreachable as exc:
            return done(False, None, error=exc.why)
        except base.Refused as exc:
            return done(True, False, error=exc.why)
        except base.FenceError as exc:
            return done(None, None, error=exc.why)
        return done(True, True)  # no power state: a storage fence has none
    try:
        driver = build(spec)
    except (base.FenceError, ValueError) as exc:
        return done(None, None, error=f"its driver cannot be built: {base.why_of(exc)}")
    try:
        state = driver.power_status()
    # The check names its driver (Check.driver): the error says why alone.
    except base.Unreachable as exc:
        return done(False, None, error=exc.why)
    except base.Refused as exc:
        return done(True, False, error=exc.why)
    except (base.FenceError, ValueError) as exc:
        return done(None, None, error=base.why_of(exc))
    if state not in _READABLE:
        shown = getattr(state, "value", None) or repr(state)
        return done(
            True,
            True,
            state=state if isinstance(state, base.PowerState) else None,
            error=f"power state reads {shown}, neither on nor off: a power off could not be "
            "confirmed",
        )
    return done(True, True, state=state)

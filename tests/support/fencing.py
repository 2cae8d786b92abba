"""The host fencing tests' helpers: the fake BMCs' credentials, the driver specs that reach
them, and a skip (or, where CI requires it, a failure) without a Debian package's program."""

from __future__ import annotations

import os

import pytest

from masakari.fencing import base
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.redfish_bmc import RedfishBMC

USER = "admin"
PASSWORD = "s3cret-bmc-pw"


def require_file(request: pytest.FixtureRequest, path: str, package: str) -> str:
    """``path`` when it exists; otherwise skip, or fail where CI installs ``package``."""
    if os.access(path, os.X_OK):
        return path
    reason = f"{path} missing (Debian package {package})"
    if request.config.getoption("--require-servers"):
        pytest.fail(reason)
    pytest.skip(reason)


def ipmi_spec(bmc: FakeBMC, timeout: float = 15.0, **overrides: object) -> base.DriverSpec:
    fields: dict[str, object] = {
        "address": bmc.address,
        "port": bmc.port,
        "username": USER,
        "password": PASSWORD,
        "timeout": timeout,
    }
    fields.update(overrides)
    return base.DriverSpec(base.IPMI, **fields)  # type: ignore[arg-type]


def redfish_spec(bmc: RedfishBMC, timeout: float = 15.0, **overrides: object) -> base.DriverSpec:
    fields: dict[str, object] = {
        "address": bmc.url,
        "username": USER,
        "password": PASSWORD,
        "timeout": timeout,
    }
    if bmc.ca_file:
        fields["options"] = {"verify": bmc.ca_file}
    fields.update(overrides)
    return base.DriverSpec(base.REDFISH, **fields)  # type: ignore[arg-type]


# A driver of an address nothing answers at (TEST-NET-1), for runs whose BMC is scripted.
IPMI = base.DriverSpec("ipmi", address="192.0.2.1", port=623, username="admin", password="s3cret")


class Plan:
    """A fencing plan of fixed driver lists per host name."""

    def __init__(self, specs: dict[str, list[base.DriverSpec]]) -> None:
        self.specs = specs

    def drivers_for(
        self, host_name: str, segment_name: str | None = None, segment_uuid: str | None = None
    ) -> list[base.DriverSpec] | None:
        return self.specs.get(host_name)

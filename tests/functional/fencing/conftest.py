"""Fixtures of the host fencing tests: fake BMCs (IPMI, Redfish) on loopback, and Debian's
fence agents, which a test skips without unless CI requires them (--require-servers)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

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


@pytest.fixture
def fake_bmc() -> Iterator[Callable[..., FakeBMC]]:
    """``fake_bmc(**knobs)``: a started FakeBMC (admin / PASSWORD), closed after the test."""
    made: list[FakeBMC] = []

    def make(**knobs: object) -> FakeBMC:
        bmc = FakeBMC(USER, PASSWORD)
        made.append(bmc)
        for name, value in knobs.items():
            setattr(bmc, name, value)
        return bmc

    yield make
    for bmc in made:
        bmc.close()


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


@pytest.fixture(scope="module")
def redfish_server() -> Iterator[RedfishBMC]:
    """One Redfish emulator (http) for a module's tests; ``redfish_bmc`` resets it."""
    with RedfishBMC(USER, PASSWORD) as bmc:
        yield bmc


@pytest.fixture
def redfish_bmc(redfish_server: RedfishBMC) -> RedfishBMC:
    """The module's Redfish emulator, as started: one system, on, no knob, an empty log."""
    redfish_server.reset()
    return redfish_server


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

"""Fixtures of the host fencing tests: fake BMCs (IPMI, Redfish) on loopback (their
credentials, driver specs and the fence agents' skip: tests/support/fencing.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from masakari.fencing import ipmi
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.redfish_bmc import RedfishBMC
from tests.support.fencing import PASSWORD, USER


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


@pytest.fixture(autouse=True)
def ipmi_sessions() -> Iterator[None]:
    """The IPMI driver's worker process, stopped after each test: no session outlives it."""
    yield
    ipmi.SESSIONS.stop()


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

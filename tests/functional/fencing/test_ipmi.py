"""The ipmi driver (pyghmi) against a fake BMC speaking IPMI 2.0 on loopback: every answer a
fence meets, each within the entry's timeout."""

from __future__ import annotations

import concurrent.futures
import time

import pytest

from masakari.fencing import base, drivers
from masakari.fencing.ipmi import IPMIDriver
from tests.fakes.ipmi_bmc import FakeBMC
from tests.support.fencing import PASSWORD, ipmi_spec

# pyghmi alone needs 20-30 s to give up on a dead BMC; the driver answers at its timeout.
DEAD_TIMEOUT = 1.5
WELL_WITHIN = 10


def sent(bmc: FakeBMC) -> list[str]:
    """The commands the BMC received, a client's retransmissions (pyghmi resends after half
    a second without an answer) counted once."""
    return [c for i, c in enumerate(bmc.commands) if i == 0 or bmc.commands[i - 1] != c]


def test_power_off_status_on(fake_bmc) -> None:
    bmc = fake_bmc()
    driver = drivers.power_driver(ipmi_spec(bmc))
    assert isinstance(driver, IPMIDriver)

    assert driver.power_status() is base.PowerState.ON
    driver.power_off()
    assert bmc.power == "off"
    assert driver.power_status() is base.PowerState.OFF
    driver.power_on()
    assert bmc.power == "on"
    # A hard power off (chassis control "power down"), never a graceful shutdown.
    assert sent(bmc) == ["status", "off", "status", "on"]


def test_power_off_of_an_off_host_is_no_failure(fake_bmc) -> None:
    bmc = fake_bmc(power="off")
    IPMIDriver(ipmi_spec(bmc)).power_off()
    assert bmc.power == "off"


def test_a_bmc_refusing_to_power_off_an_off_host_counts_as_off(fake_bmc) -> None:
    bmc = fake_bmc(power="off", refuse_off=True)
    IPMIDriver(ipmi_spec(bmc)).power_off()
    # The refusal was read as "already off" by a status read, not taken on trust.
    assert sent(bmc) == ["off", "status"]


def test_a_refused_power_off_of_a_running_host_is_refused(fake_bmc) -> None:
    bmc = fake_bmc(refuse_off=True)
    with pytest.raises(base.Refused, match="completion code 0xd5"):
        IPMIDriver(ipmi_spec(bmc)).power_off()
    assert bmc.power == "on"


def test_stuck_bmc_accepts_the_off_and_still_reads_on(fake_bmc) -> None:
    bmc = fake_bmc(stuck=True)
    driver = IPMIDriver(ipmi_spec(bmc))
    driver.power_off()
    assert driver.power_status() is base.PowerState.ON
    assert bmc.power == "on"


@pytest.mark.parametrize("call", ["power_off", "power_status", "power_on"])
def test_dead_bmc_is_unreachable_at_the_timeout(fake_bmc, call) -> None:
    bmc = fake_bmc(dead=True)
    driver = IPMIDriver(ipmi_spec(bmc, timeout=DEAD_TIMEOUT))
    started = time.monotonic()
    with pytest.raises(base.Unreachable, match="no answer"):
        getattr(driver, call)()
    assert time.monotonic() - started < WELL_WITHIN
    assert bmc.power == "on"


def test_wrong_password_is_refused(fake_bmc) -> None:
    bmc = fake_bmc()
    driver = IPMIDriver(ipmi_spec(bmc, password="wrong"))
    with pytest.raises(base.Refused) as caught:
        driver.power_off()
    assert bmc.power == "on"
    assert "wrong" not in str(caught.value)


def test_unknown_user_is_refused(fake_bmc) -> None:
    bmc = fake_bmc()
    with pytest.raises(base.Refused):
        IPMIDriver(ipmi_spec(bmc, username="nobody")).power_status()


def test_slow_bmc_within_the_timeout_answers(fake_bmc) -> None:
    bmc = fake_bmc(delay=0.5)
    driver = IPMIDriver(ipmi_spec(bmc, timeout=8))
    driver.power_off()
    assert driver.power_status() is base.PowerState.OFF


def test_slow_bmc_past_the_timeout_is_unreachable(fake_bmc) -> None:
    bmc = fake_bmc(delay=30)
    with pytest.raises(base.Unreachable):
        IPMIDriver(ipmi_spec(bmc, timeout=DEAD_TIMEOUT)).power_status()


def test_an_address_that_does_not_resolve_is_unreachable() -> None:
    spec = base.DriverSpec(base.IPMI, address="bmc.invalid", username="a", password="b", timeout=5)
    with pytest.raises(base.Unreachable, match="cannot reach"):
        IPMIDriver(spec).power_status()


def test_ten_bmcs_powered_off_at_once(fake_bmc) -> None:
    bmcs = [fake_bmc() for _ in range(10)]
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        list(pool.map(lambda b: IPMIDriver(ipmi_spec(b, timeout=30)).power_off(), bmcs))
    assert [b.power for b in bmcs] == ["off"] * 10


def test_check_reads_the_state_and_changes_nothing(fake_bmc) -> None:
    bmc = fake_bmc()
    found = drivers.check(ipmi_spec(bmc))
    assert (found.ok, found.reachable, found.credentials_valid, found.state) == (
        True,
        True,
        True,
        base.PowerState.ON,
    )
    assert sent(bmc) == ["status"]


def test_check_says_why_not(fake_bmc) -> None:
    refused = drivers.check(ipmi_spec(fake_bmc(), password="wrong"))
    assert (refused.ok, refused.reachable, refused.credentials_valid) == (False, True, False)
    dead = drivers.check(ipmi_spec(fake_bmc(dead=True), timeout=DEAD_TIMEOUT))
    assert (dead.ok, dead.reachable, dead.credentials_valid) == (False, False, None)
    assert PASSWORD not in repr(dead) + repr(refused)

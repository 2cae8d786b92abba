"""The redfish driver (sushy) against sushy-tools' Redfish emulator on loopback: every answer
a fence meets, each within the entry's timeout."""

from __future__ import annotations

import time

import pytest

from masakari.fencing import base, drivers
from masakari.fencing.redfish import Health, RedfishDriver, base_url
from tests.fakes.redfish_bmc import RedfishBMC
from tests.support.fencing import PASSWORD, USER, redfish_spec

DEAD_TIMEOUT = 1.5
WELL_WITHIN = 10


def test_power_off_status_on(redfish_bmc) -> None:
    driver = drivers.power_driver(redfish_spec(redfish_bmc))
    assert isinstance(driver, RedfishDriver)

    assert driver.power_status() is base.PowerState.ON
    driver.power_off()
    assert redfish_bmc.power() == "off"
    assert driver.power_status() is base.PowerState.OFF
    driver.power_on()
    assert redfish_bmc.power() == "on"
    assert redfish_bmc.resets() == ["ForceOff", "On"]


def test_power_off_of_an_off_system_is_no_failure(redfish_bmc) -> None:
    redfish_bmc.set_power("off")
    RedfishDriver(redfish_spec(redfish_bmc)).power_off()
    assert redfish_bmc.power() == "off"


def test_a_409_because_the_system_is_off_counts_as_off(redfish_bmc) -> None:
    redfish_bmc.set_power("off")
    redfish_bmc.set_knobs(refuse_off_when_off=True)
    RedfishDriver(redfish_spec(redfish_bmc)).power_off()
    assert redfish_bmc.resets() == ["ForceOff"]


def test_a_power_change_that_takes_time_reads_on_until_it_applies(redfish_bmc) -> None:
    redfish_bmc.set_knobs(power_delay=1)
    driver = RedfishDriver(redfish_spec(redfish_bmc))
    driver.power_off()
    assert driver.power_status() is base.PowerState.ON
    deadline = time.monotonic() + WELL_WITHIN
    while driver.power_status() is not base.PowerState.OFF:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_stuck_bmc_accepts_the_off_and_still_reads_on(redfish_bmc) -> None:
    redfish_bmc.set_knobs(stuck=True)
    driver = RedfishDriver(redfish_spec(redfish_bmc))
    driver.power_off()
    assert driver.power_status() is base.PowerState.ON
    assert redfish_bmc.resets() == ["ForceOff"]


@pytest.mark.parametrize("call", ["power_off", "power_status"])
def test_hung_bmc_is_unreachable_at_the_timeout(redfish_bmc, call) -> None:
    redfish_bmc.dead = True
    driver = RedfishDriver(redfish_spec(redfish_bmc, timeout=DEAD_TIMEOUT))
    started = time.monotonic()
    # sushy's read timeout (the entry's) or the driver's deadline, whichever ends first.
    with pytest.raises(base.Unreachable, match="no answer|timed out"):
        getattr(driver, call)()
    assert time.monotonic() - started < WELL_WITHIN
    redfish_bmc.dead = False
    if call == "power_off":
        # The request waited in the stopped emulator's socket: woken, it may still act on
        # it (why an engine reads the state back before it sends an off again). Let it, so
        # that the next test starts from a quiet emulator.
        deadline = time.monotonic() + 3
        while not redfish_bmc.resets() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert redfish_bmc.resets() in ([], ["ForceOff"])
    assert redfish_bmc.power() == ("off" if redfish_bmc.resets() else "on")


def test_nothing_listening_is_unreachable_at_once() -> None:
    spec = base.DriverSpec(
        base.REDFISH, address="http://127.0.0.1:9", username=USER, password=PASSWORD
    )
    with pytest.raises(base.Unreachable, match="cannot connect"):
        RedfishDriver(spec).power_status()


def test_wrong_password_is_refused(redfish_bmc) -> None:
    driver = RedfishDriver(redfish_spec(redfish_bmc, password="wrong"))
    with pytest.raises(base.Refused, match="HTTP 401") as caught:
        driver.power_off()
    assert redfish_bmc.resets() == []
    assert "wrong" not in str(caught.value)


def test_slow_bmc_within_the_timeout_answers(redfish_bmc) -> None:
    redfish_bmc.set_knobs(delay=0.3)
    assert RedfishDriver(redfish_spec(redfish_bmc)).power_status() is base.PowerState.ON


def test_slow_bmc_past_the_timeout_is_unreachable(redfish_bmc) -> None:
    redfish_bmc.set_knobs(delay=5)
    with pytest.raises(base.Unreachable):
        RedfishDriver(redfish_spec(redfish_bmc, timeout=DEAD_TIMEOUT)).power_status()


def test_check_reads_the_state_and_changes_nothing(redfish_bmc) -> None:
    found = drivers.check(redfish_spec(redfish_bmc))
    assert (found.ok, found.reachable, found.credentials_valid, found.state) == (
        True,
        True,
        True,
        base.PowerState.ON,
    )
    assert redfish_bmc.resets() == []
    refused = drivers.check(redfish_spec(redfish_bmc, password="wrong"))
    assert (refused.ok, refused.reachable, refused.credentials_valid) == (False, True, False)


def test_base_url() -> None:
    assert base_url("bmc.example") == "https://bmc.example"
    assert base_url("http://10.0.0.1:8000/", 8443) == "http://10.0.0.1:8443"
    assert base_url("https://[fd00::1]", 443) == "https://[fd00::1]:443"


@pytest.fixture(scope="module")
def two_systems() -> RedfishBMC:
    with RedfishBMC(USER, PASSWORD, systems=["node-a", "node-b"], https=True) as bmc:
        yield bmc


def test_a_system_by_id_or_path_and_https_checked_against_its_ca(two_systems) -> None:
    by_id = redfish_spec(
        two_systems,
        options={"system": two_systems.system_id("node-b"), "verify": two_systems.ca_file},
    )
    RedfishDriver(by_id).power_off()
    assert (two_systems.power("node-a"), two_systems.power("node-b")) == ("on", "off")
    by_path = redfish_spec(
        two_systems, options={"system": two_systems.system_path("node-a"), "verify": "0"}
    )
    assert RedfishDriver(by_path).power_status() is base.PowerState.ON


def test_several_systems_and_none_named_is_refused(two_systems) -> None:
    with pytest.raises(base.Refused, match="set 'system'"):
        RedfishDriver(redfish_spec(two_systems)).power_status()


def test_an_untrusted_certificate_is_refused_not_retried(two_systems) -> None:
    spec = redfish_spec(two_systems, options={"system": two_systems.system_id("node-a")})
    with pytest.raises(base.Unreachable, match="ssl"):
        RedfishDriver(spec).power_status()


def test_health_reads_the_systems_status(redfish_bmc) -> None:
    driver = RedfishDriver(redfish_spec(redfish_bmc))
    assert driver.health() == Health(None, None)  # the emulator's own: no Status
    redfish_bmc.set_knobs(health="OK", health_rollup="OK")
    assert driver.health() == Health("OK", "OK")
    redfish_bmc.set_knobs(health_rollup="Critical")
    assert driver.health() == Health("OK", "Critical")
    redfish_bmc.set_knobs(health="Warning")
    assert driver.health().values() == ("Warning", "Critical")
    assert redfish_bmc.resets() == []  # read-only


def test_health_of_a_hung_bmc_is_unreachable_at_the_timeout(redfish_bmc) -> None:
    redfish_bmc.dead = True
    driver = RedfishDriver(redfish_spec(redfish_bmc, timeout=DEAD_TIMEOUT))
    started = time.monotonic()
    with pytest.raises(base.Unreachable, match="Redfish health|no answer"):
        driver.health()
    assert time.monotonic() - started < WELL_WITHIN


def test_health_with_wrong_credentials_is_refused(redfish_bmc) -> None:
    driver = RedfishDriver(redfish_spec(redfish_bmc, password="wrong"))
    with pytest.raises(base.Refused, match="Redfish health: access denied"):
        driver.health()

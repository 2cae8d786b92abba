"""The ipmi driver (pyghmi) against a fake BMC speaking IPMI 2.0 on loopback: every answer a
fence meets, each within the entry's timeout; the sessions its worker process keeps, and
what happens to them when a BMC restarts, falls silent or changes its password."""

from __future__ import annotations

import concurrent.futures
import os
import time

import pytest

from masakari.fencing import base, drivers
from masakari.fencing.ipmi import SESSIONS, IPMIDriver
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


# -- the sessions kept -------------------------------------------------------------------------


def test_one_login_serves_every_call(fake_bmc) -> None:
    bmc = fake_bmc()
    driver = IPMIDriver(ipmi_spec(bmc))
    driver.power_status()
    driver.power_off()
    assert driver.power_status() is base.PowerState.OFF
    # A driver is built per call by the engine: a new one reuses the session too.
    IPMIDriver(ipmi_spec(bmc)).power_on()
    assert sent(bmc) == ["status", "off", "status", "on"]
    assert bmc.logins == 1


def test_a_restarted_bmc_is_logged_in_to_again(fake_bmc) -> None:
    bmc = fake_bmc()
    spec = ipmi_spec(bmc, timeout=6)
    IPMIDriver(spec).power_status()
    worker = SESSIONS.pid
    bmc.reboot()  # forgets the session: the next command on it goes unanswered

    started = time.monotonic()
    IPMIDriver(spec).power_off()
    assert time.monotonic() - started < spec.timeout
    assert bmc.power == "off"
    assert bmc.logins == 2
    assert SESSIONS.pid != worker
    assert IPMIDriver(spec).power_status() is base.PowerState.OFF
    assert bmc.logins == 2


def test_an_idle_session_is_kept_alive(fake_bmc, monkeypatch) -> None:
    bmc = fake_bmc(session_timeout=1.0)  # a BMC closes an idle session (after a minute)
    monkeypatch.setattr(SESSIONS, "every", 0.3)
    spec = ipmi_spec(bmc, timeout=6)
    IPMIDriver(spec).power_status()
    time.sleep(2.5)

    started = time.monotonic()
    IPMIDriver(spec).power_off()
    # Not the stale session's way (a third of the timeout, a new worker, a new login).
    assert time.monotonic() - started < spec.timeout / 3
    assert bmc.power == "off"
    assert bmc.logins == 1


def test_a_changed_password_is_used_not_the_session_of_the_old_one(fake_bmc) -> None:
    bmc = fake_bmc()
    IPMIDriver(ipmi_spec(bmc)).power_status()
    # The file now says another password: the BMC refuses it, whatever session is open.
    with pytest.raises(base.Refused):
        IPMIDriver(ipmi_spec(bmc, password="changed")).power_off()
    assert bmc.power == "on"
    bmc.password = "changed"  # the BMC's account changed as the file did
    IPMIDriver(ipmi_spec(bmc, password="changed")).power_off()
    assert bmc.power == "off"


def test_a_bmc_falling_silent_costs_its_timeout_and_no_other_bmc_anything(fake_bmc) -> None:
    silent, other = fake_bmc(), fake_bmc()
    spec = ipmi_spec(silent, timeout=DEAD_TIMEOUT)
    IPMIDriver(spec).power_status()
    IPMIDriver(ipmi_spec(other)).power_status()
    worker = SESSIONS.pid
    assert worker is not None
    silent.dead = True

    started = time.monotonic()
    with pytest.raises(base.Unreachable, match="no answer"):
        IPMIDriver(spec).power_off()
    assert time.monotonic() - started < DEAD_TIMEOUT + 1
    # The worker stuck in pyghmi was killed and replaced; the other BMC is served by the new
    # one, with a new session.
    assert SESSIONS.pid not in (None, worker)
    assert not _running(worker)
    IPMIDriver(ipmi_spec(other)).power_off()
    assert other.power == "off"
    assert other.logins == 2
    silent.dead = False
    assert IPMIDriver(spec).power_status() is base.PowerState.ON


def test_two_bmcs_are_called_at_once(fake_bmc) -> None:
    slow = [fake_bmc(delay=1.0), fake_bmc(delay=1.0)]
    for bmc in slow:  # logged in: what follows is the commands alone
        IPMIDriver(ipmi_spec(bmc)).power_on()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda b: IPMIDriver(ipmi_spec(b)).power_off(), slow))
    # One after the other would take 2 s.
    assert time.monotonic() - started < 1.8
    assert [b.power for b in slow] == ["off", "off"]


def test_a_silent_bmc_does_not_hold_up_the_calls_to_another(fake_bmc) -> None:
    silent, other = fake_bmc(dead=True), fake_bmc()
    IPMIDriver(ipmi_spec(other)).power_status()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(IPMIDriver(ipmi_spec(silent, timeout=3)).power_status)
        time.sleep(0.2)
        started = time.monotonic()
        for _ in range(5):
            IPMIDriver(ipmi_spec(other)).power_status()
        assert time.monotonic() - started < 1
        assert not waiting.done()
        with pytest.raises(base.Unreachable):
            waiting.result()


def test_calls_to_one_bmc_wait_for_each_other(fake_bmc) -> None:
    bmc = fake_bmc(delay=0.5)
    driver = IPMIDriver(ipmi_spec(bmc))
    driver.power_status()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda call: getattr(driver, call)(), ["power_off", "power_status"]))
    # The status read was sent after the power off was answered, never beside it.
    assert sent(bmc) == ["status", "off", "status"] or sent(bmc) == ["status", "status", "off"]
    assert bmc.logins == 1


def test_a_call_in_flight_at_the_stop_ends_there_and_starts_no_worker(fake_bmc) -> None:
    silent = fake_bmc(dead=True)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(IPMIDriver(ipmi_spec(silent, timeout=5)).power_status)
        time.sleep(0.5)
        SESSIONS.stop()  # the engine stops
        stopped = time.monotonic()
        with pytest.raises(base.Unreachable):
            waiting.result()
    assert time.monotonic() - stopped < 1
    assert SESSIONS.pid is None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

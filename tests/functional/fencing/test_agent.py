"""The agent driver: Debian's fence_ipmilan and fence_redfish against the same fake BMCs as
the ipmi and redfish drivers, and a fence agent of the test's own for the stdin protocol,
the exit codes and the kill at the timeout."""

from __future__ import annotations

import os
import pathlib
import stat
import threading
import time

import pytest

from masakari.fencing import base, drivers
from masakari.fencing.agent import AgentDriver
from tests.fakes.redfish_bmc import RedfishBMC
from tests.support.fencing import PASSWORD, USER, require_file

DEAD_TIMEOUT = 2
WELL_WITHIN = 10
# Fast agents for the tests: no pause after a power action (fence_ipmilan waits 2 s).
QUICK = {"power_wait": "0"}


@pytest.fixture
def fence_ipmilan(request) -> str:
    require_file(request, "/usr/bin/ipmitool", "ipmitool")
    return require_file(request, "/usr/sbin/fence_ipmilan", "fence-agents")


@pytest.fixture
def fence_redfish(request) -> str:
    return require_file(request, "/usr/sbin/fence_redfish", "fence-agents")


def ipmilan(bmc, timeout: float = 15, password: str = PASSWORD, **args: str) -> AgentDriver:
    spec = base.DriverSpec(
        base.AGENT,
        address=bmc.address,
        port=bmc.port,
        username=USER,
        password=password,
        timeout=timeout,
        options={"agent": "fence_ipmilan", "lanplus": "1", **QUICK, **args},
    )
    driver = drivers.power_driver(spec)
    assert isinstance(driver, AgentDriver)
    return driver


def test_fence_ipmilan_off_status_on(fence_ipmilan, fake_bmc) -> None:
    bmc = fake_bmc()
    driver = ipmilan(bmc)
    assert driver.power_status() is base.PowerState.ON
    driver.power_off()
    assert bmc.power == "off"
    assert driver.power_status() is base.PowerState.OFF
    driver.power_off()  # already off: the agent says so and succeeds
    driver.power_on()
    assert bmc.power == "on"
    assert "off" in bmc.commands and "on" in bmc.commands


def test_fence_ipmilan_stuck_bmc_fails_before_the_timeout(fence_ipmilan, fake_bmc) -> None:
    bmc = fake_bmc(stuck=True)
    with pytest.raises(base.FenceError, match="Timed out waiting to power OFF") as caught:
        ipmilan(bmc, power_timeout="1").power_off()
    assert not isinstance(caught.value, base.Unreachable)
    assert bmc.power == "on"


def test_fence_ipmilan_dead_bmc_is_unreachable(fence_ipmilan, fake_bmc) -> None:
    bmc = fake_bmc(dead=True)
    started = time.monotonic()
    # fence_ipmilan gives up by itself ("Connection timed out"), or is killed at the timeout.
    with pytest.raises(base.Unreachable, match="timed out|killed"):
        ipmilan(bmc, timeout=DEAD_TIMEOUT).power_off()
    assert time.monotonic() - started < WELL_WITHIN


def test_fence_ipmilan_wrong_password_fails_and_says_nothing_secret(fence_ipmilan, fake_bmc):
    bmc = fake_bmc()
    with pytest.raises(base.FenceError) as caught:
        ipmilan(bmc, password="wr0ng-pw").power_off()
    assert not isinstance(caught.value, base.Unreachable)
    assert "wr0ng-pw" not in str(caught.value)
    assert bmc.power == "on"


FAKE_IPMITOOL = """#!/bin/sh
# Records what fence_ipmilan's ipmitool is given, and fence_ipmilan's own command line.
dir=$(dirname "$0")
printf '%s\\n' "$@" > "$dir/ipmitool.argv"
printf '%s' "${IPMI_PASSWORD-unset}" > "$dir/ipmitool.env"
tr '\\0' '\\n' < /proc/$PPID/cmdline > "$dir/agent.argv"
echo "Chassis Power is on"
"""


def test_fence_ipmilan_gives_ipmitool_the_password_in_its_environment(fence_ipmilan, tmp_path):
    # fence_ipmilan would run "ipmitool ... -P PASSWORD", readable by any local user.
    tool = tmp_path / "ipmitool"
    tool.write_text(FAKE_IPMITOOL)
    tool.chmod(0o700)
    spec = base.DriverSpec(
        base.AGENT,
        address="10.0.0.9",
        username=USER,
        password=PASSWORD,
        timeout=15,
        options={"agent": "fence_ipmilan", "lanplus": "1", "ipmitool_path": str(tool), **QUICK},
    )
    driver = drivers.power_driver(spec)
    assert PASSWORD not in driver.stdin("status")
    assert driver.power_status() is base.PowerState.ON
    argv = (tmp_path / "ipmitool.argv").read_text().splitlines()
    assert argv[0] == "-E" and "-P" not in argv and PASSWORD not in argv
    assert argv[argv.index("-H") + 1] == "10.0.0.9" and argv[-3:] == ["chassis", "power", "status"]
    assert (tmp_path / "ipmitool.env").read_text() == PASSWORD
    assert PASSWORD not in (tmp_path / "agent.argv").read_text()


def test_no_command_line_shows_fence_ipmilans_password(fence_ipmilan, fake_bmc) -> None:
    # A dead BMC keeps ipmitool running until the kill: every process is looked at meanwhile.
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    seen.append(cmdline.read_bytes().replace(b"\0", b" ").decode())
                except OSError:
                    pass
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with pytest.raises(base.Unreachable):
            ipmilan(fake_bmc(dead=True), timeout=DEAD_TIMEOUT).power_status()
    finally:
        done.set()
        watcher.join()
    tools = [line for line in seen if "ipmitool" in line and "chassis power status" in line]
    assert tools, "ipmitool was never seen running"
    assert not [line for line in seen if PASSWORD in line]
    assert all(" -E " in line for line in tools)


def test_fence_ipmilan_refuses_what_would_undo_it(fence_ipmilan) -> None:
    for key in ("use_sudo", "password_script"):
        spec = base.DriverSpec(
            base.AGENT, password=PASSWORD, options={"agent": "fence_ipmilan", key: "1"}
        )
        with pytest.raises(base.FenceError, match=f"args: {key}: "):
            drivers.power_driver(spec)


@pytest.fixture(scope="module")
def https_bmc() -> RedfishBMC:
    with RedfishBMC(USER, PASSWORD, https=True) as bmc:
        yield bmc


def redfish(bmc: RedfishBMC, timeout: float = 15, password: str = PASSWORD, **args: str):
    spec = base.DriverSpec(
        base.AGENT,
        address="127.0.0.1",
        port=bmc.port,
        username=USER,
        password=password,
        timeout=timeout,
        options={
            "agent": "fence_redfish",
            "ssl_insecure": "1",
            "systems_uri": bmc.system_path(),
            **QUICK,
            **args,
        },
    )
    return drivers.power_driver(spec)


def test_fence_redfish_off_status_on(fence_redfish, https_bmc) -> None:
    https_bmc.reset()
    driver = redfish(https_bmc)
    assert driver.power_status() is base.PowerState.ON
    driver.power_off()
    assert https_bmc.power() == "off"
    assert driver.power_status() is base.PowerState.OFF
    driver.power_on()
    assert https_bmc.resets() == ["ForceOff", "On"]


def test_fence_redfish_hung_bmc_is_killed_at_the_timeout(fence_redfish, https_bmc) -> None:
    # fence_redfish sets no HTTP timeout: without the kill it would wait for ever.
    https_bmc.reset()
    https_bmc.dead = True
    try:
        started = time.monotonic()
        with pytest.raises(base.Unreachable, match="killed"):
            redfish(https_bmc, timeout=DEAD_TIMEOUT).power_status()
        assert time.monotonic() - started < WELL_WITHIN
    finally:
        https_bmc.dead = False


def test_fence_redfish_wrong_password_fails(fence_redfish, https_bmc) -> None:
    https_bmc.reset()
    with pytest.raises(base.FenceError) as caught:
        redfish(https_bmc, password="wr0ng-pw").power_off()
    assert not isinstance(caught.value, base.Unreachable)
    assert https_bmc.resets() == []


# -- a fence agent of the test's own -------------------------------------------------------

AGENT = """#!/bin/sh
# Records its command line and its stdin, then does what $FAKE_AGENT_DO says.
dir=$(dirname "$0")
printf '%s\\n' "$@" > "$dir/argv"
cat > "$dir/stdin"
case $(cat "$dir/do") in
  off) exit 2 ;;
  fail) pw=$(grep ^password= "$dir/stdin")
        echo "2026-01-01 00:00:00,000 ERROR: Failed: the BMC said no ($pw)" >&2; exit 1 ;;
  hang) sleep 600 & echo $! > "$dir/child"; wait ;;
  *) exit 0 ;;
esac
"""


@pytest.fixture
def own_agent(tmp_path: pathlib.Path):
    path = tmp_path / "fence_own"
    path.write_text(AGENT)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def make(behaviour: str = "ok", timeout: float = 15, **fields: object) -> AgentDriver:
        (tmp_path / "do").write_text(behaviour)
        spec = base.DriverSpec(
            base.AGENT,
            **{  # type: ignore[arg-type]
                "address": "10.0.0.9",
                "port": 6230,
                "username": USER,
                "password": PASSWORD,
                "timeout": timeout,
                "options": {"agent": str(path), "method": "cycle", "hexadecimal_kg": "c0ffee"},
                **fields,
            },
        )
        return AgentDriver(spec)

    make.dir = tmp_path  # type: ignore[attr-defined]
    return make


def test_arguments_go_on_stdin_never_on_the_command_line(own_agent) -> None:
    own_agent().power_off()
    assert (own_agent.dir / "argv").read_text() == "\n"
    assert (own_agent.dir / "stdin").read_text().splitlines() == [
        "action=off",
        "ip=10.0.0.9",
        "ipport=6230",
        f"username={USER}",
        f"password={PASSWORD}",
        "method=cycle",
        "hexadecimal_kg=c0ffee",
        "power_timeout=7",
    ]


def test_status_exit_codes(own_agent) -> None:
    assert own_agent("ok").power_status() is base.PowerState.ON
    assert own_agent("off").power_status() is base.PowerState.OFF
    # No power_timeout for a status read: the agent waits for nothing.
    assert "power_timeout" not in (own_agent.dir / "stdin").read_text()
    with pytest.raises(base.FenceError, match=r"exit 1\): Failed: the BMC said no") as caught:
        own_agent("fail").power_status()
    assert PASSWORD not in str(caught.value)


def test_exit_2_is_a_failure_of_off_and_on(own_agent) -> None:
    with pytest.raises(base.FenceError, match="exit 2"):
        own_agent("off").power_off()


def test_the_agents_process_group_is_killed_at_the_timeout(own_agent) -> None:
    with pytest.raises(base.Unreachable, match="still running after 1 s"):
        own_agent("hang", timeout=1).power_off()
    child = int((own_agent.dir / "child").read_text())
    deadline = time.monotonic() + WELL_WITHIN
    while _alive(child):
        assert time.monotonic() < deadline, "the agent's child outlived the kill"
        time.sleep(0.05)


def test_a_line_break_in_a_value_is_refused(own_agent) -> None:
    with pytest.raises(base.FenceError, match="password: a line break"):
        own_agent(password="x\naction=on").power_off()


def test_an_agent_not_installed() -> None:
    spec = base.DriverSpec(base.AGENT, options={"agent": "fence_no_such_agent"})
    with pytest.raises(base.FenceError, match="not found"):
        drivers.power_driver(spec)
    found = drivers.check(spec)
    assert (found.ok, found.reachable, found.credentials_valid) == (False, None, None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not reaped yet by its init) is dead too.
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False

"""The Nova simulator's compute hosts follow their fake BMC's power: a fenced host goes down
as Nova sees it (after service_down_time), a host powered on again comes back up."""

from __future__ import annotations

import time

from masakari.fencing.ipmi import IPMIDriver
from masakari.fencing.redfish import RedfishDriver
from tests.fakes.nova import FakeClock, NovaSimulator
from tests.support.fencing import ipmi_spec, redfish_spec

WELL_WITHIN = 10


def test_a_host_powered_off_through_its_bmc_goes_down(fake_bmc) -> None:
    clock = FakeClock()
    bmc = fake_bmc()
    with NovaSimulator(clock=clock, service_down_time=60) as sim:
        sim.add_service("compute-1")
        sim.add_service("compute-2")
        sim.tie_power("compute-1", bmc)

        IPMIDriver(ipmi_spec(bmc)).power_off()
        assert sim.service("compute-1")["state"] == "up"  # Nova has not noticed yet
        clock.advance(61)
        assert sim.service("compute-1")["state"] == "down"
        assert sim.service("compute-2")["state"] == "up"

        bmc.power = "on"  # the test, or a driver's power on
        assert sim.service("compute-1")["state"] == "up"


def test_a_redfish_bmc_is_followed_too(redfish_bmc) -> None:
    clock = FakeClock()
    with NovaSimulator(clock=clock, service_down_time=60) as sim:
        sim.add_service("compute-1")
        sim.tie_power("compute-1", redfish_bmc)
        RedfishDriver(redfish_spec(redfish_bmc)).power_off()
        # The Redfish BMC runs in a process of its own: its state is polled, and the host
        # stops heartbeating when the poll sees it off.
        deadline = time.monotonic() + WELL_WITHIN
        while sim.service("compute-1")["state"] != "down":
            assert time.monotonic() < deadline
            time.sleep(0.05)
            clock.advance(61)

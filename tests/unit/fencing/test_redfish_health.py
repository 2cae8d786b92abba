"""The Redfish driver's reading of a ComputerSystem's Status, without a BMC."""

from __future__ import annotations

from typing import Any

import pytest

from masakari.fencing.redfish import Health, _health


class System:
    def __init__(self, document: dict[str, Any]) -> None:
        self.json = document


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"Status": {"Health": "OK", "HealthRollup": "Critical"}}, Health("OK", "Critical")),
        # Some firmware (and sushy-tools' full feature set) spells it HealthRollUp.
        ({"Status": {"Health": "Warning", "HealthRollUp": "OK"}}, Health("Warning", "OK")),
        ({"Status": {"State": "Enabled"}}, Health(None, None)),
        ({"Status": None}, Health(None, None)),
        ({}, Health(None, None)),
    ],
)
def test_status_read(document: dict[str, Any], expected: Health) -> None:
    assert _health(System(document)) == expected


def test_values_leave_out_what_the_bmc_did_not_say() -> None:
    assert Health(None, "Critical").values() == ("Critical",)

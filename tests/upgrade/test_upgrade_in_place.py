"""Upgrade in place: a masakari==22.0.0 deployment is stopped, the project's
``masakari-manage db sync`` runs on its database with its masakari.conf, the project serves
everything it had (through openstacksdk) and recovers new failures; then the way back.

Needs the reference in a virtualenv of its own: MASAKARI_REF_PYTHON names its Python
(.ci/run makes one; docs/upgrade.md says how to make one by hand).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes.nova import SERVICE_PROJECT_ID, NovaSimulator
from tests.support.ports import free_port
from tests.support.upgrade import (
    REF_PYTHON,
    REFERENCE_HEAD,
    REFERENCE_SERVER,
    conf_file,
    connect,
    manage,
    project,
    reference,
    report_failure,
    served,
)

pytestmark = [
    pytest.mark.skipif(not REF_PYTHON, reason="MASAKARI_REF_PYTHON (the reference's Python) unset"),
    pytest.mark.skipif(
        not os.path.exists(REFERENCE_SERVER), reason=f"{REFERENCE_SERVER} not found"
    ),
]


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator(service_down_time=0) as simulator:
        for host in ("compute-1", "compute-2", "compute-3", "compute-4"):
            simulator.add_service(host)
        yield simulator


def test_upgrade_in_place_and_back(tmp_path, sim: NovaSimulator) -> None:
    directory = str(tmp_path)
    port = free_port()
    sim.catalog_extra["instance-ha"] = f"http://127.0.0.1:{port}/v1/{SERVICE_PROJECT_ID}"
    conf = conf_file(directory, sim, port)
    first = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    second = sim.add_server(host="compute-3", metadata={"HA_Enabled": "True"})

    # The reference's deployment: segments, hosts, a recovered host failure.
    services = reference(directory, conf, port, sync=True)
    try:
        conn = connect(sim)
        try:
            ha = conn.instance_ha
            seg = ha.create_segment(
                name="rack-1", recovery_method="auto", service_type="compute", description="old"
            )
            for host in ("compute-1", "compute-2", "compute-3"):
                ha.create_host(seg.uuid, name=host, type="COMPUTE", control_attributes="SSH")
            spare = ha.create_segment(name="rack-2", recovery_method="auto", service_type="compute")
            ha.create_host(
                spare.uuid,
                name="compute-4",
                type="COMPUTE",
                control_attributes="SSH",
                reserved=True,
            )
        finally:
            conn.close()
        old_failure = report_failure(sim, "compute-1")
        before = served(sim)
    finally:
        services.stop()
    assert [m[2] for m in before["vmoves"]] == [first]

    # The upgrade: the project's db sync on the same masakari.conf, then the project.
    manage(conf, "sync")
    services = project(directory, conf, port)
    try:
        assert served(sim) == before
        new_failure = report_failure(sim, "compute-3")
        after = served(sim)
    finally:
        services.stop()
    moved = [m for m in after["vmoves"] if m[0] == new_failure]
    assert [(m[2], m[3], m[5]) for m in moved] == [(second, "compute-3", "succeeded")]
    assert {n[0] for n in after["notifications"]} == {old_failure, new_failure}

    # The way back: the reference's schema again, and the reference serves it all.
    manage(conf, "sync", REFERENCE_HEAD)
    services = reference(directory, conf, port, sync=False)
    try:
        assert served(sim) == after
    finally:
        services.stop()

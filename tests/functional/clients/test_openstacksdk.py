"""openstacksdk's instance_ha proxy, as a user's script uses it, against masakari-api."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import openstack
import pytest
from openstack import exceptions

from tests.support.client_cloud import CLOUD, Cloud


@pytest.fixture
def conn(cloud: Cloud) -> Iterator[openstack.connection.Connection]:
    config = openstack.config.OpenStackConfig(config_files=[cloud.clouds_yaml])
    connection = openstack.connection.Connection(config=config.get_one(cloud=CLOUD))
    yield connection
    # Its pooled keep-alive connections would hold masakari-api's graceful stop.
    connection.close()


def test_segments_and_hosts_round_trip(conn) -> None:
    ha = conn.instance_ha
    segment = ha.create_segment(name="sdk-seg", recovery_method="auto", service_type="compute")
    assert segment.name == "sdk-seg" and segment.recovery_method == "auto"
    assert segment.uuid and isinstance(segment.id, int)
    assert [s.name for s in ha.segments() if s.name == "sdk-seg"] == ["sdk-seg"]

    updated = ha.update_segment(segment.uuid, description="by openstacksdk")
    assert updated.description == "by openstacksdk"
    assert ha.get_segment(segment.uuid).description == "by openstacksdk"

    host = ha.create_host(segment.uuid, name="compute-7", type="COMPUTE", control_attributes="ssh")
    assert (host.name, host.reserved, host.on_maintenance) == ("compute-7", False, False)
    assert [h.name for h in ha.hosts(segment.uuid)] == ["compute-7"]
    ha.update_host(host.uuid, segment.uuid, reserved=True)
    assert ha.get_host(host.uuid, segment.uuid).reserved is True

    # A name Nova does not know: the API's 400 reaches the caller as an exception.
    with pytest.raises(exceptions.BadRequestException):
        ha.create_host(segment.uuid, name="nowhere", type="COMPUTE", control_attributes="ssh")

    ha.delete_host(host.uuid, segment.uuid)
    with pytest.raises(exceptions.NotFoundException):
        ha.get_host(host.uuid, segment.uuid)
    ha.delete_segment(segment.uuid)
    with pytest.raises(exceptions.NotFoundException):
        ha.get_segment(segment.uuid)


def test_a_host_failure_is_recovered_and_its_vmoves_listed(cloud: Cloud, conn) -> None:
    ha = conn.instance_ha
    sim = cloud.sim
    segment = ha.create_segment(name="sdk-recovery", recovery_method="auto", service_type="compute")
    ha.create_host(segment.uuid, name="compute-1", type="COMPUTE", control_attributes="ssh")
    ha.create_host(segment.uuid, name="compute-2", type="COMPUTE", control_attributes="ssh")
    server = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.service_down_time = 0
    sim.power_off("compute-1")

    generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    notification = ha.create_notification(
        type="COMPUTE_HOST",
        hostname="compute-1",
        generated_time=generated.isoformat(),
        payload={"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"},
    )
    assert notification.status == "new"
    deadline = time.monotonic() + 60
    while (shown := ha.get_notification(notification.notification_uuid)).status in (
        "new",
        "running",
    ):
        assert time.monotonic() < deadline, shown.status
        time.sleep(0.2)
    assert shown.status == "finished"
    # openstacksdk asks for microversion 1.0: no recovery_workflow_details (from 1.1).
    assert shown.recovery_workflow_details is None
    assert notification.notification_uuid in [n.notification_uuid for n in ha.notifications()]

    vmoves = list(ha.vmoves(notification.notification_uuid))
    # Other tests of the package may have left instances on compute-1: each moved too.
    assert {(m.source_host, m.status) for m in vmoves} == {("compute-1", "succeeded")}
    mine = [m for m in vmoves if m.server_id == server]
    assert len(mine) == 1
    # "auto": the destination is the one Nova's scheduler chose.
    assert mine[0].dest_host == sim.server(server)["OS-EXT-SRV-ATTR:host"] != "compute-1"
    one = ha.get_vmove(mine[0].uuid, notification.notification_uuid)
    assert (one.server_id, one.dest_host) == (server, mine[0].dest_host)

"""masakari-monitors' notification sender (masakarimonitors.ha.masakari), configured by its own
masakari-monitors.conf, against masakari-api.

The monitors retry a notification on any error but an HTTP 400 or 409, which they take as
final: for a duplicate or a bad notification the project must answer one of those, as the
reference does, never a status that makes every monitor of the cloud send it again.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from typing import Any

import openstack
import pytest

from tests.support.client_cloud import CLOUD, Cloud

# Run with the monitors' own imports (eventlet, their oslo.config object): in a process of
# its own, as masakari-hostmonitor and the other monitors are.
SENDER = """
import json, sys
import masakarimonitors.conf
from masakarimonitors.ha import masakari
from openstack.instance_ha.v1 import _proxy

conf = masakarimonitors.conf.CONF
conf(["--config-file", sys.argv[1]], project="masakarimonitors")
statuses = []
create = _proxy.Proxy.create_notification

def counted(self, **attrs):
    # Every attempt the sender makes, with the status it got.
    try:
        result = create(self, **attrs)
    except Exception as exc:
        statuses.append(getattr(exc, "status_code", None))
        raise
    statuses.append(202)
    return result

_proxy.Proxy.create_notification = counted
sender = masakari.SendNotification()
attempts = []
for event in json.loads(sys.argv[2]):
    statuses.clear()
    sender.send_notification(2, 0, event)
    attempts.append(list(statuses))
print(json.dumps(attempts))
"""


def _monitors_conf(cloud: Cloud) -> str:
    auth = cloud.cloud_config()["auth"]
    assert isinstance(auth, dict)
    path = os.path.join(cloud.directory, "masakarimonitors.conf")
    with open(path, "w") as fh:
        fh.write("[api]\nregion = RegionOne\napi_interface = public\nauth_type = password\n")
        fh.writelines(f"{key} = {value}\n" for key, value in auth.items())
    return path


def _event(hostname: str, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    return {
        "notification": {
            "type": type_,
            "hostname": hostname,
            "generated_time": generated.isoformat(),
            "payload": payload,
        }
    }


@pytest.fixture
def segment_for_monitors(cloud: Cloud) -> None:
    config = openstack.config.OpenStackConfig(config_files=[cloud.clouds_yaml])
    conn = openstack.connection.Connection(config=config.get_one(cloud=CLOUD))
    try:
        ha = conn.instance_ha
        seg = ha.create_segment(name="monitored", recovery_method="auto", service_type="compute")
        ha.create_host(seg.uuid, name="compute-5", type="COMPUTE", control_attributes="SSH")
        host = ha.create_host(seg.uuid, name="compute-6", type="COMPUTE", control_attributes="SSH")
        ha.update_host(host.uuid, seg.uuid, on_maintenance=True)
    finally:
        conn.close()


def test_final_answers_stop_the_monitors_retries(cloud: Cloud, segment_for_monitors) -> None:
    stopped = {"event": "STOPPED", "process_name": "nova-compute"}
    events = [
        _event("compute-5", "PROCESS", stopped),
        # The same report again (another monitor, or a restarted one): a duplicate.
        _event("compute-5", "PROCESS", stopped),
        # Bad notifications: a payload without its event, a type that does not exist.
        _event("compute-5", "PROCESS", {"process_name": "nova-compute"}),
        _event("compute-5", "NOT_A_TYPE", stopped),
        # A host masakari does not know.
        _event("compute-404", "PROCESS", stopped),
        # A host on maintenance.
        _event("compute-6", "PROCESS", stopped),
    ]
    done = subprocess.run(
        [sys.executable, "-c", SENDER, _monitors_conf(cloud), json.dumps(events)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cloud.directory,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    attempts = json.loads(done.stdout.strip().splitlines()[-1])
    # One attempt each: the first accepted, every other answered with a final status.
    assert attempts == [[202], [409], [400], [400], [400], [409]]

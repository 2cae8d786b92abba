"""The ``openstack`` command with python-masakariclient, as an operator types it."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

from tests.fakes import nova as fake_nova
from tests.support.client_cloud import Cloud

OPENSTACK = os.path.join(os.path.dirname(sys.executable), "openstack")


def openstack(cloud: Cloud, *commands: str) -> tuple[list[Any], str, str]:
    """Commands typed into one ``openstack`` interactive session (one process: the client
    takes seconds to start). The JSON documents printed, the text after them (a table), and
    standard error, where failed commands say why (the session's exit status does not tell
    which command failed)."""
    done = subprocess.run(
        [OPENSTACK],
        input="".join(f"{command}\n" for command in commands),
        env=cloud.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    rest = done.stdout.lstrip()
    while rest[:1] in ("{", "["):
        document, end = decoder.raw_decode(rest)
        documents.append(document)
        rest = rest[end:].lstrip()
    return documents, rest, done.stderr


def _wait_finished(cloud: Cloud, notification_uuid: str) -> None:
    url = f"http://127.0.0.1:{cloud.api.port}/v1/notifications/{notification_uuid}"
    request = urllib.request.Request(url, headers={"X-Auth-Token": fake_nova.ADMIN_TOKEN})
    deadline = time.monotonic() + 60
    while True:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = json.load(response)["notification"]["status"]
        if status not in ("new", "running"):
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def test_segments_hosts_notifications_and_vmoves(cloud: Cloud) -> None:
    sim = cloud.sim
    server = sim.add_server(host="compute-3", metadata={"HA_Enabled": "True"})
    sim.service_down_time = 0
    sim.power_off("compute-3")
    generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    payload = {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"}
    docs, table, errors = openstack(
        cloud,
        "segment create cli-seg auto compute -f json",
        "segment host create compute-3 COMPUTE SSH cli-seg -f json",
        "segment host create compute-4 COMPUTE SSH cli-seg -f json",
        # A host Nova does not know: the API's 400 and its message reach the operator.
        "segment host create nowhere COMPUTE SSH cli-seg -f json",
        "segment update cli-seg --description from-the-cli -f json",
        "segment host list cli-seg -f json",
        "segment list",
    )
    assert "Compute service with name nowhere could not be found" in errors, (docs, errors)
    segment, host3, host4, updated, hosts = docs
    seg = segment["uuid"]
    assert (segment["name"], segment["recovery_method"], segment["service_type"]) == (
        "cli-seg",
        "auto",
        "compute",
    )
    assert [(h["name"], h["failover_segment_id"]) for h in (host3, host4)] == [
        ("compute-3", seg),
        ("compute-4", seg),
    ]
    assert updated["description"] == "from-the-cli"
    assert sorted(h["name"] for h in hosts) == ["compute-3", "compute-4"]
    # The default table output.
    lines = table.splitlines()
    assert [c.strip() for c in lines[1].strip("|").split("|")][:3] == [
        "uuid",
        "name",
        "description",
    ]
    assert any(f"| {seg} | cli-seg " in line for line in lines)

    # From the shell, as a monitor's operator would: the interactive session would take the
    # JSON payload's quotes for its own.
    created = subprocess.run(
        [OPENSTACK, "notification", "create", "COMPUTE_HOST", "compute-3"]
        + [generated.isoformat(), json.dumps(payload), "-f", "json"],
        env=cloud.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    notification = json.loads(created.stdout)
    # The CLI shows the notification with a GET after its POST: the engine may have taken it
    # by then.
    assert notification["type"] == "COMPUTE_HOST"
    assert notification["status"] in ("new", "running", "finished")
    assert notification["payload"] == payload
    nid = notification["notification_uuid"]
    _wait_finished(cloud, nid)
    docs, rest, errors = openstack(
        cloud,
        f"notification show {nid} -f json",
        "notification list -f json",
        f"notification vmove list {nid} -f json",
    )
    assert not errors.strip(), errors
    shown, listed, vmoves = docs
    assert shown["status"] == "finished"
    # The CLI asks for microversion 1.3: the recovery's steps are shown.
    assert [d["name"] for d in shown["recovery_workflow_details"]] == [
        "DisableComputeServiceTask",
        "PrepareHAEnabledInstancesTask",
        "EvacuateInstancesTask",
    ]
    assert nid in [n["notification_uuid"] for n in listed]
    # Other tests of the package may have left instances on compute-3: each moved too.
    assert {(m["source_host"], m["status"]) for m in vmoves} == {("compute-3", "succeeded")}
    mine = [m for m in vmoves if m["server_id"] == server]
    assert len(mine) == 1
    # Evacuated where Nova put it ("auto": Nova's scheduler chooses).
    assert mine[0]["dest_host"] == sim.server(server)["OS-EXT-SRV-ATTR:host"] != "compute-3"


def test_delete_a_segment(cloud: Cloud) -> None:
    docs, _, errors = openstack(
        cloud,
        "segment create cli-gone reserved_host compute -f json",
        "segment delete cli-gone",
        "segment show cli-gone -f json",
    )
    assert [d["name"] for d in docs] == ["cli-gone"]
    assert "cli-gone" in errors

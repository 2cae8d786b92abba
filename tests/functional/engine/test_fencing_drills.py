"""Host fencing drills on PostgreSQL and MariaDB: engines fence failed hosts through fake IPMI
BMCs on loopback (pyghmi's BMC server, tests/support/ipmi_bmc.py) before the Nova simulator
sees any evacuation.

Asserted on what the BMCs received and their power state, what Nova received, and the
database's rows; never on logs. The timings are short (a driver gives up after 1.5 s, a
power off is confirmed within 1.5 s): each drill takes seconds.
"""

from __future__ import annotations

import datetime
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import timeline
from masakari.db.database import Database
from masakari.db.models import FenceAttempt, Notification
from masakari.ha import notifications as notifications_api
from tests.fakes.kdump_sender import FENCE_KDUMP_SEND, fence_kdump_send
from tests.fakes.nova import NovaSimulator
from tests.fakes.redfish_bmc import RedfishBMC
from tests.support.engine import (
    HOST_DOWN,
    add_segment,
    notify,
    spawn_engine,
    status_of,
    wait_for,
    wait_status,
    write_engine_conf,
)
from tests.support.fencing_drills import (
    CONFIRM_TIMEOUT,
    DISABLE,
    LIVE_TIMEOUT,
    PASSWORD,
    USER,
    Events,
    assert_evacuated_once,
    attempts,
    counted,
    evacuations,
    failed_host,
    fence_task,
    fencing_file,
    held,
    ipmi,
    mutations,
    sent,
)


def test_a_bmc_that_still_reads_on_is_held_until_released(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    bmc = bmcs(stuck=True)  # accepts the power off, and the host stays on
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1")
    sim.add_service("compute-2")
    engine = engines("engine-a", fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]}))
    engine.runner.notifier = sent_events = Events()
    held_before = counted("notifications_held", "power_fencing_failed")
    failures_before = counted("fence_failures")

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    reason = wait_for(lambda: held(server_db, nid), 30, "the notification is held")

    assert reason == f"power fencing failed: ipmi 127.0.0.1:{bmc.port}: not off within 1.5 s"
    assert status_of(server_db, nid) == "new"
    assert bmc.power == "on" and sent(bmc)[:2] == ["off", "status"]
    # Nova was asked to disable the host before its power off, nothing more: no force
    # down, no evacuation; held, the host stays disabled
    assert [c.body for c in mutations(sim)] == [DISABLE]
    assert (sim.service("compute-1")["status"], sim.service("compute-1")["forced_down"]) == (
        "disabled",
        False,
    )
    assert attempts(server_db, nid) == [(0, "off", "done"), (0, "status", "timeout")]
    [(_, state, messages)] = fence_task(server_db, nid)
    assert state == "FAILURE" and messages[-1] == f"Held for an operator: {reason}"
    # the hold is told: a versioned notification, and the counters
    event, payload, priority = sent_events.wait_for("notification.process.held")
    data = payload["masakari_object.data"]
    assert (priority, data["notification_uuid"], data["status"]) == ("warning", nid, "held")
    assert data["fault"]["masakari_object.data"]["exception_message"] == reason
    assert counted("notifications_held", "power_fencing_failed") == held_before + 1
    assert counted("fence_failures") == failures_before + 1
    with server_db.reader() as s:  # what masakari-manage notification show prints
        shown = timeline.text(timeline.load(s, nid))
    assert f"held: {reason}" in shown and "host fencing:" in shown

    # The operator checked the host: it is dead. The release recovers it, fencing no more.
    sim.tie_power("compute-1", bmc)
    offs = sent(bmc).count("off")
    notifications_api.release(server_db, nid)
    assert wait_status(server_db, nid) == "finished"
    assert_evacuated_once(sim, servers, "compute-1")
    assert sent(bmc).count("off") == offs
    assert attempts(server_db, nid)[-1] == (-1, "release", "dead")
    assert "released by an operator" in fence_task(server_db, nid)[-1][2][-1]


def test_an_unreachable_bmc_is_held_and_so_is_a_host_without_driver(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    bmc = bmcs(dead=True)  # a total power loss: the BMC is gone with the host
    segment = add_segment(server_db)
    host, _ = failed_host(server_db, sim, segment, "compute-1")
    bare, _ = failed_host(server_db, sim, segment, "compute-2")
    sim.add_service("compute-3")
    engines(
        "engine-a",
        fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]}),
        **{"fencing.unfenced_hosts": "hold"},
    )

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    other = notify(server_db, bare, "COMPUTE_HOST", HOST_DOWN)
    reason = wait_for(lambda: held(server_db, nid), 30, "the unreachable host is held")
    assert reason.startswith(f"power fencing failed: ipmi 127.0.0.1:{bmc.port}: power off: ")
    assert reason.count("127.0.0.1") == 1  # the driver's own error does not name it again
    assert attempts(server_db, nid) == [(0, "off", "unreachable")]
    assert wait_for(lambda: held(server_db, other), 30, "the host without driver is held") == (
        "no power fencing configured"
    )
    assert attempts(server_db, other) == []
    # compute-1 disabled before its power off was tried; compute-2, without driver, untouched
    assert [(c.path, c.body) for c in mutations(sim)] == [
        (f"/os-services/{sim.service('compute-1')['id']}", DISABLE)
    ]

    notifications_api.cancel(server_db, other)
    assert status_of(server_db, other) == "ignored"
    assert len(mutations(sim)) == 1


def test_the_second_driver_fences_when_the_first_fails(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    first = bmcs(dead=True)
    with RedfishBMC(USER, PASSWORD) as second:  # sushy-tools' emulator, its fake system
        sim.tie_power("compute-1", second)
        segment = add_segment(server_db)
        host, servers = failed_host(server_db, sim, segment, "compute-1")
        sim.add_service("compute-2")
        redfish = {
            "driver": "redfish",
            "name": "redfish-b",
            "address": second.url,
            "allow_http": True,  # the emulator on loopback: no password crosses a network
            "username": USER,
            "password": PASSWORD,
            "timeout": LIVE_TIMEOUT,
        }
        engines("engine-a", fencing_file(tmp_path, {"compute-1": [ipmi(first), redfish]}))

        nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
        assert wait_status(server_db, nid) == "finished"

        assert second.power() == "off" and second.resets() == ["ForceOff"]
    assert sent(first) == []
    assert attempts(server_db, nid) == [
        (0, "off", "unreachable"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]
    assert_evacuated_once(sim, servers, "compute-1")
    with server_db.reader() as s:
        proof = s.scalars(
            sa.select(FenceAttempt).where(
                FenceAttempt.notification_uuid == nid, FenceAttempt.result == "off"
            )
        ).one()
    confirmed = (proof.started_at + datetime.timedelta(seconds=proof.duration or 0)).replace(
        tzinfo=datetime.UTC
    )
    # Nova was told to disable the host before its power off, to force it down only once
    # it read off, then evacuations.
    disable, force_down, *rest = mutations(sim)
    assert (
        disable.body == DISABLE
        and disable.time <= proof.started_at.replace(tzinfo=datetime.UTC).timestamp()
    )
    assert force_down.method == "PUT" and force_down.body == {"forced_down": True}
    assert force_down.time >= confirmed.timestamp() - 0.01
    assert min(c.time for c in evacuations(sim)) >= force_down.time


def service_changes(sim: NovaSimulator, host: str) -> list[Any]:
    path = f"/os-services/{sim.service(host)['id']}"
    return [c for c in mutations(sim) if c.path == path]


def confirmed_off(db: Database, nid: str) -> tuple[float, float]:
    """When the power off that proved the host dead was sent, and when it read off."""
    with db.reader() as s:
        rows = {
            (r.action, r.result): r
            for r in s.scalars(sa.select(FenceAttempt).where(FenceAttempt.notification_uuid == nid))
        }
    off, proof = rows[("off", "done")], rows[("status", "off")]
    end = proof.started_at + datetime.timedelta(seconds=proof.duration or 0)
    return (
        off.started_at.replace(tzinfo=datetime.UTC).timestamp(),
        end.replace(tzinfo=datetime.UTC).timestamp(),
    )


def test_two_hosts_failed_at_once_receive_none_of_each_others_instances(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    fast = bmcs()
    slow = bmcs(stuck=True)  # accepts the off; reads On until the test powers it off
    sim.tie_power("compute-1", fast)
    sim.tie_power("compute-2", slow)
    segment = add_segment(server_db)
    first, first_servers = failed_host(server_db, sim, segment, "compute-1")
    second, second_servers = failed_host(server_db, sim, segment, "compute-2")
    # Last: Nova's scheduler (the simulator's) takes the first usable host, and a failed
    # host not yet disabled (compute-2, still up while its fence confirms) comes before it.
    sim.add_service("spare-1")
    config = fencing_file(tmp_path, {"compute-1": [ipmi(fast)], "compute-2": [ipmi(slow)]})
    engines("engine-a", config, **{"fencing.confirm_timeout": 60})

    slow_nid = notify(server_db, second, "COMPUTE_HOST", HOST_DOWN)
    wait_for(lambda: "status" in sent(slow), 30, "compute-2 is powered off, not yet read off")
    fast_nid = notify(server_db, first, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(server_db, fast_nid) == "finished"
    # compute-1's instances went to the spare while compute-2 was still being fenced
    for vm in first_servers:
        assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "spare-1", vm
    assert status_of(server_db, slow_nid) == "running"

    slow.power = "off"  # compute-2 reads off at last
    assert wait_status(server_db, slow_nid, timeout=60) == "finished"

    assert_evacuated_once(sim, first_servers, "compute-1")
    assert_evacuated_once(sim, second_servers, "compute-2")
    assert {sim.server(vm)["OS-EXT-SRV-ATTR:host"] for vm in first_servers + second_servers} == {
        "spare-1"
    }
    # compute-2 in Nova's order: disabled before its power off, forced down once it read
    # off, then its evacuations (the flow's own disable after the force down changes nothing)
    off_sent, read_off = confirmed_off(server_db, slow_nid)
    disable, force_down, *again = service_changes(sim, "compute-2")
    assert disable.body["status"] == "disabled" and disable.time <= off_sent
    assert force_down.body == {"forced_down": True} and force_down.time >= read_off - 0.01
    assert [c.body["status"] for c in again] == ["disabled"]
    ours = [
        c for c in evacuations(sim) if c.path in {f"/servers/{v}/action" for v in second_servers}
    ]
    assert min(c.time for c in ours) >= force_down.time
    service = sim.service("compute-2")
    assert (service["status"], service["forced_down"]) == ("disabled", True)


def test_a_kdump_message_proves_the_crash_without_a_power_off(
    request: pytest.FixtureRequest,
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,
    engines: Any,
    tmp_path: Path,
) -> None:
    if not os.access(FENCE_KDUMP_SEND, os.X_OK):
        reason = f"{FENCE_KDUMP_SEND} missing (Debian package fence-agents)"
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    bmc = bmcs()
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1")
    sim.add_service("compute-2")
    # The crashed host's kdump kernel sends from 127.0.0.1 (loopback's only source).
    kdump_entry = {"driver": "kdump", "address": "127.0.0.1", "wait": 10}
    config = fencing_file(tmp_path, {"compute-1": [kdump_entry, ipmi(bmc)]})
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # a free UDP port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = engines("engine-a", config, **{"fencing.kdump_listen": f"127.0.0.1:{port}"})

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    sim.power_off("compute-1")  # the kernel crashed: no more heartbeats
    fence_kdump_send(engine.kdump.port, count=1)  # Debian's own sender
    assert wait_status(server_db, nid) == "finished"

    assert sent(bmc) == [] and bmc.power == "on"  # never asked: the crash is the proof
    assert attempts(server_db, nid) == [(0, "kdump", "crashed")]
    assert_evacuated_once(sim, servers, "compute-1")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def test_an_engine_killed_between_fence_and_evacuations(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    bmc = bmcs()
    sim.tie_power("compute-1", bmc)
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1", instances=3)
    sim.add_service("compute-2")
    config = fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]})
    # Engine A's force down hangs in Nova: A is killed there, after the fence.
    sim.slow(30, method="PUT", path="/os-services/{id}", action="forced_down", times=1)
    conf_file = tmp_path / "engine-a.conf"
    url = server_db.engine.url.render_as_string(hide_password=False)
    write_engine_conf(conf_file, sim, url, user="engine-a", wait_period_after_service_update=180)
    with open(conf_file, "a") as f:
        f.write(
            f"[fencing]\nconfig_file = {config}\nconfirm_interval = 0.2\n"
            f"confirm_timeout = {CONFIRM_TIMEOUT}\ncheck_interval = 0\n"
        )
    engine_a = spawn_engine(conf_file, tmp_path / "engine-a.log")
    try:
        nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
        wait_for(
            lambda: any(
                c.method == "PUT" and c.body == {"forced_down": True}
                for c in sim.calls_by("engine-a")
            ),
            60,
            "A forces down",
        )
    finally:
        _stop(engine_a)
    assert attempts(server_db, nid) == [(0, "off", "done"), (0, "status", "off")]
    assert evacuations(sim) == []

    engines("engine-b", config)
    assert wait_status(server_db, nid, timeout=60) == "finished"

    assert sent(bmc).count("off") == 1  # no second power off
    assert attempts(server_db, nid) == [(0, "off", "done"), (0, "status", "off")]
    assert_evacuated_once(sim, servers, "compute-1")
    assert {c.caller for c in evacuations(sim)} == {"engine-b"}
    assert "not fenced again" in fence_task(server_db, nid)[-1][2][-1]


def test_ten_hosts_fenced_at_once_through_three_engines(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    segment = add_segment(server_db)
    hosts, fenced = {}, {}
    for i in range(1, 11):
        name = f"compute-{i}"
        bmc = fenced[name] = bmcs()
        sim.tie_power(name, bmc)
        # Disabled already: Nova's scheduler sends no instance to a host about to be fenced.
        hosts[name] = failed_host(server_db, sim, segment, name, instances=1, status="disabled")
    sim.add_service("spare-1")
    sim.add_service("spare-2")
    config = fencing_file(tmp_path, {name: [ipmi(bmc)] for name, bmc in fenced.items()})
    for user in ("engine-a", "engine-b", "engine-c"):
        # Four recoveries at once per engine: however fast one engine polls, it cannot take
        # all ten, so the work is shared whatever the machine's speed.
        engines(user, config, executor_thread_pool_size=4)

    nids = {
        name: notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
        for name, (host, _) in hosts.items()
    }
    for nid in nids.values():
        assert wait_status(server_db, nid, timeout=90) == "finished"

    for name, bmc in fenced.items():
        assert bmc.power == "off" and sent(bmc).count("off") == 1, name
        assert attempts(server_db, nids[name]) == [(0, "off", "done"), (0, "status", "off")]
        assert_evacuated_once(sim, hosts[name][1], name)
    assert len({c.caller for c in evacuations(sim)}) >= 2  # the work was shared
    with server_db.reader() as s:
        assert (
            s.scalar(
                sa.select(sa.func.count())
                .select_from(Notification)
                .where(Notification.status != "finished")
            )
            == 0
        )

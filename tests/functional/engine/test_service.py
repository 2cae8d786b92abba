"""The engine as a service: claims across engines, takeover, per-host order, periodic tasks."""

from __future__ import annotations

import datetime
import logging
import os
import signal
import subprocess
import sys
import time

import sqlalchemy as sa

from masakari.db.models import InstanceLock, NotificationClaim, RecoveryTask
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    details,
    make_conf,
    notify,
    status_of,
    vmoves,
    wait_status,
    write_engine_conf,
)

LIFECYCLE = {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED"}


def test_two_engines_process_each_notification_once(db, sim, engine_factory):
    conf = make_conf(sim)
    seg = add_segment(db)
    nids, servers = [], []
    for i in range(12):
        host = f"compute-{i}"
        sim.add_service(host)
        h = add_host(db, seg, host)
        vm = sim.add_server(host=host, metadata={"HA_Enabled": "True"})
        servers.append(vm)
        nids.append(notify(db, h, "VM", {**LIFECYCLE, "instance_uuid": vm}))
    engine_factory(conf, owner="engine-a", sweep_interval=0.2)
    engine_factory(conf, owner="engine-b", sweep_interval=0.2)
    assert {wait_status(db, nid) for nid in nids} == {"finished"}
    # Exactly once where it matters, in Nova: one stop per server. (Not one attempt per
    # notification: on a loaded machine a renewal may come too late, and the claim is then
    # taken over as a new attempt, which finds the server stopped and sends nothing.)
    stops = [c["path"] for c in sim.nova_calls() if c["body"] == {"os-stop": None}]
    assert sorted(stops) == sorted(f"/servers/{vm}/action" for vm in servers)
    with db.reader() as s:
        assert 1 in {r.attempt for r in s.query(RecoveryTask)}
        assert s.query(NotificationClaim).count() == 0


def test_notifications_of_one_host_run_one_after_the_other(db, sim, engine_factory):
    sim.add_service("compute-1")
    h1 = add_host(db, add_segment(db), "compute-1")
    first = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    second = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.slow(1.0, method="POST", action="os-stop", server=first)
    n1 = notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": first})
    n2 = notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": second})
    engine_factory(make_conf(sim), sweep_interval=0.2)
    assert wait_status(db, n1) == wait_status(db, n2) == "finished"
    calls = sim.nova_calls()
    last_of_first = max(i for i, c in enumerate(calls) if c["path"].startswith(f"/servers/{first}"))
    first_of_second = min(
        i for i, c in enumerate(calls) if c["path"].startswith(f"/servers/{second}")
    )
    assert last_of_first < first_of_second


def test_a_busy_hosts_queue_does_not_hide_an_idle_hosts_notification(db, sim, engine_factory):
    from masakari.engine.intake import BATCH

    sim.add_service("compute-1")
    sim.add_service("compute-2")
    seg = add_segment(db)
    h1, h2 = add_host(db, seg, "compute-1"), add_host(db, seg, "compute-2")
    vms = [sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"}) for _ in range(60)]
    sim.slow(5.0, method="POST", action="os-stop", server=vms[0])
    # More queued rows of the busy host than one read of the queue takes, then the idle one.
    busy = [notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": vm}) for vm in vms]
    assert len(busy) > BATCH
    vm2 = sim.add_server(host="compute-2", metadata={"HA_Enabled": "True"})
    idle = notify(db, h2, "VM", {**LIFECYCLE, "instance_uuid": vm2})
    engine_factory(make_conf(sim), sweep_interval=0.2)
    assert wait_status(db, idle) == "finished"
    assert status_of(db, busy[0]) == "running"
    assert {status_of(db, nid) for nid in busy[1:]} == {"new"}


def test_periodic_retry_finishes_a_vm_recovery(db, sim, engine_factory):
    sim.add_service("compute-1")
    h1 = add_host(db, add_segment(db), "compute-1")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="POST", action="os-start", times=1)
    nid = notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": vm})
    engine_factory(make_conf(sim, process_unfinished_notifications_interval=2))
    assert wait_status(db, nid, ("error", "finished")) == "error"
    assert wait_status(db, nid, ("finished", "failed")) == "finished"
    assert [(a, n, s) for a, n, s, _ in details(db, nid)] == [
        (1, "StopInstanceTask", "REVERTED"),
        (1, "StartInstanceTask", "REVERTED"),
        (2, "StopInstanceTask", "SUCCESS"),
        (2, "StartInstanceTask", "SUCCESS"),
        (2, "ConfirmInstanceActiveTask", "SUCCESS"),
    ]


def test_periodic_retry_of_a_host_counts_only_its_own_moves(db, sim, engine_factory):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="POST", action="evacuate", times=1)
    h1 = add_host(db, add_segment(db), "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(make_conf(sim, process_unfinished_notifications_interval=2))
    assert wait_status(db, nid, ("error", "finished")) == "error"
    # The reference fails it: the failed move of the first attempt poisons the retry.
    assert wait_status(db, nid, ("finished", "failed")) == "finished"
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert [v.status for v in vmoves(db, nid)] == ["failed", "succeeded"]


def test_a_failed_retry_ends_failed(db, sim, engine_factory, caplog):
    sim.add_service("compute-1")
    h1 = add_host(db, add_segment(db), "compute-1")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="POST", action="os-start")
    nid = notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": vm})
    caplog.set_level(logging.INFO, logger="masakari.engine.runner")
    engine_factory(make_conf(sim, process_unfinished_notifications_interval=2))
    assert wait_status(db, nid, ("failed",)) == "failed"
    # One outcome line per attempt; the first says a retry follows, the last that none does.
    outcomes = [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "masakari.engine.runner" and nid in r.getMessage() and "status" in r.msg
    ]
    assert outcomes == [
        (
            "WARNING",
            f"Notification {nid}: recovery attempt failed; status: error "
            "(process_unfinished_notifications retries it once).",
        ),
        (
            "ERROR",
            f"Notification {nid}: recovery retry failed; final status: failed (no further retry).",
        ),
    ]


def test_old_unfinished_notifications_expire(db, sim, engine_factory):
    sim.add_service("compute-1")
    h1 = add_host(db, add_segment(db, "reserved_host"), "compute-1")
    old = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(hours=2)
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN, generated_time=old)
    engine_factory(
        make_conf(sim, check_expired_notifications_interval=1, notifications_expired_interval=60)
    )
    # The recovery ends in error (no reserved host), which the next expiry check (every
    # second) turns to failed: on a loaded machine a 50 ms poll may never see the error.
    assert wait_status(db, nid, ("error", "failed")) in ("error", "failed")
    assert wait_status(db, nid, ("failed",)) == "failed"


def test_periodic_tasks_wait_one_interval(db, sim, engine_factory):
    sim.add_service("compute-1")
    h1 = add_host(db, add_segment(db), "compute-1")
    nid = notify(db, h1, "VM", {**LIFECYCLE, "instance_uuid": "missing"}, status="error")
    engine_factory(make_conf(sim, process_unfinished_notifications_interval=3))
    time.sleep(1.5)
    assert status_of(db, nid) == "error"
    assert wait_status(db, nid, ("failed",)) == "failed"


def test_killed_engine_is_taken_over(db, sim, engine_factory, tmp_path):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    sim.set_evacuate_delay(3.0)
    vms = [sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"}) for _ in range(4)]
    h1 = add_host(db, add_segment(db), "compute-1")
    conf_file = tmp_path / "engine.conf"
    write_engine_conf(conf_file, sim, str(db.engine.url), host_failure_recovery_threads=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
        deadline = time.monotonic() + 30
        while not any(v.status == "ongoing" for v in vmoves(db, nid)):
            assert time.monotonic() < deadline, "the first engine never started evacuating"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert status_of(db, nid) == "running"

    engine_factory(make_conf(sim, wait_period_after_evacuation=30), sweep_interval=0.5)
    assert wait_status(db, nid, timeout=60) == "finished"
    assert {sim.server(vm)["OS-EXT-SRV-ATTR:host"] for vm in vms} == {"compute-2"}
    # Nova refuses (409) an evacuation while the previous one rebuilds: finishing proves the
    # second engine waited for the first engine's evacuations instead of repeating them.
    assert {v.instance_uuid for v in vmoves(db, nid) if v.status == "succeeded"} == set(vms)
    assert sim.evacuations_accepted == dict.fromkeys(vms, 1)
    # The takeover is attempt 2; a loaded machine may add more (a renewal too late for the
    # short test lease), each settling what the one before left: Nova's count above says so.
    assert {1, 2} <= {a for a, *_ in details(db, nid)}
    # the first engine's Nova locks were lifted by the second, and nothing is left recorded
    assert [vm for vm in vms if sim.server(vm)["locked"]] == []
    with db.reader() as session:
        assert session.scalars(sa.select(InstanceLock)).all() == []


def test_unknown_task_stops_the_engine_at_start(tmp_path, sim, db, capsys):
    from masakari.cmd import engine as engine_cmd

    conf_file = tmp_path / "engine.conf"
    write_engine_conf(conf_file, sim, str(db.engine.url))
    text = conf_file.read_text() + (
        "[taskflow_driver_recovery_flows]\n"
        "process_failure_recovery_tasks = pre:['no_such_task'],main:[],post:[]\n"
    )
    conf_file.write_text(text)
    assert engine_cmd.main(["--config-file", str(conf_file)]) == 1
    assert "no_such_task" in capsys.readouterr().err


def test_engine_without_nova_credentials_starts_and_fails_recoveries(tmp_path, sim, db):
    """As the reference's engine, it starts; each recovery needing Nova ends in error."""
    sim.add_service("compute-1")
    host = add_host(db, add_segment(db), "compute-1")
    conf_file = tmp_path / "engine.conf"
    write_engine_conf(conf_file, sim, str(db.engine.url))
    text = conf_file.read_text().replace(f"os_privileged_user_auth_url = {sim.auth_url}\n", "")
    assert "os_privileged_user_auth_url" not in text
    conf_file.write_text(text)
    engine = subprocess.Popen(
        [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        nid = notify(
            db, host, "VM", {**LIFECYCLE, "instance_uuid": sim.add_server(host="compute-1")}
        )
        try:
            reached = wait_status(db, nid, ("error",))
        except AssertionError as exc:
            reached = str(exc)
        alive = engine.poll() is None
    finally:
        engine.terminate()
        output = engine.communicate(timeout=30)[0].decode()
    assert alive, output
    assert reached == "error", output
    assert "Nova is not configured" in output and "os_privileged_user_auth_url" in output
    assert sim.nova_calls() == []

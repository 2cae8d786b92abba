"""fence_kdump drills on PostgreSQL and MariaDB: forged, stale and flooded crash messages, and
an entry that wants two, sent as UDP datagrams to the real listener of an engine that fences
through fake IPMI BMCs before the Nova simulator sees any evacuation.

The crashed host's kdump kernel is Debian's ``fence_kdump_send`` (it sends from 127.0.0.1 on
loopback); a forger or a flood is the tests' own sender, from any 127.0.0.x, the flood in a
process of its own. Asserted on the database (fence attempts, kdump rows, the
notification's status and hold), the BMCs and Nova's recorded calls; never on logs.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db.database import Database
from masakari.db.models import FenceAttempt, KdumpMessage
from tests.fakes.kdump_sender import FENCE_KDUMP_SEND, fence_kdump_send, flood_process, send_kdump
from tests.fakes.nova import NovaSimulator
from tests.support.engine import HOST_DOWN, add_segment, notify, wait_for, wait_status
from tests.support.fencing import require_file
from tests.support.fencing_drills import (
    assert_evacuated_once,
    attempts,
    evacuations,
    failed_host,
    fencing_file,
    held,
    ipmi,
    sent,
)

# The real host's kdump kernel: fence_kdump_send on loopback sends from here.
REAL = "127.0.0.1"


@pytest.fixture
def sender(request: pytest.FixtureRequest) -> str:
    return require_file(request, FENCE_KDUMP_SEND, "fence-agents")


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(engines: Any, config: str, **overrides: Any) -> Any:
    listen = {"fencing.kdump_listen": f"127.0.0.1:{free_udp_port()}"}
    return engines("engine-a", config, **{**listen, **overrides})


def kdump_rows(db: Database) -> dict[str, int]:
    """Stored kdump messages, by source address."""
    with db.reader() as s:
        found = s.execute(
            sa.select(KdumpMessage.source_address, sa.func.count()).group_by(
                KdumpMessage.source_address
            )
        )
        return {address: count for address, count in found}


def kdump_message(db: Database, nid: str) -> str:
    with db.reader() as s:
        return s.scalars(
            sa.select(FenceAttempt.message).where(
                FenceAttempt.notification_uuid == nid, FenceAttempt.action == "kdump"
            )
        ).one()


def test_a_message_forged_before_the_report_proves_nothing(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path
) -> None:
    bmc = bmcs()
    sim.tie_power("compute-1", bmc)  # the host runs: its heartbeat follows its power
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1")
    sim.add_service("compute-2")
    kdump_entry = {"driver": "kdump", "address": "127.0.0.7", "wait": 2}
    config = fencing_file(tmp_path, {"compute-1": [kdump_entry, ipmi(bmc)]})
    engine = listening(engines, config)

    # An attacker on the management network forges the host's source address ahead of a
    # report (theirs, or a heartbeat they cut): the listener keeps it, it is the host's.
    send_kdump(engine.kdump.port, source="127.0.0.7")
    wait_for(lambda: kdump_rows(server_db) == {"127.0.0.7": 1}, 10, "the forged message stored")
    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(server_db, nid) == "finished"

    # Not a proof: the host was powered off (and read off) before anything was evacuated.
    assert attempts(server_db, nid) == [
        (0, "kdump", "no message"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]
    assert "off" in sent(bmc) and bmc.power == "off"
    assert "0 of 1 crash message(s) from 127.0.0.7 after " in kdump_message(server_db, nid)
    assert_evacuated_once(sim, servers, "compute-1")


def test_messages_older_than_the_report_or_the_last_heartbeat_prove_nothing(
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,
    engines: Any,
    tmp_path: Path,
    sender: str,
) -> None:
    stuck = bmcs(stuck=True)  # accepts the off, reads On: the fence goes on to kdump
    segment = add_segment(server_db)
    host, _ = failed_host(server_db, sim, segment, "compute-1")
    sim.add_service("compute-2")
    config = fencing_file(
        tmp_path, {"compute-1": [ipmi(stuck), {"driver": "kdump", "address": REAL}]}
    )
    engine = listening(engines, config, **{"fencing.confirm_timeout": 5})
    # An earlier crash: its kdump kernel's message came, the host rebooted, then it failed
    # again (no crash this time) and was reported.
    fence_kdump_send(engine.kdump.port, count=1, path=sender)
    wait_for(lambda: kdump_rows(server_db) == {REAL: 1}, 10, "the earlier crash's message")
    time.sleep(1)  # the reboot (the listener keeps one message per address per 0.5 s)
    sim.power_off("compute-1")

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    wait_for(lambda: "off" in sent(stuck), 10, "the power off sent, not yet read off")
    # A crash message after the report, then the host heartbeats again: it was running
    # after that message (an earlier crash's, replayed, or forged), which proves nothing.
    fence_kdump_send(engine.kdump.port, count=1, path=sender)
    wait_for(lambda: kdump_rows(server_db) == {REAL: 2}, 10, "the message stored")
    sim.stale("compute-1", 0)  # its last heartbeat: now
    reason = wait_for(lambda: held(server_db, nid), 30, "held: nothing proved it dead")

    assert attempts(server_db, nid) == [
        (0, "off", "done"),
        (0, "status", "timeout"),
        (1, "kdump", "no message"),
    ]
    assert "after the host's last heartbeat in Nova" in kdump_message(server_db, nid)
    assert reason.startswith("power fencing failed: ")
    assert evacuations(sim) == []


def test_a_flood_neither_hides_the_real_message_nor_fills_the_database(
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,
    engines: Any,
    tmp_path: Path,
    sender: str,
) -> None:
    bmc = bmcs()
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1")
    failed_host(server_db, sim, segment, "compute-2")
    sim.add_service("compute-3")
    config = fencing_file(
        tmp_path,
        {
            "compute-1": [{"driver": "kdump", "address": REAL, "wait": 10}, ipmi(bmc)],
            # Another host's kdump address: one the listener keeps, flooded by the attacker.
            "compute-2": [{"driver": "kdump", "address": "127.0.0.2", "wait": 10}],
        },
    )
    engine = listening(engines, config)
    sim.power_off("compute-1")

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    # 200 unconfigured addresses and the configured 127.0.0.2, 40 rounds 50 ms apart:
    # 8,040 datagrams over 2 s, while the crashed host sends its three, a second apart.
    others = [f"127.0.1.{i}" for i in range(1, 201)]
    flooding = flood_process(engine.kdump.port, [*others, "127.0.0.2"], rounds=40, pause=0.05)
    fence_kdump_send(engine.kdump.port, count=3, interval=1, path=sender)
    out, _ = flooding.communicate(timeout=60)
    assert int(out) == 8_040
    assert wait_status(server_db, nid) == "finished"

    assert attempts(server_db, nid) == [(0, "kdump", "crashed")]
    assert sent(bmc) == []  # the real message proved the crash
    assert_evacuated_once(sim, servers, "compute-1")
    stored = kdump_rows(server_db)
    # The real host's messages, a second apart, all kept; the allowed flood at most two rows
    # a second (40 rounds over about 2 s); the others none.
    assert stored[REAL] == 3
    assert 1 <= stored["127.0.0.2"] <= 7
    assert set(stored) == {REAL, "127.0.0.2"}
    assert engine.kdump.unknown == 8_000  # every unconfigured datagram read, and dropped


def test_an_entry_that_wants_two_messages_is_not_proven_by_one(
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,
    engines: Any,
    tmp_path: Path,
    sender: str,
) -> None:
    first_bmc, second_bmc = bmcs(), bmcs()
    segment = add_segment(server_db)
    # First: Nova's scheduler (the simulator's) takes the first usable host, and compute-2
    # still looks up while compute-1 is recovered.
    sim.add_service("compute-3")
    first, _ = failed_host(server_db, sim, segment, "compute-1")
    second, servers = failed_host(server_db, sim, segment, "compute-2")
    # fence_kdump_send -i 2: two messages count when at least 1 s apart.
    two = {"driver": "kdump", "address": REAL, "messages": 2, "interval": 2, "wait": 4}
    config = fencing_file(
        tmp_path, {"compute-1": [two, ipmi(first_bmc)], "compute-2": [two, ipmi(second_bmc)]}
    )
    engine = listening(engines, config)
    sim.power_off("compute-1")
    sim.power_off("compute-2")

    one = notify(server_db, first, "COMPUTE_HOST", HOST_DOWN)
    fence_kdump_send(engine.kdump.port, count=1, path=sender)
    assert wait_status(server_db, one) == "finished"
    assert attempts(server_db, one) == [
        (0, "kdump", "no message"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]
    assert "1 of 2 crash message(s) from 127.0.0.1 (1 s apart)" in kdump_message(server_db, one)

    both = notify(server_db, second, "COMPUTE_HOST", HOST_DOWN)
    fence_kdump_send(engine.kdump.port, count=2, interval=2, path=sender)
    assert wait_status(server_db, both) == "finished"
    assert attempts(server_db, both) == [(0, "kdump", "crashed")]
    assert sent(second_bmc) == []
    assert_evacuated_once(sim, servers, "compute-2")


def test_a_real_crash_message_is_only_a_hint_when_kdump_is_not_trusted(
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,
    engines: Any,
    tmp_path: Path,
    sender: str,
) -> None:
    dead, bmc = bmcs(dead=True), bmcs()  # the first path to the BMC is cut; the second works
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, "compute-1")
    sim.add_service("compute-2")
    kdump_entry = {"driver": "kdump", "address": REAL, "wait": 10}
    config = fencing_file(tmp_path, {"compute-1": [ipmi(dead), kdump_entry, ipmi(bmc)]})
    engine = listening(engines, config, **{"fencing.kdump_trust": "hint"})
    sim.power_off("compute-1")

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    # While the first BMC does not answer (1.5 s), the crashed host's messages come.
    fence_kdump_send(engine.kdump.port, count=1, path=sender)
    assert wait_status(server_db, nid) == "finished"

    # Recorded, then the second BMC proved it: under kdump_trust = hint no message alone
    # evacuates, and the hint is not waited for.
    assert attempts(server_db, nid) == [
        (0, "off", "unreachable"),
        (1, "kdump", "hint"),
        (2, "off", "done"),
        (2, "status", "off"),
    ]
    assert bmc.power == "off"
    assert kdump_rows(server_db) == {REAL: 1}
    assert_evacuated_once(sim, servers, "compute-1")

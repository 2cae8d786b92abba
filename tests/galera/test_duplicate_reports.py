"""Identical notifications POSTed at once through masakari-api processes on different Galera
nodes: one is accepted, every other one is a duplicate, none is an error.

A row lock taken with SELECT … FOR UPDATE holds on one node only, so two API processes on two
nodes can both find no duplicate and both insert; the per-host guard row makes their
transactions conflict, and the loser is retried until it sees the winner's row.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib

import sqlalchemy as sa

from masakari.db.database import Database
from masakari.ha import hosts, segments
from tests.galera.apiproc import api_process, call

REQUESTS = 24
ROUNDS = 4
PAYLOAD = {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"}


def body(hostname: str, generated_time: str) -> dict:
    return {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": hostname,
            "generated_time": generated_time,
            "payload": PAYLOAD,
        }
    }


def add_hosts(url: str, names: list[str]) -> None:
    db = Database.from_url(url)
    try:
        segment = segments.create(
            db,
            {"name": "s", "recovery_method": "auto", "service_type": "compute", "enabled": False},
        ).uuid
        for name in names:
            hosts.create(
                db, lambda _: None, segment, {"name": name, "type": "C", "control_attributes": ""}
            )
    finally:
        db.dispose()


def conflicts(galera):
    """Transactions the cluster aborted for a conflicting write, summed over the nodes."""
    return sum(
        int(status.get("wsrep_local_cert_failures", 0))
        + int(status.get("wsrep_local_bf_aborts", 0))
        for status in (galera.status(n) for n in range(galera.size))
    )


def test_identical_reports_through_three_nodes_give_one_202(galera, galera_urls, tmp_path):
    names = [f"compute-{r}" for r in range(ROUNDS)]
    add_hosts(galera_urls[0], names)
    conflicts_before = conflicts(galera)
    with contextlib.ExitStack() as stack:
        ports = [
            stack.enter_context(api_process(url, tmp_path / f"api{i}"))
            for i, url in enumerate(galera_urls)
        ]
        outcomes = {}
        with concurrent.futures.ThreadPoolExecutor(REQUESTS) as pool:
            # Each round reports another host, so that its guard row is new: the first
            # writers of a host collide on its insert, later ones on its update.
            for name in names:
                report = body(name, "2026-06-01T10:00:00")
                futures = [
                    pool.submit(call, ports[i % len(ports)], "POST", "/v1/notifications", report)
                    for i in range(REQUESTS)
                ]
                outcomes[name] = [f.result() for f in futures]
    for name, results in outcomes.items():
        statuses = collections.Counter(status for status, _ in results)
        assert statuses == {202: 1, 409: REQUESTS - 1}, (name, results)
        # Refused as duplicates: the replays saw the winner, none ran out of attempts.
        refusals = {answer["conflictingRequest"]["message"] for s, answer in results if s == 409}
        assert refusals == {
            f"Notification received from host {name} of type COMPUTE_HOST is duplicate."
        }
    # The requests did race across nodes: Galera aborted some of them.
    assert conflicts(galera) > conflicts_before
    db = Database.from_url(galera_urls[2])
    try:
        with db.engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT h.name, count(*) FROM notifications n "
                    "JOIN hosts h ON h.uuid = n.source_host_uuid GROUP BY h.name"
                )
            ).all()
    finally:
        db.dispose()
    assert dict(rows) == {name: 1 for name in names}

"""Releasing a held notification twice, one after the other and at the same time.

docs/api.md (1.4: held notifications): a release of a notification that is not held is a
409 conflictingRequest "Notification X is not held."; ``masakari-manage notification
release`` exits 1 with that message. Of two releases at once, through the API and the
command line, exactly one wins and the notification is recovered once. Through the API
(1.4), the command line in its own process, and an engine against the simulator.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.db import backends
from tests.support import storms

# The second failed host of the segment is held.
GUARDS = {"segment_max_failed_hosts": "1"}


def _not_held(nid: str) -> dict[str, Any]:
    return {"conflictingRequest": {"code": 409, "message": f"Notification {nid} is not held."}}


def _manage_release(cloud: storms.Cloud, nid: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "masakari.cmd.manage",
            "--config-file",
            cloud.dep.conf_path,
            "notification",
            "release",
            nid,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _held(cloud: storms.Cloud) -> tuple[str, str]:
    """compute-2's failure, held behind compute-1's: its id and its server."""
    for host in ("compute-1", "compute-2"):
        cloud.dep.sim.power_off(host)
    cloud.report("compute-1")
    held = cloud.report("compute-2")
    assert held["status"] == "held"
    return held["notification_uuid"], cloud.servers["compute-2"]


def _recovered_once(cloud: storms.Cloud, nid: str, server: str) -> None:
    cloud.start_engine()
    assert cloud.wait_final([nid]) == ["finished"]
    assert cloud.evacuated().count(server) == 1
    shown = cloud.show(nid)
    assert shown["hold_reason"] is None


def test_a_released_notification_is_not_released_again(make_cloud: Any) -> None:
    cloud = make_cloud(4, guards=GUARDS)
    nid, server = _held(cloud)
    first = cloud.action(nid, "release")
    assert first.status_int == 200, first.text
    assert first.json["notification"]["status"] == "new"
    again = cloud.action(nid, "release")
    assert (again.status_int, again.json) == (409, _not_held(nid))
    cancel = cloud.action(nid, "cancel")
    assert (cancel.status_int, cancel.json) == (409, _not_held(nid))
    done = _manage_release(cloud, nid)
    assert (done.returncode, done.stderr.strip().splitlines()[-1]) == (
        1,
        f"Notification {nid} is not held.",
    )
    assert cloud.show(nid)["status"] == "new"
    _recovered_once(cloud, nid, server)


@pytest.fixture(params=["postgresql", "mysql"])
def server_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[str, str]]:
    reason = backends.server_reachable(request.param)
    if reason:
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    with backends.temporary_database(request.param, str(tmp_path)) as url:
        yield request.param, url


def _lock_waits(conn: sa.Connection, backend: str) -> int:
    """Releases of this database waiting for the hold's row lock (other tests' are not
    counted).

    On MariaDB, not information_schema.innodb_trx: InnoDB refreshes that table only when it
    was not read for 0.1 s, so a poll every 50 ms kept showing the locker alone while both
    releases waited (seen in SHOW ENGINE INNODB STATUS): the "release that never reached its
    lock wait" of the last stop. The process list is live; an UPDATE of the hold under way
    while the test holds its row is waiting for it.
    """
    if backend == "postgresql":
        query = (
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
    else:
        query = (
            "SELECT count(*) FROM information_schema.processlist "
            "WHERE db = DATABASE() AND command = 'Query' "
            "AND info LIKE 'UPDATE masakari_notification_holds %%'"  # pymysql's format
        )
    return int(conn.exec_driver_sql(query).scalar_one())


def test_two_releases_at_once_one_wins(make_cloud: Any, server_url: tuple[str, str]) -> None:
    backend, url = server_url
    cloud = make_cloud(4, guards=GUARDS, database={"connection": url})
    nid, server = _held(cloud)
    api: list[Any] = []
    cli: list[subprocess.CompletedProcess[str]] = []
    engine = sa.create_engine(url)
    try:
        # The hold's row is locked here, so that both releases are under way before either
        # can write it: each then waits on the lock, and decides only once it is let go.
        watch = engine.execution_options(isolation_level="AUTOCOMMIT")
        with watch.connect() as observer, engine.connect() as locker:
            with locker.begin():
                locker.exec_driver_sql(
                    "SELECT released_at FROM masakari_notification_holds "
                    f"WHERE notification_uuid = '{nid}' FOR UPDATE"
                )
                # The command line first: it takes seconds to start on a busy machine, and
                # the API's request must not wait for it past the server's lock timeout.
                threads = [
                    threading.Thread(target=lambda: cli.append(_manage_release(cloud, nid))),
                    threading.Thread(target=lambda: api.append(cloud.action(nid, "release"))),
                ]
                for waiting, thread in enumerate(threads, start=1):
                    thread.start()
                    deadline = time.monotonic() + 90
                    while _lock_waits(observer, backend) < waiting:
                        assert time.monotonic() < deadline, "a release never waited on the hold"
                        time.sleep(0.05)
            for thread in threads:
                thread.join(timeout=120)
    finally:
        engine.dispose()
    (answer,), (command,) = api, cli
    outcomes = sorted(
        [
            "api won" if answer.status_int == 200 else "api refused",
            "cli won" if command.returncode == 0 else "cli refused",
        ]
    )
    assert outcomes in (["api refused", "cli won"], ["api won", "cli refused"]), (
        answer.text,
        command.stdout,
        command.stderr,
    )
    if answer.status_int == 200:
        assert answer.json["notification"]["status"] == "new"
        assert command.stderr.strip().splitlines()[-1] == f"Notification {nid} is not held."
        assert command.returncode == 1
    else:
        assert (answer.status_int, answer.json) == (409, _not_held(nid))
        assert command.stdout.strip().splitlines()[-1] == f"Notification {nid} released."
    _recovered_once(cloud, nid, server)

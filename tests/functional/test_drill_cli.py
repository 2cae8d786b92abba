"""masakari-manage drill run|show|list: the drill row written for an engine, the report read
back, and the exit codes (1 when refused or when the drill failed)."""

from __future__ import annotations

import datetime
import json
import threading
import time
from pathlib import Path

import pytest

from masakari.cmd import manage
from masakari.db import drills as drills_db
from masakari.db import migration
from masakari.db.database import Database, transaction
from tests.support import rows


@pytest.fixture
def setup(tmp_path: Path) -> tuple[str, Database, str]:
    url = f"sqlite:///{tmp_path}/masakari.db"
    path = tmp_path / "masakari.conf"
    path.write_text(f"[drill]\nenabled = true\n[database]\nconnection = {url}\n")
    db = Database.from_url(url)
    migration.upgrade(db.engine)
    segment = rows.segment(db, name="seg-a")
    rows.host(db, segment, "compute-1")
    return str(path), db, segment


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = manage.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _end(db: Database, drill_uuid: str, status: str, reason: str | None) -> None:
    """What an engine writes at a drill's end (a phase, the outcome)."""
    now = datetime.datetime(2026, 12, 6, 10, 0, 0)

    def write(session):  # type: ignore[no-untyped-def]
        phase = drills_db.begin_phase(session, drill_uuid, 1, "check", now, None)
        result = drills_db.PHASE_FAILED if reason else drills_db.PHASE_OK
        drills_db.end_phase(session, phase, result, now + datetime.timedelta(seconds=1.5), "x")
        drills_db.finish(session, drill_uuid, status, reason, now)

    transaction(db, write)


def test_run_no_wait_then_show_and_list(setup, capsys) -> None:
    conf, db, segment = setup
    code, out, err = run(
        capsys,
        "--config-file",
        conf,
        "drill",
        "run",
        "seg-a",
        "--host",
        "compute-1",
        "--no-wait",
        "--no-fence",
    )
    assert code == 0, err
    drill_uuid = out.split()[1]
    with db.reader() as session:
        row = drills_db.get(session, drill_uuid)
        assert row is not None
        assert (row.status, row.no_fence, row.requested_by) == ("new", True, "cli")
    # One drill of a host at a time.
    code, _, err = run(
        capsys, "--config-file", conf, "drill", "run", segment, "--host", "compute-1"
    )
    assert code == 1 and "a drill of the host is under way" in err
    _end(db, drill_uuid, "succeeded", None)
    code, out, _ = run(
        capsys, "--config-file", conf, "drill", "show", drill_uuid, "--format", "json"
    )
    shown = json.loads(out)["drill"]
    assert shown["status"] == "succeeded" and shown["phases"][0]["seconds"] == 1.5
    page = Path(conf).parent / "drill.html"
    code, out, _ = run(
        capsys, "--config-file", conf, "drill", "show", drill_uuid, "--html", str(page)
    )
    assert code == 0 and "check" in out and "Fire drill" in page.read_text()
    code, out, _ = run(capsys, "--config-file", conf, "drill", "list", "seg-a")
    assert code == 0 and drill_uuid in out and "succeeded" in out


def test_run_waits_and_exits_1_when_the_drill_failed(setup, capsys) -> None:
    conf, db, _ = setup

    def engine() -> None:  # ends the drill as soon as it is written
        while not time.sleep(0.05):
            with db.reader() as session:
                listed = drills_db.list_(session)
            if listed:
                _end(db, listed[0].uuid, "failed", "check: 1 server(s) without the tag")
                return

    threading.Thread(target=engine, daemon=True).start()
    code, out, err = run(
        capsys, "--config-file", conf, "drill", "run", "seg-a", "--host", "compute-1"
    )
    assert code == 1
    assert "failure reason: check: 1 server(s) without the tag" in out
    assert err.strip() == "drill failed: check: 1 server(s) without the tag"


def test_refusals(setup, capsys, tmp_path) -> None:
    conf, _, _ = setup
    code, _, err = run(capsys, "--config-file", conf, "drill", "run", "nope", "--host", "x")
    assert (code, err.strip()) == (1, "No failover segment nope.")
    code, _, err = run(capsys, "--config-file", conf, "drill", "run", "seg-a", "--host", "x")
    assert code == 1 and "could not be found" in err
    off = tmp_path / "off.conf"
    off.write_text(Path(conf).read_text().replace("enabled = true", "enabled = false"))
    code, _, err = run(
        capsys, "--config-file", str(off), "drill", "run", "seg-a", "--host", "compute-1"
    )
    assert code == 1 and "Fire drills are off" in err
    code, _, err = run(capsys, "--config-file", conf, "drill", "show", "nope")
    assert code == 1 and "could not be found" in err

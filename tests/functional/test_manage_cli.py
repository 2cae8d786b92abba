"""masakari-manage and masakari-status as a deployment tool calls them."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys

import pytest
import sqlalchemy as sa

from masakari.cmd import manage, status
from masakari.conf import paths
from masakari.db import migration, models
from masakari.db.database import Database
from tests.support.schema import REFERENCE_DB


@pytest.fixture
def conf_file(tmp_path) -> str:
    path = tmp_path / "masakari.conf"
    path.write_text(
        "[DEFAULT]\n"
        f"state_path = {tmp_path}\n"
        "[database]\n"
        f"connection = sqlite:///{tmp_path}/masakari.db\n"
    )
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = manage.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sync_then_version_prints_head(conf_file: str, capsys) -> None:
    assert run(capsys, "--config-file", conf_file, "db", "sync")[0] == 0
    code, out, _ = run(capsys, "--config-file", conf_file, "db", "version")
    assert code == 0
    assert out.strip() == migration.head()


def test_version_of_an_empty_database_is_none(conf_file: str, capsys) -> None:
    code, out, _ = run(capsys, "--config-file", conf_file, "db", "version")
    assert (code, out.strip()) == (0, "None")


def test_sync_takes_over_a_reference_database(tmp_path, capsys) -> None:
    db_path = tmp_path / "ref.db"
    shutil.copy(REFERENCE_DB, db_path)
    conf = tmp_path / "ref.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{db_path}\n")
    assert run(capsys, "--config-file", str(conf), "db", "sync")[0] == 0
    assert run(capsys, "--config-file", str(conf), "db", "version")[1].strip() == migration.head()
    assert run(capsys, "--config-file", str(conf), "db", "sync", "13adff5efb9a")[0] == 0
    assert run(capsys, "--config-file", str(conf), "db", "version")[1].strip() == "13adff5efb9a"


@pytest.mark.parametrize(
    "revision, message",
    [("7", "sqlalchemy-migrate"), ("deadbeef0000", "deadbeef0000")],
)
def test_sync_refuses_bad_revisions(conf_file: str, capsys, revision: str, message: str) -> None:
    code, _, err = run(capsys, "--config-file", conf_file, "db", "sync", revision)
    assert code == 1
    assert message in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max_rows", "0"], "Must supply value greater than 0 for max_rows."),
        (["--max_rows", "-2"], "max_rows"),
        (["--age_in_days", "-1"], "Must supply a non-negative value for age."),
        (["--age_in_days", "100000"], "Maximal age is count of days since epoch."),
    ],
)
def test_purge_argument_checks(conf_file: str, capsys, args: list[str], message: str) -> None:
    run(capsys, "--config-file", conf_file, "db", "sync")
    code, _, err = run(capsys, "--config-file", conf_file, "db", "purge", *args)
    assert code == 1
    assert message in err


def test_purge_deletes_old_rows(conf_file: str, tmp_path, capsys) -> None:
    run(capsys, "--config-file", conf_file, "db", "sync")
    db = Database.from_url(f"sqlite:///{tmp_path}/masakari.db")
    old = models.utcnow() - datetime.timedelta(days=10)
    with db.writer() as s:
        for i, when in enumerate((old, models.utcnow())):
            s.add(
                models.Notification(
                    notification_uuid=f"n{i}",
                    generated_time=when,
                    type="VM",
                    source_host_uuid="h",
                    status="finished",
                )
            )
    with db.writer() as s:
        s.execute(
            sa.update(models.Notification)
            .where(models.Notification.notification_uuid == "n0")
            .values(updated_at=old)
        )
    code, out, _ = run(capsys, "--config-file", conf_file, "db", "purge", "--age_in_days", "5")
    assert code == 0 and "notifications: 1 row(s) purged" in out
    with db.reader() as s:
        assert list(s.scalars(sa.select(models.Notification.notification_uuid))) == ["n1"]
    db.dispose()


def test_missing_config_file_is_a_usage_error(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "--config-file", str(tmp_path / "nope.conf"), "db", "version")
    assert code == 2 and "nope.conf" in err


def test_no_arguments_prints_usage(capsys) -> None:
    code, out, _ = run(capsys)
    assert code == 2 and "db" in out


def test_upgrade_check_fails_before_sync_and_passes_after(conf_file: str, capsys) -> None:
    assert status.main(["--config-file", conf_file, "upgrade", "check"]) == 2
    assert "masakari-manage db sync" in capsys.readouterr().out
    manage.main(["--config-file", conf_file, "db", "sync"])
    capsys.readouterr()
    assert status.main(["--config-file", conf_file, "upgrade", "check"]) == 0


def test_console_scripts_are_installed() -> None:
    bindir = shutil.which(
        "masakari-manage", path=str(__import__("pathlib").Path(sys.executable).parent)
    )
    assert bindir, "masakari-manage is not installed next to this Python"
    out = subprocess.run([bindir], capture_output=True, text=True)
    assert out.returncode == 2


def test_db_commands_refuse_the_default_database_inside_the_installation(
    capsys, monkeypatch, tmp_path
) -> None:
    # No configuration file anywhere oslo.config looks: the default would be a SQLite file
    # next to the installed package.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    would_be = os.path.join(paths.package_parent(), "masakari.sqlite")
    existed = os.path.exists(would_be)
    for action in (["sync"], ["version"]):
        code, out, err = run(capsys, "db", *action)
        assert code == 1
        assert "No database is configured" in err
        assert f"sqlite:///{would_be}" in err
        assert "--config-file" in err
    assert os.path.exists(would_be) == existed


def test_a_state_path_alone_is_enough(tmp_path, capsys) -> None:
    conf = tmp_path / "masakari.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    assert run(capsys, "--config-file", str(conf), "db", "sync")[0] == 0
    assert (tmp_path / "masakari.sqlite").exists()


def test_notification_release_and_cancel(conf_file: str, capsys) -> None:
    from masakari import conf as masakari_conf
    from masakari.db import holds
    from masakari.ha import hosts as hosts_api
    from masakari.ha import notifications as notifications_api
    from masakari.ha import segments as segments_api

    assert run(capsys, "--config-file", conf_file, "db", "sync")[0] == 0
    db = Database.from_conf(masakari_conf.load(["--config-file", conf_file]))
    try:
        seg = segments_api.create(
            db, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
        ).uuid
        for name in ("compute-1", "compute-2"):
            hosts_api.create(
                db,
                lambda _: None,
                seg,
                {"name": name, "type": "COMPUTE", "control_attributes": "ssh"},
            )
        rules = notifications_api.Rules(hold_unknown=True)
        held = []
        for name in ("compute-1", "compute-2"):
            report = {
                "type": "COMPUTE_HOST",
                "hostname": name,
                "generated_time": "2026-06-01T10:00:00",
                "payload": {"event": "STOPPED", "host_status": "UNKNOWN"},
            }
            row, reason = notifications_api.record(db, report, rules)
            assert reason == holds.REASON_UNKNOWN
            held.append(row.notification_uuid)
    finally:
        db.dispose()

    def shown_status(nid: str) -> str:
        code, out, _ = run(capsys, "--config-file", conf_file, "notification", "show", nid)
        assert code == 0
        (first,) = [line for line in out.splitlines() if line.startswith("notification ")]
        return first.split("  status ")[1]

    # As the API says from 1.4: held, not the row's new.
    assert shown_status(held[0]) == "held"
    code, out, _ = run(capsys, "--config-file", conf_file, "notification", "release", held[0])
    # The last line: oslo.log writes to the same stream.
    assert (code, out.strip().splitlines()[-1]) == (0, f"Notification {held[0]} released.")
    assert shown_status(held[0]) == "new"
    code, _, err = run(capsys, "--config-file", conf_file, "notification", "cancel", held[0])
    assert (code, err.strip().splitlines()[-1]) == (1, f"Notification {held[0]} is not held.")
    code, out, _ = run(capsys, "--config-file", conf_file, "notification", "cancel", held[1])
    assert (code, out.strip().splitlines()[-1]) == (0, f"Notification {held[1]} cancelled.")
    unknown = "00000000-0000-4000-8000-000000000000"
    code, _, err = run(capsys, "--config-file", conf_file, "notification", "release", unknown)
    assert (code, err.strip().splitlines()[-1]) == (1, f"No notification with id {unknown}.")
    db = Database.from_conf(masakari_conf.load(["--config-file", conf_file]))
    try:
        assert notifications_api.get(db, held[1]).status == "ignored"
        assert notifications_api.extras(db, held).hold_reasons == {}
    finally:
        db.dispose()


def test_notification_show_prints_and_draws_the_evidence(conf_file: str, tmp_path, capsys) -> None:
    from masakari import conf as masakari_conf
    from masakari.db import evidence, holds
    from masakari.ha import hosts as hosts_api
    from masakari.ha import notifications as notifications_api
    from masakari.ha import segments as segments_api

    assert run(capsys, "--config-file", conf_file, "db", "sync")[0] == 0
    db = Database.from_conf(masakari_conf.load(["--config-file", conf_file]))
    try:
        seg = segments_api.create(
            db, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
        ).uuid
        hosts_api.create(
            db,
            lambda _: None,
            seg,
            {"name": "compute-1", "type": "COMPUTE", "control_attributes": "ssh"},
        )
        report = {
            "type": "COMPUTE_HOST",
            "hostname": "compute-1",
            "generated_time": "2026-06-01T10:00:00",
            "payload": {
                "event": "STOPPED",
                "host_status": "UNKNOWN",
                "detector": "nova-services",
                "detector_engine": "ctl-1:1:ab",
            },
        }
        seen = evidence.Evidence(
            "nova",
            "engine ctl-1:1:ab",
            True,
            "nova-compute down, heartbeat 41 s old (grace 30 s)",
            datetime.datetime(2026, 6, 1, 10, 0, 0),
            "down",
        )
        rules = notifications_api.Rules(evidence=True)
        row, _ = notifications_api.record(db, report, rules, evidence=[seen])
        nid = row.notification_uuid
        reason = "verdict: monitor: no monitor's report of the failure within 120 s"
        with db.writer() as s:
            evidence.add(
                s,
                nid,
                [
                    evidence.Evidence(
                        "verdict",
                        "rule monitor",
                        False,
                        reason[18:],
                        datetime.datetime(2026, 6, 1, 10, 2),
                    )
                ],
            )
            holds.hold(s, nid, reason)
    finally:
        db.dispose()
    page = tmp_path / "timeline.html"
    code, out, _ = run(
        capsys, "--config-file", conf_file, "notification", "show", nid, "--html", str(page)
    )
    assert code == 0
    assert f"notification {nid}  type COMPUTE_HOST  status held" in out
    assert f"held: {reason}" in out
    lines = out[out.index("evidence:") : out.index("tasks:")].splitlines()
    assert lines[1].split() == ["time", "kind", "source", "says", "detail"]
    columns = [[c.strip() for c in line.strip().split("  ") if c] for line in lines[2:5]]
    assert [c[1:4] for c in columns] == [
        ["report", "detector nova-services", "says failed"],
        ["nova", "engine ctl-1:1:ab", "says failed"],
        ["verdict", "rule monitor", "not confirmed"],
    ]
    assert columns[2][4] == "no monitor's report of the failure within 120 s"
    html = page.read_text()
    assert html.count('class="bar evidence"') == 3
    assert 'data-result="not confirmed"' in html and "<dt>held</dt>" in html
    assert "<dt>status</dt><dd>held</dd>" in html

"""masakari-manage engine list: every engine's last heartbeat, alive or stale."""

from __future__ import annotations

import datetime

import pytest

from masakari.cmd import manage
from masakari.db import engines, migration
from masakari.db.database import Database, transaction


def test_engine_list_shows_alive_and_stale_engines(tmp_path, capsys) -> None:
    conf_file = tmp_path / "masakari.conf"
    conf_file.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/masakari.db\n")
    db = Database.from_url(f"sqlite:///{tmp_path}/masakari.db")
    migration.upgrade(db.engine)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    transaction(db, lambda s: engines.beat(s, "ctl-1:100:aaaa", "ctl-1", now))
    hung = now - datetime.timedelta(minutes=5)
    transaction(db, lambda s: engines.beat(s, "ctl-2:200:bbbb", "ctl-2", hung))
    # A second beat moves the heartbeat on and keeps the start.
    transaction(db, lambda s: engines.beat(s, "ctl-1:100:aaaa", "ctl-1", now))
    db.dispose()

    assert manage.main(["--config-file", str(conf_file), "engine", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "engine",
        "host",
        "started",
        "last",
        "heartbeat",
        "age",
        "(s)",
        "state",
    ]
    first, second = (line.split() for line in lines[1:])
    assert (first[0], first[1], first[-1]) == ("ctl-1:100:aaaa", "ctl-1", "alive")
    assert (second[0], second[1], second[-1]) == ("ctl-2:200:bbbb", "ctl-2", "stale")
    assert 295 <= int(second[-2]) <= 400
    assert len(lines) == 3


def test_beats_forget_engines_silent_for_a_day(tmp_path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path}/masakari.db")
    migration.upgrade(db.engine)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    long_ago = now - engines.FORGET_AFTER - datetime.timedelta(seconds=1)
    transaction(db, lambda s: engines.beat(s, "old", "ctl-1", long_ago))
    transaction(db, lambda s: engines.beat(s, "new", "ctl-1", now))
    with db.reader() as session:
        assert [row.engine for row in engines.latest(session, 10)] == ["new"]
    db.dispose()


@pytest.mark.parametrize("argv", [["engine"], ["engine", "nonsense"]])
def test_engine_needs_an_action(argv: list[str], tmp_path) -> None:
    with pytest.raises(SystemExit) as exc:
        manage.main(argv)
    assert exc.value.code == 2

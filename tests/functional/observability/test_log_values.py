"""A value a monitor chose cannot forge log lines: a newline (or any control character) in a
notification's process_name is logged as an escape, on the line that logs it."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from masakari import logvalues
from tests.support.deployment import (
    Deployment,
    engine,
    report,
    segment_with_host,
    until_settled,
)

FORGED = "2026-12-01 00:00:00.000 1 ERROR masakari.engine [-] forged line"
HOSTILE = f"nova-compute\n{FORGED}\x1b[2J"


@pytest.fixture
def inert_records() -> Iterator[None]:
    """What setup_logging installs, for one test: the process's record factory after it."""
    before = logging.getLogRecordFactory()
    logvalues.install()
    yield
    logging.setLogRecordFactory(before)


@pytest.mark.usefixtures("inert_records")
def test_a_newline_in_process_name_forges_no_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with Deployment({"DEFAULT": {"engine_poll_interval": "0.1"}}) as dep:
        segment_with_host(dep)
        payload = {"event": "STARTED", "process_name": HOSTILE}
        nid = report(dep, type="PROCESS", payload=payload)
        with engine(dep):
            assert until_settled(dep, nid)["status"] == "finished"
    text = caplog.text
    assert "nova-compute\\x0a" + FORGED + "\\x1b[2J" in text
    assert not any(line.startswith(FORGED) for line in text.splitlines())
    assert "\x1b" not in text


def _log_config(path: Path, log_file: Path) -> None:
    """A deployer's logging file ([DEFAULT] log_config_append): masakari's loggers to a file of
    their own with their own format, nothing on the root logger (oslo.log's handlers unused)."""
    path.write_text(
        textwrap.dedent(
            f"""\
            [loggers]
            keys = root, masakari
            [handlers]
            keys = null, file
            [formatters]
            keys = plain
            [logger_root]
            level = WARNING
            handlers = null
            [logger_masakari]
            level = INFO
            handlers = file
            qualname = masakari
            propagate = 0
            [handler_null]
            class = NullHandler
            args = ()
            [handler_file]
            class = FileHandler
            args = ({str(log_file)!r},)
            formatter = plain
            [formatter_plain]
            format = %(asctime)s %(levelname)s %(name)s %(message)s
            """
        )
    )


def test_escaped_under_the_deployers_logging_config(tmp_path: Path) -> None:
    """masakari-engine run with log_config_append: the value is on its line, escaped."""
    log_file = tmp_path / "engine.log"
    _log_config(tmp_path / "logging.conf", log_file)
    extra = tmp_path / "engine.conf"
    options = {"log_config_append": tmp_path / "logging.conf", "engine_poll_interval": 0.1}
    extra.write_text("[DEFAULT]\n" + "".join(f"{k} = {v}\n" for k, v in options.items()))
    hostile = f"nova-compute\r\n{FORGED}\x1b[2J"
    with Deployment() as dep:
        segment_with_host(dep)
        nid = report(dep, type="PROCESS", payload={"event": "STARTED", "process_name": hostile})
        argv = ["--config-file", dep.conf_path, "--config-file", str(extra)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "masakari.cmd.engine", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert until_settled(dep, nid)["status"] == "finished"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log_file.read_text()
    (line,) = [line for line in text.splitlines() if "has been STARTED" in line]
    # The recovery's tag too, though no handler of the root logger (oslo.log's) is used.
    assert f"[notification {nid} engine " in line
    assert "'nova-compute\\x0d\\x0a" + FORGED + "\\x1b[2J' has been STARTED" in line
    assert not any(line.startswith(FORGED) for line in text.splitlines())
    assert "\x1b" not in text and "\r" not in text


@pytest.mark.usefixtures("inert_records")
def test_escaped_on_every_handler_and_logger(tmp_path: Path) -> None:
    """In-process: whatever handler a record reaches, its arguments are escaped."""
    logger = logging.getLogger("masakari.test.logvalues")
    handler = logging.FileHandler(tmp_path / "m.log")
    logger.addHandler(handler)  # not the root logger's: no filter of ours on it
    logger.propagate = False
    try:
        logger.warning("process %s", HOSTILE)
        logger.warning("%(name)s", {"name": HOSTILE})
        logger.warning("%d items", 3)  # plain values are left as they are
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.propagate = True
    lines = (tmp_path / "m.log").read_text().splitlines()
    assert len(lines) == 3 and lines[2] == "3 items"
    assert not any(line.startswith(FORGED) for line in lines)

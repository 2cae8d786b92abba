"""A value a monitor chose cannot forge log lines: a newline (or any control character) in a
notification's process_name is logged as an escape, on the line that logs it."""

from __future__ import annotations

import logging

import pytest
from oslo_config import cfg

from masakari import conf as masakari_conf
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


def test_a_newline_in_process_name_forges_no_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logvalues.install()  # what setup_logging does; caplog's handler is on the root logger
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


def test_setup_logging_filters_every_handler(tmp_path) -> None:
    conf = cfg.ConfigOpts()
    masakari_conf.register_opts(conf)
    conf(["--log-file", str(tmp_path / "m.log")], project="masakari", default_config_files=[])
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        masakari_conf.setup_logging(conf)
        added = [h for h in root.handlers if h not in before]
        assert added
        assert all(any(isinstance(f, logvalues.InertValues) for f in h.filters) for h in added)
        logging.getLogger("masakari.test").warning("process %s", HOSTILE)
        lines = (tmp_path / "m.log").read_text().splitlines()
        assert not any(line.startswith(FORGED) for line in lines)
    finally:
        for handler in root.handlers[:]:
            if handler not in before:
                root.removeHandler(handler)
                handler.close()

"""A value a monitor chose cannot forge log lines: a newline (or any control character) in a
notification's process_name is logged as an escape, on the line that logs it."""

from __future__ import annotations

import datetime
import logging
import time

import pytest
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import logvalues
from masakari.engine.service import EngineService
from tests.functional.api.support import Deployment, host_body, segment_body

FORGED = "2026-12-01 00:00:00.000 1 ERROR masakari.engine [-] forged line"
HOSTILE = f"nova-compute\n{FORGED}\x1b[2J"


def test_a_newline_in_process_name_forges_no_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logvalues.install()  # what setup_logging does; caplog's handler is on the root logger
    with Deployment({"DEFAULT": {"engine_poll_interval": "0.1"}}) as dep:
        seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).status_int == 201
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()
        body = {
            "notification": {
                "type": "PROCESS",
                "hostname": "compute-1",
                "generated_time": now,
                "payload": {"event": "STARTED", "process_name": HOSTILE},
            }
        }
        nid = dep.request("POST", "/v1/notifications", body).json["notification"][
            "notification_uuid"
        ]
        engine = EngineService(dep.conf, dep.db, dep.sim.client(timeout=5))
        engine.start()
        try:
            deadline = time.monotonic() + 30
            while (
                dep.request("GET", f"/v1/notifications/{nid}").json["notification"]["status"]
                != "finished"
            ):
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            engine.stop(grace=2)
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

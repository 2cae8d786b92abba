"""The one switch: etc/masakari/masakari.conf.recommended loads, names only options that
exist, merges into an operator's file without overriding it, and masakari-api and
masakari-engine start with it (tools/run-aio.sh --recommended); tools/demo.sh --recommended
shows a storm held by the guard and released."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest
import requests
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari.cmd import manage
from masakari.conf import recommended
from tests.support.ports import free_port

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = REPO / "etc" / "masakari" / "masakari.conf.recommended"


def test_the_shipped_file_is_what_the_command_prints(capsys) -> None:
    assert manage.main(["config", "recommended"]) == 0
    assert capsys.readouterr().out == SHIPPED.read_text() == recommended.TEXT


def test_every_setting_names_an_option_and_loads_with_its_value() -> None:
    conf = masakari_conf.load(["--config-file", str(SHIPPED)], default_config_files=[])
    settings = recommended.settings()
    assert settings, "no setting"
    for section, options in settings.items():
        group = conf if section == "DEFAULT" else conf[section]
        for option, text in options.items():
            # An option masakari does not register would be silently ignored by oslo.config.
            try:
                value = getattr(group, option)
            except cfg.NoSuchOptError as exc:
                raise AssertionError(f"[{section}] {option} is not an option") from exc
            assert str(value).lower() == text.lower(), (section, option, value)
    # What the recommendation is about: off by default, on here.
    defaults = masakari_conf.for_tests()
    assert defaults.guards.hold_unknown_host_reports is False
    assert conf.guards.hold_unknown_host_reports is True
    assert conf.host_failure.force_down_fenced_host is False  # no fencing yet
    assert defaults.host_failure.retry_only_while_host_down is False
    assert conf.host_failure.retry_only_while_host_down is True


def test_merge_keeps_the_operators_values(tmp_path) -> None:
    path = tmp_path / "masakari.conf"
    mine = "# mine\n[DEFAULT]\ndebug = true\n[guards]\nhold_unknown_host_reports = false\n"
    path.write_text(mine)
    added = recommended.merge(str(path))
    assert "[guards] hold_unknown_host_reports = true" not in added
    assert "[metrics] enabled = true" in added
    assert path.read_text().startswith("# mine\n[DEFAULT]\ndebug = true\n")
    conf = masakari_conf.load(["--config-file", str(path)], default_config_files=[])
    assert conf.debug is True
    assert conf.guards.hold_unknown_host_reports is False  # the operator's, kept
    assert conf.guards.segment_max_failed_hosts_percent == 50
    assert conf.api_max_microversion == "1.10"
    assert recommended.merge(str(path)) == []  # a second merge adds nothing


def test_api_and_engine_start_with_it(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    port, api_metrics, engine_metrics = free_port(), free_port(), free_port()
    # An operator's conf (run-aio.sh's template) with metrics ports of its own.
    (state / "masakari.conf").write_text(
        "[DEFAULT]\nauth_strategy = noauth2\n"
        f"state_path = {state}\nmasakari_api_listen = 127.0.0.1\n"
        f"masakari_api_listen_port = {port}\nmasakari_api_workers = 1\n"
        f"[database]\nconnection = sqlite:///{state}/masakari.db\n"
        f"[metrics]\napi_port = {api_metrics}\nengine_port = {engine_metrics}\n"
    )
    env = {**os.environ, "VENV": sys.prefix, "MASAKARI_STATE_DIR": str(state)}
    proc = subprocess.Popen(
        ["bash", str(REPO / "tools" / "run-aio.sh"), "--recommended"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Recommended settings on"):
                break
        assert any(line.startswith("Masakari API on") for line in lines), lines
        deadline = time.monotonic() + 90
        while True:
            try:
                root = requests.get(f"http://127.0.0.1:{port}/", timeout=2).json()
                engine = requests.get(f"http://127.0.0.1:{engine_metrics}/metrics", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.5)
        assert root["versions"][0]["version"] == "1.10"  # the newest microversion served
        assert "masakari_database_up 1.0" in engine.text
        held = requests.get(
            f"http://127.0.0.1:{port}/v1/notifications?status=held",
            headers={"OpenStack-API-Version": "instance-ha 1.4"},
            timeout=5,
        )
        assert held.json() == {"notifications": []}
        scraped = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert re.search(r"^masakari_queue_depth 0\.0$", scraped.text, re.MULTILINE)
        conf = (state / "masakari.conf").read_text()
        assert f"engine_port = {engine_metrics}\n" in conf
        assert conf.count("engine_port") == 1  # the operator's port, not the recommended one
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()  # unclosed, it is an error under warnings-as-errors


@pytest.mark.timeout(420)
def test_the_demo_shows_a_storm_held_and_released(tmp_path) -> None:
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        ["bash", str(REPO / "tools" / "demo.sh"), "--recommended", "--state-dir", str(tmp_path)]
        + ["--summary", str(summary)],
        env={**os.environ, "VENV": sys.prefix},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(summary.read_text())
    assert outcome["status"] == "finished"
    assert set(outcome["servers"].values()) == {"ACTIVE"}
    # Six hosts: the first failure and two of the storm are within half the segment; the
    # third is held, then released by the operator and recovered.
    assert outcome["storm"] == {
        "held": ["compute-6"],
        "recovered": ["compute-4", "compute-5"],
        "released_status": "finished",
    }
    page = pathlib.Path(outcome["timeline"]).read_text()
    assert page.count('class="bar instance"') == 4
    assert "held (mass failure: segment threshold)" in done.stdout

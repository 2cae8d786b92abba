"""tools/run-aio.sh started again on the state of an earlier run, with another MASAKARI_PORT:
the URL it prints is where the API listens."""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import requests

from tests.support.ports import free_port

REPO = pathlib.Path(__file__).resolve().parents[3]


def test_masakari_port_wins_over_the_port_of_an_existing_conf(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    old_port, port = free_port(), free_port()
    # What an earlier run wrote (tools/run-aio.sh's template), with its port.
    (state / "masakari.conf").write_text(
        "[DEFAULT]\nauth_strategy = noauth2\n"
        f"state_path = {state}\nmasakari_api_listen = 127.0.0.1\n"
        f"masakari_api_listen_port = {old_port}\nmasakari_api_workers = 1\n"
        f"[database]\nconnection = sqlite:///{state}/masakari.db\n"
    )
    env = {
        **os.environ,
        "VENV": sys.prefix,
        "MASAKARI_STATE_DIR": str(state),
        "MASAKARI_PORT": str(port),
    }
    proc = subprocess.Popen(
        ["bash", str(REPO / "tools" / "run-aio.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        banner = next(line for line in proc.stdout if line.startswith("Masakari API on"))
        announced = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
        assert announced and int(announced.group(1)) == port
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = requests.get(f"http://127.0.0.1:{port}/v1/segments", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.3)
        assert resp.json() == {"segments": []}
        assert f"masakari_api_listen_port = {port}\n" in (state / "masakari.conf").read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        if proc.stdout is not None:
            proc.stdout.close()

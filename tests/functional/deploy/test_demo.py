"""tools/demo.sh, run as a newcomer runs it: the recovery it shows must really happen."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]


def test_demo_shows_a_host_recovery_end_to_end(tmp_path) -> None:
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        ["bash", str(REPO / "tools" / "demo.sh"), "--summary", str(summary)],
        env={**os.environ, "VENV": sys.prefix},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(summary.read_text())
    # What the simulator (the demo's Nova) holds at the end, not what was printed.
    assert outcome["status"] == "finished"
    assert set(outcome["hosts"]) == {"vm-1", "vm-2", "vm-3", "vm-4"}
    assert all(host in ("compute-2", "compute-3") for host in outcome["hosts"].values())
    assert set(outcome["servers"].values()) == {"ACTIVE"}
    # The steps and moves are shown as they happen.
    out = done.stdout
    assert "POST /v1/notifications COMPUTE_HOST STOPPED" in out
    assert "DisableComputeServiceTask: Disabled compute service on host: 'compute-1'" in out
    for vm in ("vm-1", "vm-2", "vm-3", "vm-4"):
        assert f"move {vm}: succeeded compute-1 -> compute-" in out
    assert "Every instance runs again" in out
    assert "Stopped masakari-api, masakari-engine and the simulator." in out

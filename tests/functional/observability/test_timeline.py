"""masakari-manage notification show: a real recovery against the Nova simulator, printed
as a timeline and drawn as an HTML page that headless Chromium renders."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from masakari.cmd import manage
from tests.support.deployment import Deployment
from tests.support.recoveries import FAST, recover

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str], str, Path]:
    page = tmp_path_factory.mktemp("timeline") / "timeline.html"
    with Deployment({"DEFAULT": FAST}) as dep:
        nid, servers = recover(dep)
        argv = ["--config-file", dep.conf_path, "notification", "show", nid, "--html", str(page)]
        result = subprocess.run(
            [shutil.which("masakari-manage") or "masakari-manage", *argv],
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    return nid, servers, result.stdout, page


def test_text_lists_every_task_and_instance(shown) -> None:
    nid, servers, out, _ = shown
    assert out.startswith(f"notification {nid}  type COMPUTE_HOST  status error")
    lines = out.splitlines()
    tasks = lines[lines.index("tasks:") + 2 : lines.index("instances:") - 1]
    assert [line.split()[1] for line in tasks] == [
        "DisableComputeServiceTask",
        "PrepareHAEnabledInstancesTask",
        "EvacuateInstancesTask",
    ]
    instances = lines[lines.index("instances:") + 2 :]
    by_uuid = {}
    for line in instances:
        for name, uuid in servers.items():
            if f"{name} ({uuid})" in line:
                by_uuid[uuid] = line.split()
    assert set(by_uuid) == set(servers.values())
    for name, uuid in servers.items():
        fields = by_uuid[uuid]
        assert fields[2] == "compute-1"  # source
        assert fields[4] == ("failed" if name == "db-1" else "succeeded")
        assert fields[-1].endswith("s")  # a duration


def test_unknown_notification_is_an_error(tmp_path, capsys) -> None:
    conf = tmp_path / "masakari.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/m.db\n")
    assert manage.main(["--config-file", str(conf), "db", "sync"]) == 0
    missing = "00000000-0000-4000-8000-000000000000"
    assert manage.main(["--config-file", str(conf), "notification", "show", missing]) == 1
    assert missing in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")
def test_chromium_renders_a_bar_per_instance(shown, tmp_path: Path) -> None:
    _, servers, _, page = shown
    assert CHROMIUM is not None
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    for name, uuid in servers.items():
        assert f'data-id="{uuid}"' in dom
        assert f">{name}</text>" in dom
    assert dom.count('class="bar instance"') == len(servers)
    assert 'data-result="failed"' in dom
    shot = tmp_path / "timeline.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1300,420", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

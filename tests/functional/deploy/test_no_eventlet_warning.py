"""eventlet comes in only through oslo.messaging -> oslo.service (docs/deployment.md); its
deprecation warning must not reach the output of masakari's commands (masakari-api under
gunicorn and uWSGI: test_wsgi_servers.py)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

BIN = pathlib.Path(sys.executable).parent


def _stderr(*argv: str, cwd: pathlib.Path) -> str:
    done = subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_commands_print_no_eventlet_warning(tmp_path) -> None:
    conf = tmp_path / "masakari.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/masakari.db\n")
    outputs = {
        "generator": _stderr("oslo-config-generator", "--namespace", "masakari.conf", cwd=tmp_path),
        "db sync": _stderr(
            "masakari-manage", "--config-file", str(conf), "db", "sync", cwd=tmp_path
        ),
        "status": _stderr(
            "masakari-status", "--config-file", str(conf), "upgrade", "check", cwd=tmp_path
        ),
    }
    for command, stderr in outputs.items():
        assert "eventlet" not in stderr.lower(), command

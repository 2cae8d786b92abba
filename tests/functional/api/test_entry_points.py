"""masakari-api, masakari.wsgi.api:application and a deployer's api-paste.ini."""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import webob

import masakari.api
from masakari.db import migration
from masakari.db.database import Database
from tests.support.api_process import call
from tests.support.ports import free_port

PASTE_FILE = Path(masakari.api.__file__).parent / "api-paste.ini"


def noauth_conf(tmp_path: Path, **default: Any) -> Path:
    url = f"sqlite:///{tmp_path}/masakari.db"
    db = Database.from_url(url)
    migration.upgrade(db.engine)
    db.dispose()
    wsgi = default.pop("api_paste_config", "")
    lines = ["[DEFAULT]", "auth_strategy = noauth2"]
    lines += [f"{k} = {v}" for k, v in default.items()]
    lines += ["[wsgi]", f"api_paste_config = {wsgi}", "[database]", f"connection = {url}"]
    path = tmp_path / "masakari.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def get(app: Any, path: str) -> webob.Response:
    return webob.Request.blank(path, headers={"X-User-Id": "u", "X-Project-Id": "p"}).get_response(
        app
    )


def test_wsgi_application_reads_the_config_dir(tmp_path: Path, monkeypatch: Any) -> None:
    noauth_conf(tmp_path)
    monkeypatch.setenv("OS_MASAKARI_CONFIG_DIR", str(tmp_path))
    module = importlib.reload(importlib.import_module("masakari.wsgi.api"))
    app = module.application
    assert module.application is app
    assert get(app, "/v1/segments").json == {"segments": []}
    assert get(app, "/").status_int == 200


def test_the_shipped_api_paste_ini_loads(tmp_path: Path) -> None:
    from masakari import conf as masakari_conf
    from masakari.api import app as api_app

    path = noauth_conf(tmp_path, api_paste_config=PASTE_FILE)
    conf = masakari_conf.load(["--config-file", str(path)])
    app = api_app.build(conf)
    assert get(app, "/v1/segments").json == {"segments": []}
    assert get(app, "/v1/segments/new").status_int == 405
    assert get(app, "/").json["versions"][0]["version"] == "1.3"
    assert get(app, "/v2").status_int == 300
    assert get(app, "/healthcheck").text == "OK"


@pytest.mark.parametrize("workers", [1, 2])
def test_masakari_api_serves_and_stops_on_sigterm(tmp_path: Path, workers: int) -> None:
    port = free_port()
    conf = noauth_conf(
        tmp_path,
        masakari_api_listen="127.0.0.1",
        masakari_api_listen_port=port,
        masakari_api_workers=workers,
    )
    exe = shutil.which("masakari-api", path=os.path.dirname(sys.executable))
    assert exe
    proc = subprocess.Popen(
        [exe, "--config-file", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(port, "GET", "/v1/segments") == (200, {"segments": []}):
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode == 0, output


def test_the_paste_pipeline_authenticates_with_the_apps_configuration() -> None:
    from tests.support.deployment import ADMIN, MEMBER, Deployment

    with Deployment({"wsgi": {"api_paste_config": str(PASTE_FILE)}}) as d:
        assert d.request("GET", "/v1/segments", headers=ADMIN).json == {"segments": []}
        assert d.request("GET", "/v1/segments", headers=MEMBER).status_int == 403
        assert d.request("GET", "/v1/segments", headers={}).status_int == 401
        assert d.request("GET", "/", headers={}).status_int == 200

"""masakari.conf -> gunicorn settings."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from masakari import conf as masakari_conf
from masakari.server import settings


def _conf(*lines: str, tmp_path: Any) -> Any:
    path = tmp_path / "masakari.conf"
    path.write_text("\n".join(lines) + "\n")
    return masakari_conf.load(["--config-file", str(path)])


def test_defaults(tmp_path: Any) -> None:
    values = settings.gunicorn_settings(_conf("[DEFAULT]", tmp_path=tmp_path))
    assert values["bind"] == ["0.0.0.0:15868"]
    assert values["keepalive"] == 900
    assert values["limit_request_field_size"] == 16384
    assert values["worker_class"] == "gunicorn.workers.gasgi.ASGIWorker"
    assert values["http_parser"] == "fast"
    assert values["forwarded_allow_ips"] == ""
    assert "certfile" not in values
    if os.path.isdir("/dev/shm"):
        assert values["worker_tmp_dir"] == "/dev/shm"


def test_server_options(tmp_path: Any) -> None:
    conf = _conf(
        "[DEFAULT]",
        "masakari_api_listen = ::1",
        "masakari_api_listen_port = 8000",
        "masakari_api_workers = 3",
        "use_ssl = true",
        "[wsgi]",
        "client_socket_timeout = 0",
        "max_header_line = 100",
        "ssl_cert_file = /c",
        "ssl_key_file = /k",
        "ssl_ca_file = /ca",
        "default_pool_size = 5",
        tmp_path=tmp_path,
    )
    values = settings.gunicorn_settings(conf)
    assert values["bind"] == ["[::1]:8000"]
    assert values["workers"] == 3
    assert values["keepalive"] == settings.FOREVER
    assert values["limit_request_field_size"] == 100
    assert (values["certfile"], values["keyfile"], values["ca_certs"]) == ("/c", "/k", "/ca")
    assert values["cert_reqs"] == 2
    assert settings.thread_count(conf) == settings.MIN_THREADS


def test_keep_alive_off_closes_every_connection(tmp_path: Any) -> None:
    conf = _conf("[wsgi]", "keep_alive = false", tmp_path=tmp_path)
    assert settings.gunicorn_settings(conf)["keepalive"] == 0


def test_negative_workers_refused(tmp_path: Any) -> None:
    conf = _conf("[DEFAULT]", "masakari_api_workers = -1", tmp_path=tmp_path)
    with pytest.raises(ValueError):
        settings.worker_count(conf)


def test_pre_request_closes_a_request_without_host() -> None:
    without = SimpleNamespace(version=(1, 1), headers=[("ACCEPT", "*/*")], must_close=False)
    settings.pre_request(None, without)
    assert without.must_close
    with_host = SimpleNamespace(version=(1, 1), headers=[("HOST", "x")], must_close=False)
    settings.pre_request(None, with_host)
    assert not with_host.must_close

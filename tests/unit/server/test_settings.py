"""masakari.conf -> gunicorn settings."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from masakari import conf as masakari_conf
from masakari.server import settings


def test_defaults() -> None:
    values = settings.gunicorn_settings(masakari_conf.for_tests())
    assert values["bind"] == ["0.0.0.0:15868"]
    assert values["keepalive"] == 900
    assert values["limit_request_field_size"] == 16384
    worker = "gunicorn.workers.gasgi.ASGIWorker" if settings.strict_http() else "masakari"
    assert values["worker_class"].startswith(worker)
    assert values["http_parser"] == "fast"
    assert values["forwarded_allow_ips"] == ""
    assert "certfile" not in values
    if os.path.isdir("/dev/shm"):
        assert values["worker_tmp_dir"] == "/dev/shm"


@pytest.mark.parametrize(
    ("version", "worker"),
    [
        ("27.0.1", "gunicorn.workers.gasgi.ASGIWorker"),
        ("28.1.0", "gunicorn.workers.gasgi.ASGIWorker"),
        ("26.0.0", "masakari.server.worker.Worker"),
        ("25.2.0", "masakari.server.worker.Worker"),
    ],
)
def test_older_gunicorn_runs_the_worker_that_answers_parse_errors(
    monkeypatch: pytest.MonkeyPatch, version: str, worker: str
) -> None:
    monkeypatch.setattr(settings.gunicorn, "__version__", version)
    assert settings.gunicorn_settings(masakari_conf.for_tests())["worker_class"] == worker


def test_server_options() -> None:
    conf = masakari_conf.for_tests(
        **{
            "masakari_api_listen": "::1",
            "masakari_api_listen_port": 8000,
            "masakari_api_workers": 3,
            "use_ssl": True,
            "wsgi.client_socket_timeout": 0,
            "wsgi.max_header_line": 100,
            "wsgi.ssl_cert_file": "/c",
            "wsgi.ssl_key_file": "/k",
            "wsgi.ssl_ca_file": "/ca",
            "wsgi.default_pool_size": 5,
        }
    )
    values = settings.gunicorn_settings(conf)
    assert values["bind"] == ["[::1]:8000"]
    assert values["workers"] == 3
    assert values["keepalive"] == settings.FOREVER
    assert values["limit_request_field_size"] == 100
    assert (values["certfile"], values["keyfile"], values["ca_certs"]) == ("/c", "/k", "/ca")
    assert values["cert_reqs"] == 2
    assert settings.thread_count(conf) == settings.MIN_THREADS


def test_keep_alive_off_closes_every_connection() -> None:
    conf = masakari_conf.for_tests(**{"wsgi.keep_alive": False})
    assert settings.gunicorn_settings(conf)["keepalive"] == 0


def test_negative_workers_refused() -> None:
    conf = masakari_conf.for_tests(masakari_api_workers=-1)
    with pytest.raises(ValueError):
        settings.worker_count(conf)


def test_pre_request_closes_a_request_without_host() -> None:
    without = SimpleNamespace(version=(1, 1), headers=[("ACCEPT", "*/*")], must_close=False)
    settings.pre_request(None, without)
    assert without.must_close
    with_host = SimpleNamespace(version=(1, 1), headers=[("HOST", "x")], must_close=False)
    settings.pre_request(None, with_host)
    assert not with_host.must_close

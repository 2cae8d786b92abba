"""Real Prometheus and Alertmanager (Debian's) send their webhook to masakari-api: an alert
rule fires on an exporter's gauge for one host, Alertmanager posts it with basic
credentials, and masakari records the host's quarantine; the gauge falls back, the alert
resolves, and the quarantine an engine had not started is withdrawn. Asserted on the
database."""

from __future__ import annotations

import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from masakari.db import quarantines as q
from masakari.db.database import Database
from masakari.db.models import Quarantine
from tests.support import rows
from tests.support.api_process import APIProcess
from tests.support.engine import wait_for
from tests.support.fencing import require_file
from tests.support.ports import free_port


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def stack(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    # Skipped without Debian's packages; CI (--require-servers) installs them, and fails.
    prometheus_bin = require_file(request, "/usr/bin/prometheus", "prometheus")
    alertmanager_bin = require_file(
        request, "/usr/bin/prometheus-alertmanager", "prometheus-alertmanager"
    )
    url = f"sqlite:///{tmp_path}/masakari.db"
    api = APIProcess(
        str(tmp_path),
        url,
        workers=1,
        extra=(
            "[quarantine]\nenabled = true\nalertmanager_username = am\n"
            "alertmanager_password = s3cret\n"
        ),
    )
    db = Database.from_url(url)
    seg = rows.segment(db, "auto", name="watched")
    host = rows.host(db, seg, "compute-7")
    registry = CollectorRegistry()
    gauge = Gauge("test_host_degraded", "1 while the host degrades", ["host"], registry=registry)
    gauge.labels("compute-7").set(0)
    exporter_port = free_port()
    server, thread = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    am_port, prom_port = free_port(), free_port()
    (tmp_path / "alertmanager.yml").write_text(
        textwrap.dedent(
            f"""\
            route:
              receiver: masakari
              group_by: [alertname, host]
              group_wait: 1s
              group_interval: 1s
              repeat_interval: 1h
            receivers:
              - name: masakari
                webhook_configs:
                  - url: http://127.0.0.1:{api.port}/alertmanager
                    send_resolved: true
                    http_config:
                      basic_auth: {{username: am, password: s3cret}}
            """
        )
    )
    (tmp_path / "rules.yml").write_text(
        textwrap.dedent(
            """\
            groups:
              - name: hosts
                rules:
                  - alert: HostDegraded
                    expr: test_host_degraded > 0
                    labels: {severity: warning}
                    annotations: {summary: "{{ $labels.host }} is degrading"}
            """
        )
    )
    (tmp_path / "prometheus.yml").write_text(
        textwrap.dedent(
            f"""\
            global: {{scrape_interval: 1s, evaluation_interval: 1s}}
            rule_files: [{tmp_path / "rules.yml"}]
            alerting:
              alertmanagers:
                - static_configs: [{{targets: ["127.0.0.1:{am_port}"]}}]
            scrape_configs:
              - job_name: exporter
                static_configs: [{{targets: ["127.0.0.1:{exporter_port}"]}}]
            """
        )
    )
    alertmanager = _start(
        [
            alertmanager_bin,
            f"--config.file={tmp_path / 'alertmanager.yml'}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address=",
        ],
        tmp_path / "alertmanager.log",
    )
    prometheus = _start(
        [
            prometheus_bin,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'prom-data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        tmp_path / "prometheus.log",
    )
    try:
        yield {"db": db, "gauge": gauge, "host": host, "api": api, "tmp": tmp_path}
    finally:
        for proc in (prometheus, alertmanager):
            proc.terminate()
            proc.wait(10)
        server.shutdown()
        server.server_close()
        thread.join(5)
        api.stop()
        db.dispose()


def _quarantines(db: Database) -> list[Quarantine]:
    with db.reader() as session:
        found = q.list_(session)
        for row in found:
            session.expunge(row)
    return found


def test_an_alert_quarantines_its_host_and_its_resolution_withdraws_it(stack):
    db, gauge = stack["db"], stack["gauge"]
    started = time.monotonic()
    gauge.labels("compute-7").set(1)

    def requested() -> Quarantine | None:
        found = _quarantines(db)
        return found[0] if found else None

    row = wait_for(requested, 60, "Alertmanager's webhook recorded")
    fired = time.monotonic() - started
    assert (row.host_uuid, row.source, row.status) == (stack["host"], "alertmanager", "requested")
    assert row.reason == "HostDegraded: compute-7 is degrading"
    assert row.signal and row.signal.startswith("alertmanager:")
    gauge.labels("compute-7").set(0)
    resolved_from = time.monotonic()
    wait_for(lambda: _quarantines(db)[0].status == "withdrawn", 60, "the resolution")
    (after,) = _quarantines(db)
    assert after.signal_ended_at is not None and after.uuid == row.uuid
    took = time.monotonic() - resolved_from
    stack["tmp"].joinpath("timings.txt").write_text(
        f"fired->recorded {fired:.1f}s resolved->withdrawn {took:.1f}s\n"
    )

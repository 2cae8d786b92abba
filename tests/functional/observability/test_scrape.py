"""The metrics of an API and an engine, scraped before and after a host failure is recovered
against the Nova simulator: each one moved as the recovery says it should."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from masakari import exception
from masakari.metrics import collect, serve
from tests.support.deployment import (
    MEMBER,
    Deployment,
    host_down,
    report,
    segment_with_host,
    until_settled,
)
from tests.support.deployment import engine as engine_running
from tests.support.ports import free_port

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "3",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def scrape_api(dep: Deployment) -> Samples:
    resp = dep.request("GET", "/metrics")
    assert resp.status_int == 200, resp.text
    assert resp.content_type == "text/plain"
    return parse(resp.text)


def scrape_engine(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return parse(resp.read().decode())


def test_metrics_move_with_a_host_recovery(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each scrape below must read the database afresh (collect caches for a few seconds).
    monkeypatch.setattr(collect, "CACHE_SECONDS", 0.0)
    with Deployment({"DEFAULT": FAST, "metrics": {"enabled": "true"}}) as dep:
        host_down(dep)
        dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        segment_with_host(dep)
        port = free_port()
        server, _ = serve.start_listener(dep.conf, port, lambda: dep.db)
        try:
            api_before = scrape_api(dep)
            engine_before = scrape_engine(port)
            assert value(api_before, "masakari_database_up") == 1

            nid = report(dep)
            refused = dep.request("POST", "/v1/notifications", {"notification": {"type": "DISK"}})
            assert refused.status_int == 400
            queued = scrape_api(dep)
            assert delta(api_before, queued, "masakari_queue_depth") == 1
            assert value(queued, "masakari_queue_oldest_new_age_seconds") >= 0
            assert delta(api_before, queued, "masakari_notifications", status="new") == 1

            with engine_running(dep) as engine:
                assert until_settled(dep, nid)["status"] == "finished"
                running = scrape_engine(port)
                assert "masakari_recovery_oldest_running_age_seconds" in {k[0] for k in running}
            api_after = scrape_api(dep)
        finally:
            server.shutdown()
            server.server_close()

        # The API counted both reports, by type and answer.
        received = "masakari_notifications_received_total"
        assert delta(api_before, api_after, received, type="COMPUTE_HOST", code="202") == 1
        assert delta(api_before, api_after, received, type="invalid", code="400") == 1
        # The database gauges: nothing left waiting.
        assert delta(api_before, api_after, "masakari_notifications", status="finished") == 1
        assert value(api_after, "masakari_queue_depth") == 0
        assert value(api_after, "masakari_queue_oldest_new_age_seconds") == 0
        assert value(api_after, "masakari_recovery_oldest_running_age_seconds") == 0
        # The engine: one claim, one finished recovery of method auto, one evacuation.
        assert delta(engine_before, running, "masakari_engine_claims_total") == 1
        assert delta(engine_before, running, "masakari_engine_takeovers_total") == 0
        labels = {"type": "COMPUTE_HOST", "recovery_method": "auto", "status": "finished"}
        durations = "masakari_recovery_duration_seconds_count"
        assert delta(engine_before, running, durations, **labels) == 1
        first = "masakari_recovery_first_evacuation_seconds_count"
        assert delta(engine_before, running, first) == 1
        assert value(running, "masakari_recovery_first_evacuation_seconds_sum") > 0
        assert delta(engine_before, running, "masakari_vmoves_total", status="succeeded") == 1
        evacuations = "masakari_nova_request_duration_seconds_count"
        assert delta(engine_before, running, evacuations, operation="evacuate") == 1
        assert delta(engine_before, running, evacuations, operation="GET /os-services") >= 1
        # The engine said it was alive while it ran, and took its row away when it stopped.
        beats = [k for k in running if k[0] == "masakari_engine_heartbeat_age_seconds"]
        assert [dict(k[1])["engine"] for k in beats] == [engine.owner]
        assert running[beats[0]] < 10
        assert not [k for k in api_after if k[0] == "masakari_engine_heartbeat_age_seconds"]


def test_nova_errors_are_counted_by_operation_and_status() -> None:
    with Deployment() as dep:
        client = dep.sim.client(timeout=5)
        dep.sim.fail(409, method="POST", action="os-stop")
        server = dep.sim.add_server(host="compute-1")
        before = parse(scrape_text())
        with pytest.raises(exception.NovaError):
            client.stop_server(server)
        after = parse(scrape_text())
        errors = "masakari_nova_request_errors_total"
        assert delta(before, after, errors, operation="os-stop", code="409") == 1
        count = "masakari_nova_request_duration_seconds_count"
        assert delta(before, after, count, operation="os-stop") == 1


def scrape_text() -> str:
    """This process's instruments, as an engine's listener shows them."""
    return collect.exposition(collect.scrape_registry(None)).decode()


def test_metrics_policy_and_default_off() -> None:
    with Deployment({"metrics": {"enabled": "true"}}) as dep:
        refused = dep.request("GET", "/metrics", headers=MEMBER)
        assert refused.status_int == 403
        assert refused.json["forbidden"]["code"] == 403
        assert dep.request("POST", "/metrics").status_int == 405
    with Deployment() as dep:
        # Off by default: /metrics is what the reference answers (the version document).
        off = dep.request("GET", "/metrics")
        assert "masakari_" not in off.text

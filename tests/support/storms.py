"""The guards' storms through the API: a deployment of N compute hosts in one segment with one
HA instance each (``Cloud``), host failures reported at microversion 1.4, an engine on the same
database, and what Nova received and the database holds."""

from __future__ import annotations

import datetime
import time
from typing import Any

from masakari.db.models import Host
from masakari.engine.service import EngineService
from tests.support.deployment import Deployment, host_body, segment_body

FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "5",
    "verify_interval": "1",
    "engine_poll_interval": "0.05",
    "notification_delay_max": "0",
    "api_max_microversion": "1.4",
}
FINAL = ("finished", "error", "ignored", "failed")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()


def host_report(host: str, event: str = "STOPPED", status: str = "NORMAL") -> dict[str, Any]:
    return {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": host,
            "generated_time": _now(),
            "payload": {"event": event, "host_status": status, "cluster_status": "OFFLINE"},
        }
    }


class Cloud:
    """A deployment with ``count`` compute hosts in one segment, one HA instance on each."""

    def __init__(self, dep: Deployment, count: int) -> None:
        self.dep = dep
        self.hosts = [f"compute-{i}" for i in range(1, count + 1)]
        for name in self.hosts[4:]:  # the deployment's simulator has compute-1..4
            dep.sim.add_service(name)
        dep.sim.service_down_time = 0
        seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
        self.servers: dict[str, str] = {}
        for name in self.hosts:
            assert (
                dep.request("POST", f"/v1/segments/{seg}/hosts", host_body(name)).status_int == 201
            )
            self.servers[name] = dep.sim.add_server(host=name, metadata={"HA_Enabled": "True"})
        self.engine: EngineService | None = None

    def report(self, host: str, **kwargs: str) -> dict[str, Any]:
        resp = self.dep.request(
            "POST", "/v1/notifications", host_report(host, **kwargs), version="1.4"
        )
        assert resp.status_int == 202, resp.body
        return resp.json["notification"]  # type: ignore[no-any-return]

    def show(self, nid: str, version: str = "1.4") -> dict[str, Any]:
        resp = self.dep.request("GET", f"/v1/notifications/{nid}", version=version)
        return resp.json["notification"]  # type: ignore[no-any-return]

    def action(self, nid: str, verb: str, version: str = "1.4") -> Any:
        return self.dep.request(
            "POST", f"/v1/notifications/{nid}/action", {verb: None}, version=version
        )

    def start_engine(self) -> None:
        # Frequent sweeps: a released notification is found by the next one.
        self.engine = EngineService(
            self.dep.conf, self.dep.db, self.dep.sim.client(timeout=5), sweep_interval=0.5
        )
        self.engine.start()

    def wait_final(self, nids: list[str], timeout: float = 45.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            found = [self.show(nid)["status"] for nid in nids]
            if all(status in FINAL for status in found) or time.monotonic() > deadline:
                return found
            time.sleep(0.1)

    def evacuated(self) -> list[str]:
        """The servers Nova was asked to evacuate, in order (one entry per request)."""
        return [
            call["path"].split("/")[-2]
            for call in self.dep.sim.nova_calls()
            if call["method"] == "POST"
            and isinstance(call["body"], dict)
            and "evacuate" in call["body"]
        ]


def segment_uuid(cloud: Cloud) -> str:
    return str(cloud.dep.request("GET", "/v1/segments").json["segments"][0]["uuid"])


def host_rows(cloud: Cloud) -> dict[str, Host]:
    with cloud.dep.db.reader() as s:
        return {h.name: h for h in s.query(Host).filter_by(deleted=0)}


def messages(cloud: Cloud, nid: str) -> list[str]:
    shown = cloud.dep.request("GET", f"/v1/notifications/{nid}", version="1.1").json
    return [
        d["message"]
        for task in shown["notification"]["recovery_workflow_details"]
        for d in task["progress_details"]
    ]


def nova_paths(cloud: Cloud, method: str = "GET") -> list[str]:
    return [c["path"] for c in cloud.dep.sim.nova_calls() if c["method"] == method]


def with_spare(cloud: Cloud, spare: str = "compute-4") -> None:
    """``spare`` becomes the segment's reserved host, empty and disabled in Nova, as an
    operator keeps one; the segment recovers with reserved_host."""
    sim = cloud.dep.sim
    with sim.lock:
        sim.servers = [s for s in sim.servers if s.host != spare]
        for service in sim.services:
            if service.host == spare:
                service.status, service.disabled_reason = "disabled", "spare"
    seg = segment_uuid(cloud)
    body = {"segment": {"recovery_method": "reserved_host"}}
    assert cloud.dep.request("PUT", f"/v1/segments/{seg}", body).status_int == 200
    uuid = host_rows(cloud)[spare].uuid
    body = {"host": {"reserved": True}}
    assert cloud.dep.request("PUT", f"/v1/segments/{seg}/hosts/{uuid}", body).status_int == 200

"""A whole API deployment in-process: Nova simulator with Keystone, SQLite, masakari.conf; and
a failure reported through it and recovered by an engine::

    with Deployment({"DEFAULT": {"engine_poll_interval": "0.1"}}) as dep:
        host_down(dep, "compute-1")             # Nova sees it down at once
        seg = segment_with_host(dep, "compute-1")
        nid = report(dep)                       # a monitor's host failure, 202
        engine = settle(dep, nid)               # an engine ran until it ended; stopped

and rows made through it (``Objects``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import webob
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari.api import app as api_app
from masakari.db import migration
from masakari.db.database import Database
from masakari.db.models import VMove
from masakari.engine.service import EngineService
from tests.fakes import nova as fake_nova
from tests.fakes.nova import NovaSimulator

ADMIN = {"X-Auth-Token": fake_nova.ADMIN_TOKEN}
MEMBER = {"X-Auth-Token": fake_nova.MEMBER_TOKEN}
COMPUTE_HOSTS = ("compute-1", "compute-2", "compute-3", "compute-4")


def write_conf(path: str, sections: Mapping[str, Mapping[str, Any]]) -> None:
    with open(path, "w") as fh:
        for section, options in sections.items():
            fh.write(f"[{section}]\n")
            for key, value in options.items():
                fh.write(f"{key} = {value}\n")
            fh.write("\n")


class Deployment:
    """The API as masakari-api builds it from a masakari.conf, Keystone auth included.

    ``extra`` adds or overrides options: ``{"DEFAULT": {...}, "oslo_policy": {...}}``.
    """

    def __init__(self, extra: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="masakari-api-test-")
        self.sim = NovaSimulator().start()
        for host in COMPUTE_HOSTS:
            self.sim.add_service(host)
        overrides = self.sim.conf_overrides()
        sections: dict[str, dict[str, Any]] = {
            "DEFAULT": {k: v for k, v in overrides.items() if "." not in k},
            "database": {"connection": f"sqlite:///{self.tmp.name}/masakari.db"},
            "keystone_authtoken": {
                **{k.split(".", 1)[1]: v for k, v in overrides.items() if "." in k},
                **self.sim.authtoken_plugin_options(),
            },
            "wsgi": {"api_paste_config": ""},
        }
        for section, options in (extra or {}).items():
            sections.setdefault(section, {}).update(options)
        self.conf_path = os.path.join(self.tmp.name, "masakari.conf")
        write_conf(self.conf_path, sections)
        self.conf: cfg.ConfigOpts = masakari_conf.load(["--config-file", self.conf_path])
        self.db = Database.from_conf(self.conf)
        migration.upgrade(self.db.engine)
        self.app = api_app.build(self.conf, db=self.db)

    def close(self) -> None:
        self.db.dispose()
        self.sim.stop()
        self.tmp.cleanup()

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        version: str | None = None,
        raw: bytes | None = None,
    ) -> webob.Response:
        hdrs = dict(ADMIN if headers is None else headers)
        if version is not None:
            hdrs["OpenStack-API-Version"] = f"instance-ha {version}"
        req = webob.Request.blank(path, method=method, headers=hdrs)
        if raw is not None:
            req.body = raw
        elif body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = "application/json"
        return req.get_response(self.app)


def segment_body(name: str = "seg-1", **fields: Any) -> dict[str, Any]:
    return {
        "segment": {"name": name, "recovery_method": "auto", "service_type": "compute", **fields}
    }


def host_body(name: str = "compute-1", **fields: Any) -> dict[str, Any]:
    return {"host": {"name": name, "type": "COMPUTE", "control_attributes": "ssh", **fields}}


def notification_body(
    hostname: str = "compute-1", generated_time: str = "2026-01-01T00:00:00", **payload: str
) -> dict[str, Any]:
    return {
        "notification": {
            "type": "PROCESS",
            "hostname": hostname,
            "generated_time": generated_time,
            "payload": payload or {"event": "STOPPED", "process_name": "nova-compute"},
        }
    }


# --- a failure reported and recovered -------------------------------------------------------

# What masakari-monitors' host monitor reports when a host fails.
HOST_DOWN = {"event": "STOPPED", "host_status": "NORMAL"}
SETTLED = ("new", "running")


def host_down(dep: Deployment, host: str = "compute-1") -> None:
    """The host stops heartbeating, and Nova shows its service down at once."""
    dep.sim.power_off(host)
    dep.sim.service_down_time = 0


def segment_with_host(dep: Deployment, host: str = "compute-1", **segment: Any) -> str:
    """A segment created through the API with ``host`` in it: the segment's uuid."""
    seg = dep.request("POST", "/v1/segments", segment_body(**segment)).json["segment"]["uuid"]
    assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body(host)).status_int == 201
    return str(seg)


def report(
    dep: Deployment,
    hostname: str = "compute-1",
    type: str = "COMPUTE_HOST",
    payload: Mapping[str, Any] = HOST_DOWN,
) -> str:
    """A monitor's report, generated now, accepted (202): the notification's uuid."""
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()
    body = {
        "notification": {
            "type": type,
            "hostname": hostname,
            "generated_time": now,
            "payload": dict(payload),
        }
    }
    resp = dep.request("POST", "/v1/notifications", body)
    assert resp.status_int == 202, resp.text
    return str(resp.json["notification"]["notification_uuid"])


@contextlib.contextmanager
def engine(dep: Deployment) -> Iterator[EngineService]:
    """An engine on the deployment's database and Nova, stopped on the way out."""
    service = EngineService(dep.conf, dep.db, dep.sim.client(timeout=5))
    service.start()
    try:
        yield service
    finally:
        service.stop(grace=2)


def until_settled(
    dep: Deployment, nid: str, timeout: float = 30.0, version: str | None = None
) -> dict[str, Any]:
    """GET /v1/notifications/{nid} until it is neither new nor running: its body's
    notification (at API ``version``)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = dep.request("GET", f"/v1/notifications/{nid}", version=version)
        notification: dict[str, Any] = shown.json["notification"]
        if notification["status"] not in SETTLED:
            return notification
        assert time.monotonic() < deadline, f"{nid} still {notification['status']}"
        time.sleep(0.1)


def settle(dep: Deployment, nid: str, timeout: float = 30.0) -> EngineService:
    """Run an engine until the notification has ended: the engine, stopped."""
    with engine(dep) as service:
        until_settled(dep, nid, timeout)
    return service


class Objects:
    """Creates rows through the API as admin, with unique names."""

    def __init__(self, d: Deployment) -> None:
        self.d = d
        self.hosts = iter(range(10_000))

    def segment(self, **fields: Any) -> str:
        name = fields.pop("name", f"seg-{uuid.uuid4().hex[:8]}")
        r = self.d.request("POST", "/v1/segments", segment_body(name, **fields), version="1.2")
        assert r.status_int == 201, r.text
        return str(r.json["segment"]["uuid"])

    def host(self, segment: str, name: str | None = None, **fields: Any) -> str:
        name = name or "compute-1"
        r = self.d.request("POST", f"/v1/segments/{segment}/hosts", host_body(name, **fields))
        assert r.status_int == 201, r.text
        return str(r.json["host"]["uuid"])

    def notification(self, hostname: str, type_: str = "PROCESS", **payload: str) -> str:
        body = notification_body(hostname, **payload)
        body["notification"]["type"] = type_
        body["notification"]["generated_time"] = (
            datetime.datetime(2026, 1, 1) + datetime.timedelta(hours=next(self.hosts))
        ).isoformat()
        r = self.d.request("POST", "/v1/notifications", body)
        assert r.status_int == 202, r.text
        return str(r.json["notification"]["notification_uuid"])

    def vmove(self, notification_uuid: str, **fields: Any) -> str:
        row = VMove(
            uuid=str(uuid.uuid4()),
            notification_uuid=notification_uuid,
            instance_uuid=str(uuid.uuid4()),
            instance_name=fields.pop("instance_name", "vm"),
            source_host="compute-1",
            type="evacuation",
            status=fields.pop("status", "pending"),
            **fields,
        )
        with self.d.db.writer() as session:
            session.add(row)
        return row.uuid

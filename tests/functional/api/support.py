"""A whole API deployment in-process: Nova simulator with Keystone, SQLite, masakari.conf."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import webob
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari.api import app as api_app
from masakari.db import migration
from masakari.db.database import Database
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

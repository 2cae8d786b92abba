"""From nothing to a control plane that boots servers: databases, schemas, Keystone's
catalog and users, cells, an image and flavors. What devstack does, for these four services.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tests.support.openstack import config
from tests.support.openstack.config import PASSWORD, REGION, SERVICE_USERS, Layout

DATABASES = ("keystone", "placement", "glance", "nova_api", "nova", "nova_cell0")
# type, name, URL path after the port: what masakari and the services look up in the catalog.
CATALOG = (
    ("compute", "nova", "nova", "/v2.1"),
    # The same Nova through a TCP proxy a drill runs on that port (tests/support/tcpproxy.py):
    # masakari given nova_catalog_admin_info = compute:nova-drill:publicURL reaches Nova
    # through it, and the drill cuts or delays that path alone.
    ("compute", "nova-drill", "nova-proxy", "/v2.1"),
    ("placement", "placement", "placement", ""),
    ("image", "glance", "glance", ""),
    ("network", "neutron", "neutron", ""),
    ("instance-ha", "masakari", "masakari", "/v1/$(tenant_id)s"),
)
FLAVORS = {"m1.small": (1, 512), "m1.medium": (2, 2048), "m1.large": (4, 4096)}
IMAGE_NAME = "fake-raw"


def write_configs(layout: Layout) -> None:
    for sub in ("logs", "pids", "keystone", "placement", "glance", "nova", "nova/locks"):
        (layout.state / sub).mkdir(parents=True, exist_ok=True)
    for sub in ("images", "staging", "tasks", "locks"):
        (layout.dir("glance") / sub).mkdir(parents=True, exist_ok=True)
    (layout.dir("keystone") / "keystone.conf").write_text(config.keystone(layout))
    (layout.dir("placement") / "placement.conf").write_text(config.placement(layout))
    (layout.dir("glance") / "glance-api.conf").write_text(config.glance(layout))
    shutil.copy(
        layout.venv / "etc" / "glance" / "glance-api-paste.ini",
        layout.dir("glance") / "glance-api-paste.ini",
    )
    (layout.dir("nova") / "nova.conf").write_text(config.nova(layout))
    # nova-api's WSGI entry takes its paste file from the first of its config files.
    shutil.copy(
        layout.venv / "etc" / "nova" / "api-paste.ini", layout.dir("nova") / "api-paste.ini"
    )
    for host in layout.computes:
        layout.dir(host).mkdir(parents=True, exist_ok=True)
        (layout.dir(host) / "compute.conf").write_text(config.compute(layout, host))


def create_databases(layout: Layout, create: bool = True) -> None:
    """Each service's database, empty (an earlier cloud's dropped first); only dropped
    when not ``create``."""
    admin = sa.create_engine(layout.db_url + "/", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            for name in DATABASES:
                database = layout.database(name)
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{database}`"))
                if create:
                    conn.execute(sa.text(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4"))
    finally:
        admin.dispose()


def fresh_vhost(layout: Layout) -> None:
    """A RabbitMQ virtual host of the cloud's own, empty: no RPC message of an earlier run
    reaches this one's services."""
    run(["rabbitmqctl", "-q", "delete_vhost", layout.vhost], check=False)
    run(["rabbitmqctl", "-q", "add_vhost", layout.vhost])
    run(["rabbitmqctl", "-q", "set_permissions", "-p", layout.vhost, "guest", ".*", ".*", ".*"])


def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def sync_schemas(layout: Layout) -> None:
    """Every service's schema, the four chains side by side (each waits on the database)."""
    bin_dir = layout.venv / "bin"
    keystone = ["--config-file", str(layout.dir("keystone") / "keystone.conf")]
    nova = [str(bin_dir / "nova-manage"), "--config-file", str(layout.dir("nova") / "nova.conf")]
    owner = ["--keystone-user", "root", "--keystone-group", "root"]
    url = layout.url("keystone")
    chains = [
        [
            [str(bin_dir / "keystone-manage"), *keystone, "db_sync"],
            [str(bin_dir / "keystone-manage"), *keystone, "fernet_setup", *owner],
            [str(bin_dir / "keystone-manage"), *keystone, "credential_setup", *owner],
            [
                str(bin_dir / "keystone-manage"),
                *keystone,
                "bootstrap",
                "--bootstrap-password",
                PASSWORD,
                "--bootstrap-admin-url",
                url,
                "--bootstrap-public-url",
                url,
                "--bootstrap-internal-url",
                url,
                "--bootstrap-region-id",
                REGION,
            ],
        ],
        [
            [
                str(bin_dir / "placement-manage"),
                "--config-file",
                str(layout.dir("placement") / "placement.conf"),
                "db",
                "sync",
            ]
        ],
        [
            [
                str(bin_dir / "glance-manage"),
                "--config-file",
                str(layout.dir("glance") / "glance-api.conf"),
                "db_sync",
            ]
        ],
        [
            [*nova, "api_db", "sync"],
            [*nova, "cell_v2", "map_cell0", "--database_connection", layout.db("nova_cell0")],
            [*nova, "cell_v2", "create_cell", "--name", "cell1", "--verbose"],
            [*nova, "db", "sync"],
        ],
    ]

    def chain(steps: list[list[str]]) -> None:
        for argv in steps:
            run(argv)

    with concurrent.futures.ThreadPoolExecutor(len(chains)) as pool:
        for future in [pool.submit(chain, steps) for steps in chains]:
            future.result()


IDENTITY = {"service_type": "identity", "interface": "public"}


def _post(admin: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return dict(admin.post(path, json=body, endpoint_filter=IDENTITY).json())


def register(layout: Layout, admin: Any) -> None:
    """The service project, the services' users (admin there) and the catalog.

    ``admin``: a keystoneauth session of the bootstrap admin.
    """
    role = admin.get("/roles?name=admin", endpoint_filter=IDENTITY).json()["roles"][0]["id"]
    project = _post(admin, "/projects", {"project": {"name": "service", "domain_id": "default"}})
    project_id = project["project"]["id"]
    for name in SERVICE_USERS:
        user = _post(
            admin,
            "/users",
            {"user": {"name": name, "password": PASSWORD, "domain_id": "default"}},
        )["user"]["id"]
        admin.put(f"/projects/{project_id}/users/{user}/roles/{role}", endpoint_filter=IDENTITY)
    for entry in CATALOG:
        catalog_entry(layout, admin, *entry)


def catalog_entry(
    layout: Layout, admin: Any, kind: str, name: str, port_of: str, path: str
) -> None:
    """One service and its public, internal and admin endpoints in Keystone's catalog."""
    created = _post(admin, "/services", {"service": {"type": kind, "name": name}})
    url = f"http://127.0.0.1:{layout.port(port_of)}{path}"
    for interface in ("public", "internal", "admin"):
        endpoint = {
            "service_id": created["service"]["id"],
            "interface": interface,
            "url": url,
            "region_id": REGION,
        }
        _post(admin, "/endpoints", {"endpoint": endpoint})


def image_and_flavors(admin: Any) -> dict[str, Any]:
    """A 1 MiB raw image and the flavors; their ids."""
    image_filter = {"service_type": "image", "interface": "public"}
    image = admin.post(
        "/v2/images",
        json={
            "name": IMAGE_NAME,
            "disk_format": "raw",
            "container_format": "bare",
            "visibility": "public",
        },
        endpoint_filter=image_filter,
    ).json()
    admin.put(
        f"/v2/images/{image['id']}/file",
        data=b"\0" * (1 << 20),
        headers={"Content-Type": "application/octet-stream"},
        endpoint_filter=image_filter,
    )
    flavors = {}
    # By name: the catalog's second compute entry, nova-drill, is a drill's proxy.
    compute = {"service_type": "compute", "service_name": "nova", "interface": "public"}
    for name, (vcpus, ram) in FLAVORS.items():
        flavor = admin.post(
            "/flavors",
            json={"flavor": {"name": name, "vcpus": vcpus, "ram": ram, "disk": 0, "id": name}},
            endpoint_filter=compute,
        ).json()["flavor"]
        flavors[name] = flavor["id"]
    return {"image": image["id"], "flavors": flavors}


def wipe_state(state: Path) -> None:
    if state.exists():
        shutil.rmtree(state)

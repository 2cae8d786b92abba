"""The configuration files of the real control plane, from one :class:`Layout`.

Timings follow ../shared/notes/real-openstack-on-loopback.md: Nova counts a compute down 10 s
after its last heartbeat (reported every 2 s), finds new computes every 5 s, and runs one
conductor and one scheduler worker (2 cores).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

REGION = "RegionOne"
PASSWORD = "secret"
# The users services authenticate as, each with the admin role in the service project.
SERVICE_USERS = ("nova", "placement", "glance", "neutron", "masakari")
# Each compute's usable capacity (the fake driver reports 1000 VCPU, 800000 MB, 600000 GB;
# the rest is reserved): small enough that a drill can fill a host, as a real one fills.
VCPUS = 8
MEMORY_MB = 16384
# Few idle database connections per process: the cloud shares the machine's MariaDB (151
# connections by default) with the test suite's own databases.
POOL = "max_pool_size = 2\nmax_overflow = 20"


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where everything of one control plane is: ports, state, databases, broker."""

    state: Path
    venv: Path
    base_port: int = 25000
    computes: tuple[str, ...] = ("compute-1", "compute-2", "compute-3")
    db_url: str = "mysql+pymysql://root@127.0.0.1:3306"
    db_prefix: str = "realos_"
    rabbit_url: str = "rabbit://guest:guest@127.0.0.1:5672/"
    vhost: str = "realos"
    rpc_response_timeout: int = 60

    def port(self, service: str) -> int:
        order = ("keystone", "placement", "glance", "nova", "neutron", "masakari", "nova-proxy")
        return self.base_port + order.index(service)

    def url(self, service: str) -> str:
        suffix = {"keystone": "/v3", "nova": "/v2.1", "nova-proxy": "/v2.1"}.get(service, "")
        return f"http://127.0.0.1:{self.port(service)}{suffix}"

    def database(self, name: str) -> str:
        return f"{self.db_prefix}{name}"

    def db(self, name: str) -> str:
        return f"{self.db_url}/{self.database(name)}?charset=utf8"

    @property
    def transport_url(self) -> str:
        return self.rabbit_url.rstrip("/") + "/" + self.vhost

    def dir(self, service: str) -> Path:
        return self.state / service


def _authtoken(layout: Layout, user: str) -> str:
    return f"""
[keystone_authtoken]
www_authenticate_uri = {layout.url("keystone")}
auth_url = {layout.url("keystone")}
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = {user}
password = {PASSWORD}
region_name = {REGION}
service_token_roles_required = true
"""


def _client(layout: Layout, user: str) -> str:
    """A section body: how a service authenticates to another (nova to placement, ...)."""
    return f"""auth_type = password
auth_url = {layout.url("keystone")}
project_domain_name = Default
user_domain_name = Default
project_name = service
username = {user}
password = {PASSWORD}
region_name = {REGION}
"""


def keystone(layout: Layout) -> str:
    d = layout.dir("keystone")
    return f"""[DEFAULT]
log_file = {layout.state / "logs" / "keystone-app.log"}

[database]
connection = {layout.db("keystone")}
{POOL}

[token]
provider = fernet

[fernet_tokens]
key_repository = {d / "fernet-keys"}

[fernet_receipts]
key_repository = {d / "fernet-keys"}

[credential]
key_repository = {d / "credential-keys"}
"""


def placement(layout: Layout) -> str:
    return f"""[DEFAULT]

[placement_database]
connection = {layout.db("placement")}
{POOL}

[api]
auth_strategy = keystone
{_authtoken(layout, "placement")}"""


def glance(layout: Layout) -> str:
    d = layout.dir("glance")
    return f"""[DEFAULT]
enabled_backends = fs:file

[glance_store]
default_backend = fs

[fs]
filesystem_store_datadir = {d / "images"}

[os_glance_staging_store]
filesystem_store_datadir = {d / "staging"}

[os_glance_tasks_store]
filesystem_store_datadir = {d / "tasks"}

[database]
connection = {layout.db("glance")}
{POOL}

[paste_deploy]
flavor = keystone

[oslo_concurrency]
lock_path = {d / "locks"}
{_authtoken(layout, "glance")}"""


def nova(layout: Layout) -> str:
    d = layout.dir("nova")
    return f"""[DEFAULT]
transport_url = {layout.transport_url}
compute_driver = fake.FakeDriverWithoutFakeNodes
state_path = {d}
my_ip = 127.0.0.1
service_down_time = 10
report_interval = 2
heal_instance_info_cache_interval = -1
rpc_response_timeout = {layout.rpc_response_timeout}
reserved_host_cpus = {1000 - VCPUS}
reserved_host_memory_mb = {800000 - MEMORY_MB}
cpu_allocation_ratio = 1.0
initial_cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
initial_ram_allocation_ratio = 1.0
instance_usage_audit = false

[api]
auth_strategy = keystone

[api_database]
connection = {layout.db("nova_api")}
{POOL}

[database]
connection = {layout.db("nova")}
{POOL}

[conductor]
workers = 1

[scheduler]
workers = 1
discover_hosts_in_cells_interval = 5

[oslo_concurrency]
lock_path = {d / "locks"}

[oslo_messaging_notifications]
driver = noop

[vnc]
enabled = false

[glance]
{_client(layout, "nova")}
[neutron]
{_client(layout, "neutron")}endpoint_override = {layout.url("neutron")}

[placement]
{_client(layout, "placement")}
[cinder]
os_region_name = {REGION}

[service_user]
send_service_user_token = false

[quota]
instances = -1
cores = -1
ram = -1
{_authtoken(layout, "nova")}"""


def compute(layout: Layout, host: str) -> str:
    """The second --config-file of one nova-compute: the host it is and its own state."""
    return f"""[DEFAULT]
host = {host}
state_path = {layout.dir(host)}
log_file = {layout.state / "logs" / f"nova-compute-{host}.log"}
"""
